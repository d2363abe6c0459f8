"""The bookkeeping of one planner turn: what it planned, ran and cost, and the record and result it becomes.

:class:`PlannerTurn` is filled by :class:`~planner_mode.engine.PlannerEngine` step by step; it builds the
:class:`~shared.memory.store.TurnRecord` the store writes and the :class:`~shared.turn.TurnResult` the
caller gets (with the model call that wrote the first answer text, :class:`~shared.turn.FirstAnswerCall`).
"""

from __future__ import annotations

from typing import Any

from planner_mode.plan import Answer, OperationOutcome, Plan
from planner_mode.validation import ValidatedPlan
from shared.llm.usage import CallUsage
from shared.memory.context import ConversationContext
from shared.memory.records import VersionedState
from shared.memory.store import MessageIn, TurnRecord
from shared.operations.registry import OperationSpec
from shared.security import Caller, require_caller
from shared.state import turn_state
from shared.turn import ExecutedOperation, FailureKind, FirstAnswerCall, TurnResult
from shared.turn_steps import AnswerClock, measured_figures, text_of

__all__ = ["ANSWER_PREFIX", "DIRECT_ANSWER_PREFIX", "PlannerTurn", "rejected"]

ANSWER_PREFIX = '{"respuesta":"'
"""What a model writes before the first character of its answer when ``respuesta`` is the first key, as the
answer schema and the prompt's compact example order it (:attr:`shared.turn.FirstAnswerCall.prefix`). The raw
reply does not cross the AI client, so a model that writes other keys or reasoning first is taken as if it
did not."""
DIRECT_ANSWER_PREFIX = '{"respuesta_directa":"'
"""The same for a direct answer of call 1: ``respuesta_directa`` is the plan schema's first key and the
prompt's example writes it alone and compact."""


def rejected(
    validated: ValidatedPlan, max_operations: int
) -> tuple[list[ExecutedOperation], list[OperationOutcome]]:
    """The operations of a rejected plan, none executed, each with the reason call 2 will explain."""
    operations = validated.plan.operations
    plan_level = [issue.message for issue in validated.issues if issue.index is None]
    if len(operations) > max_operations:
        # Do not flood call 2 with one entry per operation of an oversized plan: one entry says it all.
        return [], [OperationOutcome(function="plan", error="; ".join(plan_level))]
    summary = "; ".join(issue.message for issue in validated.issues)
    executed: list[ExecutedOperation] = []
    for index, op in enumerate(operations):
        own = [issue.message for issue in validated.issues if issue.index == index]
        reason = (
            "; ".join(own + plan_level)
            if own or plan_level
            else f"Not executed: the plan was rejected ({summary})"
        )
        executed.append(
            ExecutedOperation(
                function=op.function, parameters=op.parameters, id=op.id, error=reason, error_kind="invalid"
            )
        )
    outcomes = [
        OperationOutcome(function=op.function, parameters=op.parameters, error=op.error) for op in executed
    ]
    return executed, outcomes


class PlannerTurn:
    """Mutable bookkeeping of one turn in progress."""

    context: ConversationContext
    """The conversation's bounded context (set by ``_prepare`` before any model call)."""
    catalog: list[OperationSpec]
    """The operations the caller may run (set by ``_prepare``)."""

    def __init__(self, conversation_id: str, message: str, caller: Caller, clock: AnswerClock) -> None:
        self.conversation_id = conversation_id
        self.message = message
        self.caller = require_caller(caller)  # before anything reads it (the trace inputs, the access check)
        self.clock = clock
        self.plan: Plan | None = None
        self.plan_valid: bool | None = None
        """Call 1's output parsed and passed validation (``TurnResult.plan_valid``); ``None`` until read."""
        self.runnable: ValidatedPlan | None = None
        """The validated plan to execute; ``None`` for a direct answer or a rejected plan."""
        self.operations: list[ExecutedOperation] = []
        self.outcomes: list[OperationOutcome] = []
        """What call 2 reads: one outcome per operation (results clipped)."""
        self.errors: list[str] = []
        self.usages: list[CallUsage] = []
        """One per model call, in order."""
        self.failure: FailureKind | None = None
        self.state: dict[str, Any] = {}
        """The conversation's state as read for this turn's context (unchanged unless recorded)."""
        self.answered = False
        """A model wrote the answer (whether or not it could be recorded)."""
        self.ungrounded: list[str] = []
        """Figures of the model's answer no ERP source supports (``TurnResult.ungrounded_figures``)."""
        self.claimed_actions: list[str] = []
        """Phrases of the answer claiming actions the ERP did not do (``TurnResult.claimed_actions``)."""

    @property
    def inputs(self) -> dict[str, Any]:
        """The inputs of the turn's parent run."""
        return {"conversation_id": text_of(self.conversation_id), "message": text_of(self.message)}

    def record(self, answer: Answer) -> TurnRecord:
        """The whole turn as the store records it: the question, the answer (metadata ``plan``,
        ``operations``, and ``errors`` and ``failure`` when there are), the memories and the state update."""
        metadata: dict[str, Any] = {
            "plan": self.plan.model_dump(mode="json") if self.plan else None,
            "operations": [op.model_dump(mode="json") for op in self.operations],
        }
        if self.errors:
            metadata["errors"] = list(self.errors)
        if self.failure is not None:
            metadata["failure"] = self.failure
        return TurnRecord(
            messages=[
                MessageIn(role="user", content=self.message, metadata={}),
                MessageIn(role="assistant", content=answer.text, metadata=metadata),
            ],
            memories=list(answer.memories),
            state=turn_state(self.state, self.operations, answer.state),
        )

    def result(
        self, answer: str, *, memories: list[str] | None = None, recorded: VersionedState | None = None
    ) -> TurnResult:
        """The turn's result: recorded when ``recorded`` is the state the store wrote, else unrecorded with
        the state read for the turn."""
        return TurnResult(
            mode="planner",
            conversation_id=text_of(self.conversation_id),
            question=text_of(self.message),
            answer=answer,
            plan=self.plan.model_dump(mode="json") if self.plan else None,
            operations=self.operations,
            plan_valid=self.plan_valid,
            memories=memories or [],
            state=recorded if recorded is not None else self.state,
            **measured_figures(CallUsage.total(self.usages), self.clock, answer),
            first_answer_call=self._first_answer_call(),
            ungrounded_figures=self.ungrounded,
            claimed_actions=self.claimed_actions,
            errors=self.errors,
            failure=self.failure,
            recorded=recorded is not None,
            stale_state=recorded is not None and recorded.stale,
        )

    def _first_answer_call(self) -> FirstAnswerCall | None:
        """The call that wrote the answer: call 1 for a direct answer (its reply starts with
        :data:`DIRECT_ANSWER_PREFIX`), else call 2 (:data:`ANSWER_PREFIX`); ``None`` without a written
        answer."""
        calls = sum(usage.model_calls for usage in self.usages)
        if not self.answered or calls == 0:
            return None
        direct = self.plan is not None and self.plan.is_direct
        return FirstAnswerCall(call=calls - 1, prefix=DIRECT_ANSWER_PREFIX if direct else ANSWER_PREFIX)
