"""The ERP-side planner engine: one turn = at most two model calls (article §4–11).

Flow of :meth:`PlannerEngine.ask`:

1. build the bounded context from the memory store (state, relevant memories, last exchange, today);
2. call 1, ``analyze`` → a :class:`~planner_mode.plan.Plan` (small talk with ``respuesta_directa`` stops
   here: one call);
3. validate the whole plan before executing anything;
4. execute it (independent operations concurrently, dependent ones in order);
5. call 2, ``respond``, with every result and every error (invalid plans included);
6. record the turn atomically: user message, assistant message (metadata ``plan`` and ``operations``),
   memories and the state merge.

Failures never raise out of :meth:`~PlannerEngine.ask`: every turn ends in a :class:`TurnResult` whose
``failure`` is ``None`` or one kind of the contract in :mod:`shared.failures` (``input``, ``storage``,
``provider``, ``timeout``, ``model_output``, ``invalid_plan``, ``operation_error``). **Recording policy** (the
same in both modes): a turn is recorded only when a model wrote its answer (call 2, or call 1's
``respuesta_directa``), including ``invalid_plan`` and ``operation_error`` turns whose answer explains the
refusal. When the input is refused, the store cannot be read, or call 1 or call 2 fails, nothing is written
(not even a new conversation's row), ``TurnResult.recorded`` is ``False``, and the user can simply ask again.
Input and storage are checked before any model call, so they cost none.

Everything the ERP sends is bounded by construction: the context is clipped by the memory store, and each
operation result sent to call 2 is clipped in rows and characters with a visible marker.
"""

from __future__ import annotations

import time
from typing import Any

from pydantic import BaseModel, Field

from planner_mode.ai import PlannerAI
from planner_mode.client import AICallError, AIClient, InProcessAIClient
from planner_mode.executor import execute_plan
from planner_mode.plan import Answer, OperationOutcome, Plan
from planner_mode.state import turn_state
from planner_mode.validation import ValidatedPlan, validate_plan
from planner_mode.wire import CallUsage
from shared.bounds import RESULT_MAX_CHARS, RESULT_MAX_ITEMS, clip_json
from shared.erp.database import Erp
from shared.errors import ConversationAccessDenied, ErpAiError, StorageError
from shared.failures import NOT_RECORDED_NOTE, failure_kind_of, user_message
from shared.inputs import check_turn_input
from shared.memory.store import MemoryStore, MessageIn, TurnRecord
from shared.operations.registry import OperationRegistry
from shared.security import DEMO_CALLER, Caller
from shared.turn import ExecutedOperation, FailureKind, TurnResult

__all__ = ["PlannerEngine", "PlannerLimits"]


class PlannerLimits(BaseModel):
    """Bounds of a planner turn."""

    max_operations: int = Field(
        default=8, ge=1, description="Largest plan accepted; larger plans are rejected."
    )
    max_workers: int = Field(default=4, ge=1, description="Threads running independent operations at once.")
    memory_limit: int = Field(default=5, ge=0, description="Memory items included in the context.")
    exchanges: int = Field(default=1, ge=0, description="Previous exchanges included in the context.")
    result_rows: int = Field(
        default=RESULT_MAX_ITEMS, ge=1, description="Rows of each list in an operation result sent to call 2."
    )
    result_chars: int = Field(
        default=RESULT_MAX_CHARS, ge=200, description="Characters of each operation result sent to call 2."
    )


