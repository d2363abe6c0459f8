"""Per-turn limits of the tool-calling agent."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from shared.bounds import MAX_OPERATIONS_PER_TURN


class ToolCallingLimits(BaseModel):
    """Bounds on one turn of the agent loop, so a looping model cannot run forever.

    LangGraph spends four steps per model call, and two more on the limit check that ends the turn: the
    model-call limit fires first while ``recursion_limit >= 4 * model_calls + 2`` (26 for the default six).
    """

    model_config = ConfigDict(frozen=True)

    model_calls: int = Field(default=6, ge=1, description="Maximum model calls per turn.")
    recursion_limit: int = Field(default=26, ge=2, description="Maximum LangGraph steps per turn.")
    operations: int = Field(
        default=MAX_OPERATIONS_PER_TURN,
        ge=1,
        description="Maximum tool calls per turn, text-recovered ones and repeats included (the planner's "
        "plan cap): a step whose calls would pass it ends the turn as 'limit' before any of them runs.",
    )
