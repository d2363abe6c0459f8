"""The ERP-side planner engine: one turn = at most two model calls (article §4–11).

One turn: check the input and the caller's access and build the bounded context from the memory store;
call 1 plans (a direct answer stops here: one call); the whole plan is validated before anything runs
(``TurnResult.plan_valid``; ``None`` when call 1 failed in the provider); the plan is executed (independent
operations concurrently); call 2 answers from every result and error; the turn is recorded atomically.

:meth:`PlannerEngine.astream` is the one driver (:mod:`shared.events`); ``aask`` drains it and ``ask`` runs
``aask`` to completion. Each turn opens one parent LangChain run (:mod:`shared.tracing`) and logs once on
``planner_mode``.

Failures never raise out of a turn: ``TurnResult.failure`` is ``None`` or a kind of :mod:`shared.failures`.
A turn is recorded only when a model wrote its answer (``invalid_plan`` and ``operation_error`` turns
included); when the input is refused, the store cannot be read or a call fails, nothing is written and
``recorded`` is ``False``. Recording is the last step, so an abandoned stream records nothing.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncGenerator
from contextlib import aclosing

from langchain_core.runnables import RunnableConfig
from pydantic import BaseModel, Field

from planner_mode.ai import PlannerAI
from planner_mode.bookkeeping import PlannerTurn, rejected
from planner_mode.client import AICallError, AIClient, AnswerReply, InProcessAIClient, PlanReply, closing_iter
from planner_mode.executor import astream_plan
from planner_mode.plan import MAX_PLAN_OPERATIONS, Answer, OperationOutcome
from planner_mode.validation import validate_plan
from shared.answer_check import failed_check_errors, refusal_text, trusted_context, verify_answer
from shared.bounds import RESULT_MAX_CHARS, RESULT_MAX_ITEMS, clip_json
from shared.engine import TurnEngine
from shared.erp.database import Erp
from shared.errors import ConversationAccessDenied, ModelOutputError, StorageError
from shared.events import AnswerDelta, OperationDone, PlanReady, TurnDone, TurnEvent
from shared.failures import NOT_RECORDED_NOTE, failure_kind_of, user_message
from shared.grounding import GroundingPolicy
from shared.memory.context import ConversationContext
from shared.memory.store import MemoryStore
from shared.operations.registry import OperationRegistry
from shared.security import Caller
from shared.tracing import aturn_run
from shared.turn import ExecutedOperation, TurnResult
from shared.turn_steps import AnswerClock, finish_turn, open_turn

__all__ = ["PlannerEngine", "PlannerLimits"]

logger = logging.getLogger("planner_mode")


class PlannerLimits(BaseModel):
    """Bounds of a planner turn."""

    max_operations: int = Field(
        default=MAX_PLAN_OPERATIONS,
        ge=1,
        description="Largest plan accepted; larger plans are rejected (the call-1 schema allows "
        "MAX_PLAN_OPERATIONS whatever this is).",
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


class PlannerEngine(TurnEngine):
    """The article's two-call engine over an ERP, an operation registry and a conversation store.

    ``ai`` is an :class:`~planner_mode.client.AIClient` (in process or HTTP); a bare
    :class:`~planner_mode.ai.PlannerAI` is wrapped in an ``InProcessAIClient``. The engine keeps no per-turn
    state: one instance may serve many conversations from many threads and event loops. Call 1 sees only the
    operations ``caller`` may run, and the ERP runs them within the caller's data scope.

    ``astream`` yields ``PlanReady`` once call 1 is parsed, one ``OperationDone`` per operation as it finishes
    (a rejected plan's too), the answer in ``AnswerDelta`` events as call 2 writes it, and ``TurnDone`` last.
    A direct answer streams as call 1 writes it, before ``PlanReady``, only when it is the reply's first key
    (:class:`~planner_mode.streamed_text.DirectAnswerText`); written later, it arrives as one delta after
    ``PlanReady``. A reply that starts with a direct answer and then lists operations runs them, and call 2's
    answer follows after a blank line; ``TurnDone``'s answer is the one to keep. A failed call ends the turn
    unrecorded, its ``TurnDone`` carrying the failure.
    """

    mode = "planner"

    def __init__(
        self,
        registry: OperationRegistry,
        erp: Erp,
        store: MemoryStore,
        ai: AIClient | PlannerAI,
        limits: PlannerLimits | None = None,
        *,
        grounding: GroundingPolicy = "refuse",
    ) -> None:
        if grounding not in ("refuse", "flag", "off"):
            raise ValueError(f"Unknown grounding policy {grounding!r}; use 'refuse', 'flag' or 'off'.")
        self.grounding: GroundingPolicy = grounding
        self.registry = registry
        self.erp = erp
        self.store = store
        self.ai: AIClient = InProcessAIClient(ai) if isinstance(ai, PlannerAI) else ai
        self.limits = limits or PlannerLimits()

    # -- the turn ------------------------------------------------------------------------------------------

    async def _turn(
        self,
        conversation_id: str,
        message: str,
        caller: Caller,
        config: RunnableConfig | None,
        *,
        reading: bool,
    ) -> AsyncGenerator[TurnEvent, None]:
        turn = PlannerTurn(conversation_id, message, caller, AnswerClock(reading=reading))
        async with aturn_run(config, mode=self.mode, inputs=turn.inputs) as trace:
            result = await asyncio.to_thread(self._prepare, turn)
            if result is None:
                async with aclosing(self._calls(turn, trace.child_config())) as events:
                    async for event in events:
                        if isinstance(event, TurnResult):
                            result = event
                        else:
                            yield event
            assert result is not None, "a turn always ends in a result"
            result = finish_turn(trace, logger, result, turn.caller.user_id)
        yield TurnDone(result=result)

    async def _calls(
        self, turn: PlannerTurn, config: RunnableConfig
    ) -> AsyncGenerator[PlanReady | OperationDone | AnswerDelta | TurnResult, None]:
        """Call 1, the plan's execution and call 2, yielding the turn's events, then its result."""
        analyzed: PlanReply | None = None
        shown = False  # call 1 streamed some of a direct answer (see astream)
        try:
            async for item in closing_iter(
                self.ai.plan(
                    turn.message, turn.context, turn.catalog, config=config, stream=turn.clock.reading
                )
            ):
                if isinstance(item, PlanReply):
                    analyzed = item
                elif item:
                    shown = True
                    yield turn.clock.delta(item)
            if analyzed is None:
                raise AICallError(ModelOutputError("The plan stream ended without a plan."))
        except AICallError as exc:
            yield self._call_failed(turn, exc)
            return
        direct = self._planned(turn, analyzed)
        yield PlanReady(plan=analyzed.plan.model_dump(mode="json"))
        if direct is not None:
            if not shown:  # written after other keys: not streamed, shown whole now
                yield turn.clock.delta(direct.text)
            yield await asyncio.to_thread(self._record, turn, direct)
            return
        if turn.runnable is not None:
            finished: list[tuple[int, ExecutedOperation]] = []
            outcomes = astream_plan(
                turn.runnable,
                self.registry,
                self.erp,
                caller=turn.caller,
                max_workers=self.limits.max_workers,
            )
            async with aclosing(outcomes):
                async for index, outcome in outcomes:
                    finished.append((index, outcome))
                    yield OperationDone(operation=outcome)
            self._executed(turn, [outcome for _index, outcome in sorted(finished, key=lambda item: item[0])])
        else:  # a rejected plan: its operations, none run, each with its reason
            for operation in turn.operations:
                yield OperationDone(operation=operation)
        responded: AnswerReply | None = None
        try:
            separator = "\n\n" if shown else ""  # after a direct answer that turned out a preamble
            async for written in closing_iter(
                self.ai.answer(
                    turn.message,
                    turn.outcomes,
                    turn.context,
                    turn.catalog,
                    config=config,
                    stream=turn.clock.reading,
                )
            ):
                if isinstance(written, AnswerReply):
                    responded = written
                elif written:
                    yield turn.clock.delta(separator + written)
                    separator = ""
            if responded is None:
                raise AICallError(ModelOutputError("The answer stream ended without an answer."))
        except AICallError as exc:
            yield self._call_failed(turn, exc)
            return
        turn.usages.append(responded.usage)
        yield await asyncio.to_thread(self._record, turn, responded.answer)

    # -- the shared steps ------------------------------------------------------------------------------------

    def _prepare(self, turn: PlannerTurn) -> TurnResult | None:
        """Check the input and the caller's access, read the context: ``None`` when the turn may proceed,
        else its unrecorded result (input or storage refused it before any model call).

        Raises:
            ConversationAccessDenied: the conversation belongs to another user.
        """
        context = open_turn(
            self.store,
            turn.conversation_id,
            turn.message,
            turn.caller,
            self.erp.today,
            memory_limit=self.limits.memory_limit,
            exchanges=self.limits.exchanges,
        )
        if not isinstance(context, ConversationContext):  # refused before any model call
            return self._unrecorded(turn, context)
        turn.context = context.model_copy(update={"denied_operations": self.registry.denied(turn.caller)})
        turn.state = turn.context.state
        turn.catalog = self.registry.catalog(turn.caller)
        return None

    def _planned(self, turn: PlannerTurn, analyzed: PlanReply) -> Answer | None:
        """Take call 1's plan: its direct answer (small talk: the turn's last call), or ``None`` once the plan
        is validated (``turn.runnable`` to execute, or rejected with ``turn.outcomes`` explaining why)."""
        turn.usages.append(analyzed.usage)
        plan = turn.plan = analyzed.plan
        if plan.is_direct:
            turn.plan_valid = True  # an empty plan is a valid one
            return Answer(text=(plan.direct_answer or "").strip())
        validated = validate_plan(
            plan, self.registry, max_operations=self.limits.max_operations, caller=turn.caller
        )
        turn.plan_valid = validated.ok
        if validated.ok:
            turn.runnable = validated
        else:
            turn.failure = "invalid_plan"
            turn.errors.extend(f"Invalid plan: {issue.message}" for issue in validated.issues)
            turn.operations, turn.outcomes = rejected(validated, self.limits.max_operations)
        return None

    def _executed(self, turn: PlannerTurn, operations: list[ExecutedOperation]) -> None:
        """Take the executed plan: what call 2 reads (results clipped, errors explained); an operation that
        broke inside the ERP makes the turn an ``operation_error``."""
        turn.operations = operations
        ran = [op for op in operations if op.repeat_of is None]  # a repeat is the same call, not a second one
        turn.errors.extend(f"{op.function}: {op.error}" for op in ran if op.error)
        if any(op.error_kind == "internal" for op in operations):
            turn.failure = "operation_error"
        turn.outcomes = [
            OperationOutcome(
                function=op.function,
                parameters=op.parameters,
                result=clip_json(
                    op.result, max_items=self.limits.result_rows, max_chars=self.limits.result_chars
                ),
                error=op.error,
            )
            for op in ran
        ]

    def _call_failed(self, turn: PlannerTurn, error: AICallError) -> TurnResult:
        """Call 1 or call 2 failed: counted, explained, nothing written.

        Call 1 failing on its output (unparseable, not a plan, cut at the output cap) is an invalid plan
        (``plan_valid=False``); failing in the provider, no output was read (``plan_valid`` stays ``None``).
        """
        turn.usages.append(error.usage)
        if turn.plan is None and isinstance(error.cause, ModelOutputError):
            turn.plan_valid = False
        which = "Call 1 (plan)" if turn.plan is None else "Call 2 (answer)"
        turn.errors.append(f"{which} failed: {error}")
        return self._unrecorded(turn, error.cause)

    def _checked(self, turn: PlannerTurn, answer: Answer) -> Answer:
        """Check the answer against the ERP (:mod:`shared.answer_check`: its figures and the actions it
        claims): the answer to record, its memory items with ungrounded figures dropped; under ``refuse``, an
        answer that failed becomes the ``ungrounded`` refusal the user reads, with no memory and no model
        state, so only the state the executed operations imply is recorded."""
        if self.grounding == "off":
            return answer
        texts = [
            turn.message,
            trusted_context(turn.context),  # never the state a model wrote
            *(spec.model_dump_json() for spec in turn.catalog),
            *(outcome.error for outcome in turn.outcomes if outcome.error),  # e.g. a rejected plan's reason
        ]
        today = self.erp.today
        check = verify_answer(answer.text, answer.memories, turn.operations, texts, today, answer.state)
        turn.ungrounded, turn.claimed_actions = check.figures, check.claims
        if check.passed or self.grounding != "refuse":
            return answer.model_copy(update={"memories": check.memories, "state": check.state})
        turn.failure = "ungrounded"
        turn.errors.extend(failed_check_errors(check))
        return Answer(text=refusal_text(check, turn.operations))

    def _record(self, turn: PlannerTurn, answer: Answer) -> TurnResult:
        """Store the whole turn in one transaction (blocking: the driver calls it in a thread), once the
        answer is checked; a refused answer is recorded as the user read it."""
        answer = self._checked(turn, answer)
        refused = turn.failure == "ungrounded"
        record = turn.record(answer)
        turn.answered = not refused
        try:
            state = self.store.record_turn(
                turn.conversation_id,
                record,
                user_id=turn.caller.user_id,
                expected_version=turn.context.version,
            )
        except ConversationAccessDenied as exc:  # another user created this id while the model worked
            return self._unrecorded(turn, exc)
        except StorageError as exc:  # the answer is good; only remembering it failed
            turn.errors.append(f"Turn not recorded: {exc}")
            if refused:
                return turn.result(answer.text)
            turn.failure = "storage"
            return turn.result(f"{answer.text}\n\n{NOT_RECORDED_NOTE}")
        return turn.result(answer.text, memories=[item.content for item in answer.memories], recorded=state)

    def _unrecorded(self, turn: PlannerTurn, error: BaseException) -> TurnResult:
        """A turn that ends without a model-written answer: classified, explained, nothing written."""
        kind = failure_kind_of(error)
        turn.failure = kind
        turn.answered = False
        if kind in ("input", "storage"):
            turn.errors.append(str(error))
        return turn.result(user_message(kind, error))