class PlannerEngine:
    """The article's two-call engine over an ERP, an operation registry and a conversation store.

    ``ai`` is an :class:`~planner_mode.client.AIClient` (in process or HTTP); a bare
    :class:`~planner_mode.ai.PlannerAI` is accepted and wrapped in an ``InProcessAIClient``. The engine keeps
    no per-turn state, so one instance may answer many conversations from many threads at once.
    """

    mode = "planner"

    def __init__(
        self,
        registry: OperationRegistry,
        erp: Erp,
        store: MemoryStore,
        ai: AIClient | PlannerAI,
        limits: PlannerLimits | None = None,
    ) -> None:
        self.registry = registry
        self.erp = erp
        self.store = store
        self.ai: AIClient = InProcessAIClient(ai) if isinstance(ai, PlannerAI) else ai
        self.limits = limits or PlannerLimits()

    def ask(self, conversation_id: str, message: str, caller: Caller = DEMO_CALLER) -> TurnResult:
        """Answer ``message`` in ``conversation_id`` (created for ``caller`` if unknown) with at most two
        model calls, as ``caller``: call 1 sees only the operations the caller may run, and the ERP runs them
        within the caller's data scope.

        Raises:
            ConversationAccessDenied: the conversation belongs to another user. Checked before the context is
                read or a model is called: nothing is paid, nothing is written. The only exception ``ask``
                raises on purpose; every other failure ends in the returned result.
        """
        turn = _Turn(conversation_id=conversation_id, question=message, caller=caller)
        try:
            check_turn_input(conversation_id, message)
            self.store.check_access(conversation_id, caller.user_id)
            # No ensure_conversation() here: record_turn creates an unknown conversation in the turn's own
            # transaction, so a failed first turn leaves nothing behind, and a turn costs one write, not two.
            context = self.store.build_context(
                conversation_id,
                self.erp.today,
                memory_limit=self.limits.memory_limit,
                exchanges=self.limits.exchanges,
            )
        except ConversationAccessDenied:
            raise
        except ErpAiError as exc:  # InputError or StorageError: refused before any model call
            return self._unrecorded(turn, exc)
        turn.state = context.estado

        try:
            analyzed = self.ai.analyze(message, context, self.registry.catalog(caller))
        except AICallError as exc:
            turn.usages.append(exc.usage)
            turn.errors.append(f"Call 1 (plan) failed: {exc}")
            return self._unrecorded(turn, exc.cause)
        turn.usages.append(analyzed.usage)
        plan = turn.plan = analyzed.plan

        if plan.is_direct:
            return self._record(turn, Answer(respuesta=(plan.respuesta_directa or "").strip()))

        outcomes = self._execute(turn, plan)
        try:
            responded = self.ai.respond(message, outcomes, context)
        except AICallError as exc:
            turn.usages.append(exc.usage)
            turn.errors.append(f"Call 2 (answer) failed: {exc}")
            return self._unrecorded(turn, exc.cause)
        turn.usages.append(responded.usage)
        return self._record(turn, responded.answer)

    def _execute(self, turn: _Turn, plan: Plan) -> list[OperationOutcome]:
        """Validate and run the plan; return what call 2 reads (results clipped, errors explained).

        Sets ``turn.failure`` to ``invalid_plan`` when the plan is rejected (nothing runs) and to
        ``operation_error`` when an operation broke inside the ERP.
        """
        validated = validate_plan(
            plan, self.registry, max_operations=self.limits.max_operations, caller=turn.caller
        )
        if not validated.ok:
            turn.failure = "invalid_plan"
            turn.errors.extend(f"Invalid plan: {issue.message}" for issue in validated.issues)
            turn.operations, outcomes = _rejected(validated, self.limits.max_operations)
            return outcomes
        turn.operations = execute_plan(
            validated, self.registry, self.erp, max_workers=self.limits.max_workers, caller=turn.caller
        )
        turn.errors.extend(f"{op.funcion}: {op.error}" for op in turn.operations if op.error)
        if any(op.error_kind == "internal" for op in turn.operations):
            turn.failure = "operation_error"
        return [
            OperationOutcome(
                funcion=op.funcion,
                parametros=op.parametros,
                resultado=clip_json(
                    op.result, max_items=self.limits.result_rows, max_chars=self.limits.result_chars
                ),
                error=op.error,
            )
            for op in turn.operations
        ]

    def _record(self, turn: _Turn, answer: Answer) -> TurnResult:
        metadata: dict[str, Any] = {
            "plan": turn.plan.model_dump(mode="json") if turn.plan else None,
            "operations": [op.model_dump(mode="json") for op in turn.operations],
        }
        if turn.errors:
            metadata["errors"] = list(turn.errors)
        if turn.failure is not None:
            metadata["failure"] = turn.failure
        record = TurnRecord(
            messages=[
                MessageIn(role="user", content=turn.question, metadata={}),
                MessageIn(role="assistant", content=answer.respuesta, metadata=metadata),
            ],
            memories=list(answer.memoria),
            state=turn_state(turn.state, turn.operations, answer.estado),
        )
        try:
            state = self.store.record_turn(turn.conversation_id, record, user_id=turn.caller.user_id)
        except ConversationAccessDenied as exc:  # another user created this id while the model worked
            return self._unrecorded(turn, exc)
        except StorageError as exc:  # the answer is good; only remembering it failed
            turn.failure = "storage"
            turn.errors.append(f"Turn not recorded: {exc}")
            return turn.result(
                answer=f"{answer.respuesta}\n\n{NOT_RECORDED_NOTE}",
                memories=[],
                state=turn.state,
                recorded=False,
            )
        return turn.result(
            answer=answer.respuesta,
            memories=[item.contenido for item in answer.memoria],
            state=state,
            recorded=True,
        )

    def _unrecorded(self, turn: _Turn, error: BaseException) -> TurnResult:
        """A turn that ends without a model-written answer: classified, explained, nothing written."""
        kind = failure_kind_of(error)
        turn.failure = kind
        if kind in ("input", "storage"):
            turn.errors.append(str(error))
        return turn.result(answer=user_message(kind, error), memories=[], state=turn.state, recorded=False)


def _rejected(
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


class _Turn:
    """Mutable bookkeeping of one turn in progress."""

    def __init__(self, *, conversation_id: str, question: str, caller: Caller) -> None:
        self.conversation_id = conversation_id
        self.question = question
        self.caller = caller
        self.started = time.perf_counter()
        self.plan: Plan | None = None
        self.operations: list[ExecutedOperation] = []
        self.errors: list[str] = []
        self.usages: list[CallUsage] = []
        self.failure: FailureKind | None = None
        self.state: dict[str, Any] = {}
        """The conversation's state as read for this turn's context (unchanged unless recorded)."""

    def result(
        self, *, answer: str, memories: list[str], state: dict[str, Any], recorded: bool
    ) -> TurnResult:
        usage = CallUsage.total(self.usages)
        total_ms = (time.perf_counter() - self.started) * 1000
        return TurnResult(
            mode=PlannerEngine.mode,
            conversation_id=_text(self.conversation_id),
            question=_text(self.question),
            answer=answer,
            plan=self.plan.model_dump(mode="json") if self.plan else None,
            operations=self.operations,
            memories=memories,
            state=state,
            model_calls=usage.model_calls,
            input_tokens=usage.input_tokens,
            output_tokens=usage.output_tokens,
            model_ms=usage.model_ms,
            simulated_model_ms=usage.simulated_model_ms,
            harness_ms=max(0.0, total_ms - usage.model_ms),
            total_ms=total_ms,
            errors=self.errors,
            failure=self.failure,
            recorded=recorded,
        )


def _text(value: object) -> str:
    """``value`` if it is text; a refused non-text input (``None``, bytes) is recorded by its ``repr``."""
    return value if isinstance(value, str) else repr(value)
