"""What ``astream`` yields while a turn runs: typed events, the same for both modes.

In order: the plan (planner mode), one event per operation, the answer's text in deltas, and last the
:class:`~shared.turn.TurnResult`, whose ``answer`` supersedes the deltas when the turn failed. A planner's
direct answer streams as :class:`AnswerDelta` events before :class:`PlanReady`.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field

from shared.turn import ExecutedOperation, TurnResult


class PlanReady(BaseModel):
    """Call 1 returned a plan (validated or not: its operations' events say what ran)."""

    type: Literal["plan"] = "plan"
    plan: dict[str, Any]


class OperationDone(BaseModel):
    """The ERP executed (or refused) one operation."""

    type: Literal["operation"] = "operation"
    operation: ExecutedOperation


class AnswerDelta(BaseModel):
    """The next piece of the answer's text, as the model wrote it."""

    type: Literal["answer_delta"] = "answer_delta"
    text: str


class TurnDone(BaseModel):
    """The turn ended (recorded or not); always the last event."""

    type: Literal["turn"] = "turn"
    result: TurnResult


TurnEvent = Annotated[PlanReady | OperationDone | AnswerDelta | TurnDone, Field(discriminator="type")]
"""One event of a streamed turn (a discriminated union on ``type``, e.g. for NDJSON)."""
