"""Per-turn limits of the tool-calling agent."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class ToolCallingLimits(BaseModel):
    """Bounds on one turn of the agent loop, so a looping model cannot run forever.

    The agent graph spends four steps per model call (limit check, model, count update, tools), and the
    limit check that ends the turn needs two more, so ``model_calls`` fires first only while
    ``recursion_limit >= 4 * model_calls + 2``: the default 26 is the smallest value that lets the default six
    model calls end with the model-call answer. The recursion limit is the backstop for a raised
    ``model_calls`` (LangGraph's own default is 9999).
    """

    model_config = ConfigDict(frozen=True)

    model_calls: int = Field(default=6, ge=1, description="Maximum model calls per turn.")
    recursion_limit: int = Field(default=26, ge=2, description="Maximum LangGraph steps per turn.")
