"""What ``astream`` yields while a turn runs: typed events, the same for both modes.

In order: the plan once call 1 is parsed (planner mode only), one event per executed (or refused) operation,
the answer's text in deltas as the model writes it, and last the turn's :class:`~shared.turn.TurnResult`.
Concatenating the deltas gives the answer the model wrote; the final ``TurnResult.answer`` is what the user
should be shown in the end (equal to the deltas on success; a failure message when the turn failed, which
then supersedes any partial text already shown). Nothing is recorded before :class:`TurnDone`.

One planner exception to that order: when call 1 writes a direct answer (``respuesta_directa``) as the first
key of its reply, its text streams as :class:`AnswerDelta` events *before* :class:`PlanReady`, as the model
writes it (small talk and refusals read as fast as in tool calling). Should that reply go on to plan
operations anyway, they run, call 2's answer follows the text already shown, and ``TurnDone``'s
``TurnResult.answer`` (call 2's) is the one to keep.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field

from shared.turn import ExecutedOperation, TurnResult

__all__ = ["AnswerDelta", "OperationDone", "PlanReady", "TurnDone", "TurnEvent"]


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
