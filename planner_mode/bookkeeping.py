"""The bookkeeping of one planner turn: what it planned, ran and cost, and the record and result it becomes.

:class:`PlannerTurn` is filled by :class:`~planner_mode.engine.PlannerEngine` step by step; it builds the
:class:`~shared.memory.store.TurnRecord` the store writes and the :class:`~shared.turn.TurnResult` the
caller gets (with the simulated time to the first answer token, for the benchmark's latency profiles).
"""

from __future__ import annotations

from typing import Any

from planner_mode.plan import Answer, OperationOutcome, Plan
from planner_mode.validation import ValidatedPlan
from planner_mode.wire import CallUsage
from shared.memory.context import ConversationContext
from shared.memory.store import MessageIn, TurnRecord
from shared.operations.registry import OperationSpec
from shared.security import Caller, require_caller
from shared.state import turn_state
from shared.turn import ExecutedOperation, FailureKind, TurnResult
from shared.turn_steps import AnswerClock, text_of

__all__ = ["ANSWER_PREFIX", "DIRECT_ANSWER_PREFIX", "PlannerTurn", "rejected"]

ANSWER_PREFIX = '{"respuesta":"'
"""What a model writes before the first character of its answer when ``respuesta`` is the first key, as the
answer schema and the prompt's compact example order it: the prefix of the simulated time to the first answer
token. (The raw reply does not cross the AI client, so a model that writes other keys or reasoning first is
simulated as if it did not.)"""
DIRECT_ANSWER_PREFIX = '{"respuesta_directa":"'
"""The same for a direct answer of call 1: ``respuesta_directa`` is the plan schema's first key and the
prompt's example writes it alone and compact."""


def rejected(
    validated: ValidatedPlan, max_operations: int
) -> tuple[list[ExecutedOperation], list[OperationOutcome]]:
    """The operations of a rejected plan, none executed, each with the reason call 2 will explain."""
    operations = validated.plan.operaciones
    plan_level = [issue.message for issue in validated.issues if issue.index is None]
    if len(operations) > max_operations:
        # Do not flood call 2 with one entry per operation of an oversized plan: one entry says it all.
        return [], [OperationOutcome(funcion="plan", error="; ".join(plan_level))]
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
                funcion=op.funcion, parametros=op.parametros, id=op.id, error=reason, error_kind="invalid"
            )
        )
    outcomes = [
        OperationOutcome(funcion=op.funcion, parametros=op.parametros, error=op.error) for op in executed
    ]
    return executed, outcomes


class PlannerTurn:
    """Mutable bookkeeping of one turn in progress."""

    context: ConversationContext
    """The conversation's bounded context (set by ``_prepare`` before any model call)."""
    catalog: list[OperationSpec]
    """The operations the caller may run (set by ``_prepare``)."""

    def __init__(self, conversation_id: str, question: str, caller: Caller, clock: AnswerClock) -> None:
        self.conversation_id = conversation_id
        self.question = question
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

    @property
    def inputs(self) -> dict[str, Any]:
        """The inputs of the turn's parent run."""
        return {"conversation_id": text_of(self.conversation_id), "question": text_of(self.question)}

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
                MessageIn(role="user", content=self.question, metadata={}),
                MessageIn(role="assistant", content=answer.respuesta, metadata=metadata),
            ],
            memories=list(answer.memoria),
            state=turn_state(self.state, self.operations, answer.estado),
        )

    def result(
        self,
        *,
        answer: str,
        memories: list[str],
        state: dict[str, Any],
        recorded: bool,
        stale_state: bool = False,
    ) -> TurnResult:
        usage = CallUsage.total(self.usages)
        total_ms = self.clock.elapsed_ms()
        return TurnResult(
            mode="planner",
            conversation_id=text_of(self.conversation_id),
            question=text_of(self.question),
            answer=answer,
            plan=self.plan.model_dump(mode="json") if self.plan else None,
            operations=self.operations,
            plan_valid=self.plan_valid,
            memories=memories,
            state=state,
            model_calls=usage.model_calls,
            input_tokens=usage.input_tokens,
            output_tokens=usage.output_tokens,
            cached_input_tokens=usage.cached_input_tokens,
            usage_reported=usage.unreported_calls == 0,
            connection_retries=usage.connection_retries,
            model_ms=usage.model_ms,
            simulated_model_ms=usage.simulated_model_ms,
            first_answer_ms=self.clock.first_answer_ms,
            simulated_first_answer_ms=self._simulated_first_answer_ms(),
            harness_ms=max(0.0, total_ms - usage.model_ms),
            total_ms=total_ms,
            ungrounded_figures=self.ungrounded,
            errors=self.errors,
            failure=self.failure,
            recorded=recorded,
            stale_state=stale_state,
        )

    def _simulated_first_answer_ms(self) -> float | None:
        """When the first answer token would reach a streaming reader under the model's latency profile.

        The simulated time of the calls before the answering one, plus the answering call's time to its first
        token and to the end of what it writes before the answer's text: :data:`ANSWER_PREFIX` for call 2,
        :data:`DIRECT_ANSWER_PREFIX` for a direct answer of call 1 (streamed as written, no call before it).
        ``None`` without a profile or a written answer.
        """
        if not self.answered or not self.usages:
            return None
        *before, answering = self.usages
        direct = self.plan is not None and self.plan.is_direct
        prefix = DIRECT_ANSWER_PREFIX if direct else ANSWER_PREFIX
        earlier = [usage.simulated_model_ms for usage in before]
        total, first_token = answering.simulated_model_ms, answering.simulated_first_token_ms
        per_token = answering.simulated_ms_per_token
        if total is None or first_token is None or per_token is None or None in earlier:
            return None
        # On use: importing ``shared.llm`` loads the offline model.
        from shared.llm.usage import SimulatedCall, first_text_ms

        timing = SimulatedCall(total_ms=total, first_token_ms=first_token, ms_per_output_token=per_token)
        return first_text_ms((ms for ms in earlier if ms is not None), timing, prefix)
