"""The ERP-side planner engine: one turn = at most two model calls (article §4–11).

Flow of one turn:

1. check the input and that ``caller`` may use the conversation, and build the bounded context from the
   memory store (state, relevant memories, last exchange, today);
2. call 1, ``analyze`` → a :class:`~planner_mode.plan.Plan` (small talk with ``respuesta_directa`` stops
   here: one call);
3. validate the whole plan before executing anything (``TurnResult.plan_valid``: call 1's output parsed and
   passed validation; ``None`` when call 1 failed in the provider, so no output was read);
4. execute it (independent operations concurrently, dependent ones in order);
5. call 2, ``respond``, with every result and every error (invalid plans included);
6. record the turn atomically: user message, assistant message (metadata ``plan`` and ``operations``),
   memories and the state update.

Three entry points run that one flow: :meth:`PlannerEngine.ask` (blocking), :meth:`~PlannerEngine.aask`
(the models' ``ainvoke``, handlers and storage in threads) and :meth:`~PlannerEngine.astream` (the turn as
:mod:`shared.events`: ``PlanReady``, one ``OperationDone`` per operation as it finishes, the answer in
``AnswerDelta`` events as call 2 writes it, or as call 1 writes a direct answer, before ``PlanReady``;
``TurnDone`` last). Each takes the turn's :class:`~shared.security.Caller` as a required argument: the
engine never guesses who is asking. The steps that do not touch a model or run an operation are shared
synchronous methods; the entry points differ only in how they call the model and run the operations. Each
opens one parent LangChain run per turn (:mod:`shared.tracing`) whose children are the turn's model calls,
and logs the finished turn once (:func:`shared.logs.log_turn`, logger ``planner_mode``).

Failures never raise out of a turn: every turn ends in a :class:`TurnResult` whose ``failure`` is ``None`` or
one kind of the contract in :mod:`shared.failures` (``input``, ``storage``, ``provider``, ``timeout``,
``model_output``, ``invalid_plan``, ``operation_error``). **Recording policy** (the same in both modes): a
turn is recorded only when a model wrote its answer (call 2, or call 1's ``respuesta_directa``), including
``invalid_plan`` and ``operation_error`` turns whose answer explains the refusal. When the input is refused,
the store cannot be read, or call 1 or call 2 fails (a stream that breaks midway included), nothing is
written (not even a new conversation's row), ``TurnResult.recorded`` is ``False``, and the user can simply
ask again. Input and storage are checked before any model call, so they cost none. Recording is the turn's
last step, so a stream abandoned by its reader before ``TurnDone`` records nothing either.

Everything the ERP sends is bounded by construction: the context is clipped by the memory store, and each
operation result sent to call 2 is clipped in rows and characters with a visible marker.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncGenerator, AsyncIterator, Sequence
from contextlib import aclosing
from typing import Any

from langchain_core.runnables import RunnableConfig
from pydantic import BaseModel, Field

from planner_mode.ai import PlannerAI
from planner_mode.client import AICallError, AIClient, InProcessAIClient
from planner_mode.executor import aexecute_plan, astream_plan, execute_plan
from planner_mode.plan import MAX_PLAN_OPERATIONS, Answer, OperationOutcome, Plan
from planner_mode.validation import ValidatedPlan, validate_plan
from planner_mode.wire import AnalyzeResponse, CallUsage, RespondResponse
from shared.bounds import RESULT_MAX_CHARS, RESULT_MAX_ITEMS, clip_json
from shared.erp.database import Erp
from shared.errors import ConversationAccessDenied, ErpAiError, ModelOutputError, StorageError
from shared.events import AnswerDelta, OperationDone, PlanReady, TurnDone, TurnEvent
from shared.failures import NOT_RECORDED_NOTE, failure_kind_of, user_message
from shared.inputs import check_turn_input
from shared.logs import log_turn
from shared.memory.context import ConversationContext
from shared.memory.store import MemoryStore, MessageIn, TurnRecord
from shared.operations.registry import OperationRegistry, OperationSpec
from shared.security import Caller, require_caller
from shared.state import turn_state
from shared.tracing import TurnRun, aturn_run, turn_run
from shared.turn import ExecutedOperation, FailureKind, TurnResult

__all__ = ["PlannerEngine", "PlannerLimits"]

logger = logging.getLogger("planner_mode")

ANSWER_PREFIX = '{"respuesta":"'
"""What a model writes before the first character of its answer when ``respuesta`` is the first key, as the
answer schema and the prompt's compact example order it: the prefix of the simulated time to the first answer
token. (The raw reply does not cross the AI client, so a model that writes other keys or reasoning first is
simulated as if it did not.)"""
DIRECT_ANSWER_PREFIX = '{"respuesta_directa":"'
"""The same for a direct answer of call 1: ``respuesta_directa`` is the plan schema's first key and the
prompt's example writes it alone and compact."""


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


class PlannerEngine:
    """The article's two-call engine over an ERP, an operation registry and a conversation store.

    ``ai`` is an :class:`~planner_mode.client.AIClient` (in process or HTTP); a bare
    :class:`~planner_mode.ai.PlannerAI` is accepted and wrapped in an ``InProcessAIClient``. The engine keeps
    no per-turn state, so one instance may answer many conversations from many threads and event loops.
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

    # -- entry points --------------------------------------------------------------------------------------

    def ask(
        self,
        conversation_id: str,
        message: str,
        caller: Caller,
        *,
        config: RunnableConfig | None = None,
    ) -> TurnResult:
        """Answer ``message`` in ``conversation_id`` (created for ``caller`` if unknown) with at most two
        model calls, as ``caller``: call 1 sees only the operations the caller may run, and the ERP runs them
        within the caller's data scope. ``config`` (callbacks, tags, metadata, ``run_name``) applies to the
        turn's parent run, whose children are the turn's model calls (:mod:`shared.tracing`).

        ``caller`` is required, in every entry point: the user the embedding application authenticated. It
        decides what the model is offered and which rows the ERP shows, so the engine never guesses who is
        asking (there is no default user; the single-user demo passes ``shared.security.DEMO_CALLER``).

        Raises:
            ConversationAccessDenied: the conversation belongs to another user. Checked before the context is
                read or a model is called: nothing is paid, nothing is written. The only exception ``ask``
                raises on purpose for a turn; every other failure ends in the returned result.
            TypeError: ``caller`` is not a :class:`~shared.security.Caller` (a user id string, ``None``): a
                misuse of the API, refused before anything runs.
        """
        turn = _Turn(conversation_id, message, caller)
        with turn_run(config, mode=self.mode, inputs=turn.inputs) as run:
            result = self._prepare(turn)
            if result is None:
                result = self._run(turn, run.child_config())
            return self._finish(run, turn, result)

    async def aask(
        self,
        conversation_id: str,
        message: str,
        caller: Caller,
        *,
        config: RunnableConfig | None = None,
    ) -> TurnResult:
        """:meth:`ask` without blocking the event loop: the models' ``ainvoke``, independent operations
        gathered concurrently with their (synchronous) handlers in threads, storage in a thread. ``caller``
        is required, as in :meth:`ask`."""
        turn = _Turn(conversation_id, message, caller)
        async with aturn_run(config, mode=self.mode, inputs=turn.inputs) as run:
            result = await asyncio.to_thread(self._prepare, turn)
            if result is None:
                result = await self._arun(turn, run.child_config())
            return self._finish(run, turn, result)

    async def astream(
        self,
        conversation_id: str,
        message: str,
        caller: Caller,
        *,
        config: RunnableConfig | None = None,
    ) -> AsyncGenerator[TurnEvent, None]:
        """:meth:`aask` as events (:mod:`shared.events`): ``PlanReady`` once call 1 is parsed, one
        ``OperationDone`` per operation as it finishes (each operation of a rejected plan, too), the answer in
        ``AnswerDelta`` events as call 2 writes it, and ``TurnDone`` last, with the same result :meth:`ask`
        returns plus ``first_answer_ms``.

        A direct answer (small talk, a refusal: call 1's ``respuesta_directa``) streams as call 1 writes it,
        so its ``AnswerDelta`` events come *before* ``PlanReady``; the plan is still parsed and validated
        from call 1's whole reply. **What is streamed from call 1**: only a reply whose first key is
        ``respuesta_directa`` (:class:`planner_mode.ai.DirectAnswerText`; the plan schema puts it first and
        the prompt shows it alone), so a reply that starts with operations never shows its text. A reply
        that starts with a direct answer and then lists operations contradicts the prompt; its operations run
        as any plan's do, call 2's answer follows what was shown after a blank line, and ``TurnDone``'s
        answer (call 2's) is the one to keep, as :mod:`shared.events` says of any mismatch. A direct answer
        not written first arrives as one delta once call 1 is parsed.

        A call that fails (even midway through its stream) ends the turn unrecorded: ``TurnDone`` carries
        the failure kind, ``recorded=False`` and the failure message, which supersedes any text shown.
        ``caller`` is required, as in :meth:`ask`. Raises ``ConversationAccessDenied`` (or ``TypeError`` for
        a ``caller`` that is not a ``Caller``) before the first event.
        """
        turn = _Turn(conversation_id, message, caller)
        async with aturn_run(config, mode=self.mode, inputs=turn.inputs) as run:
            result = await asyncio.to_thread(self._prepare, turn)
            if result is None:
                async with aclosing(self._stream(turn, run.child_config())) as events:
                    async for event in events:
                        if isinstance(event, TurnResult):
                            result = event
                        else:
                            yield event
            assert result is not None, "a streamed turn always ends in a result"
            result = self._finish(run, turn, result)
        yield TurnDone(result=result)

    # -- how each entry point calls the models and runs the operations --------------------------------------

    def _run(self, turn: _Turn, config: RunnableConfig) -> TurnResult:
        try:
            analyzed = self.ai.analyze(turn.question, turn.context, turn.catalog, config=config)
        except AICallError as exc:
            return self._call_failed(turn, exc)
        direct = self._planned(turn, analyzed)
        if direct is not None:
            return self._record(turn, direct)
        if turn.runnable is not None:
            self._executed(turn, execute_plan(turn.runnable, **self._execution(turn)))
        try:
            responded = self.ai.respond(turn.question, turn.outcomes, turn.context, config=config)
        except AICallError as exc:
            return self._call_failed(turn, exc)
        return self._record(turn, self._answered(turn, responded))

    async def _arun(self, turn: _Turn, config: RunnableConfig) -> TurnResult:
        try:
            analyzed = await self.ai.aanalyze(turn.question, turn.context, turn.catalog, config=config)
        except AICallError as exc:
            return self._call_failed(turn, exc)
        direct = self._planned(turn, analyzed)
        if direct is not None:
            return await asyncio.to_thread(self._record, turn, direct)
        if turn.runnable is not None:
            self._executed(turn, await aexecute_plan(turn.runnable, **self._execution(turn)))
        try:
            responded = await self.ai.arespond(turn.question, turn.outcomes, turn.context, config=config)
        except AICallError as exc:
            return self._call_failed(turn, exc)
        return await asyncio.to_thread(self._record, turn, self._answered(turn, responded))

    async def _stream(
        self, turn: _Turn, config: RunnableConfig
    ) -> AsyncGenerator[PlanReady | OperationDone | AnswerDelta | TurnResult, None]:
        """:meth:`_arun` yielding the turn's events, then its result."""
        analyzed: AnalyzeResponse | None = None
        shown = False  # call 1 streamed some of a direct answer (see astream)
        try:
            async for item in _closing(
                self.ai.astream_analyze(turn.question, turn.context, turn.catalog, config=config)
            ):
                if isinstance(item, AnalyzeResponse):
                    analyzed = item
                elif item:
                    shown = True
                    yield turn.delta(item)
            if analyzed is None:
                raise AICallError(ModelOutputError("The plan stream ended without a plan."))
        except AICallError as exc:
            yield self._call_failed(turn, exc)
            return
        direct = self._planned(turn, analyzed)
        yield PlanReady(plan=analyzed.plan.model_dump(mode="json"))
        if direct is not None:
            if not shown:  # written after other keys: not streamed, shown whole now
                yield turn.delta(direct.respuesta)
            yield await asyncio.to_thread(self._record, turn, direct)
            return
        if turn.runnable is not None:
            finished: list[tuple[int, ExecutedOperation]] = []
            async with aclosing(astream_plan(turn.runnable, **self._execution(turn))) as outcomes:
                async for index, outcome in outcomes:
                    finished.append((index, outcome))
                    yield OperationDone(operation=outcome)
            self._executed(turn, _in_plan_order(finished))
        else:  # a rejected plan: its operations, none run, each with its reason
            for operation in turn.operations:
                yield OperationDone(operation=operation)
        responded: RespondResponse | None = None
        try:
            separator = "\n\n" if shown else ""  # after a direct answer that turned out a preamble
            async for item in _closing(
                self.ai.astream_respond(turn.question, turn.outcomes, turn.context, config=config)
            ):
                if isinstance(item, RespondResponse):
                    responded = item
                elif item:
                    yield turn.delta(separator + item)
                    separator = ""
            if responded is None:
                raise AICallError(ModelOutputError("The answer stream ended without an answer."))
        except AICallError as exc:
            yield self._call_failed(turn, exc)
            return
        yield await asyncio.to_thread(self._record, turn, self._answered(turn, responded))

    # -- the shared steps ------------------------------------------------------------------------------------

    def _prepare(self, turn: _Turn) -> TurnResult | None:
        """Check the input and the caller's access, read the context: ``None`` when the turn may proceed,
        else its unrecorded result (input or storage refused it before any model call).

        Raises:
            ConversationAccessDenied: the conversation belongs to another user.
        """
        try:
            check_turn_input(turn.conversation_id, turn.question)
            self.store.check_access(turn.conversation_id, turn.caller.user_id)
            # No ensure_conversation() here: record_turn creates an unknown conversation in the turn's own
            # transaction, so a failed first turn leaves nothing behind, and a turn costs one write, not two.
            turn.context = self.store.build_context(
                turn.conversation_id,
                self.erp.today,
                memory_limit=self.limits.memory_limit,
                exchanges=self.limits.exchanges,
            )
        except ConversationAccessDenied:
            raise
        except ErpAiError as exc:  # InputError or StorageError: refused before any model call
            return self._unrecorded(turn, exc)
        turn.state = turn.context.estado
        turn.catalog = self.registry.catalog(turn.caller)
        return None

    def _planned(self, turn: _Turn, analyzed: AnalyzeResponse) -> Answer | None:
        """Take call 1's plan: its direct answer (small talk: the turn's last call), or ``None`` once the plan
        is validated (``turn.runnable`` to execute, or rejected with ``turn.outcomes`` explaining why)."""
        turn.usages.append(analyzed.usage)
        plan = turn.plan = analyzed.plan
        if plan.is_direct:
            turn.plan_valid = True  # an empty plan is a valid one
            return Answer(respuesta=(plan.respuesta_directa or "").strip())
        validated = validate_plan(
            plan, self.registry, max_operations=self.limits.max_operations, caller=turn.caller
        )
        turn.plan_valid = validated.ok
        if validated.ok:
            turn.runnable = validated
        else:
            turn.failure = "invalid_plan"
            turn.errors.extend(f"Invalid plan: {issue.message}" for issue in validated.issues)
            turn.operations, turn.outcomes = _rejected(validated, self.limits.max_operations)
        return None

    def _execution(self, turn: _Turn) -> dict[str, Any]:
        """The keyword arguments of every plan runner for this turn."""
        return {
            "registry": self.registry,
            "erp": self.erp,
            "caller": turn.caller,
            "max_workers": self.limits.max_workers,
        }

    def _executed(self, turn: _Turn, operations: list[ExecutedOperation]) -> None:
        """Take the executed plan: what call 2 reads (results clipped, errors explained); an operation that
        broke inside the ERP makes the turn an ``operation_error``."""
        turn.operations = operations
        turn.errors.extend(f"{op.funcion}: {op.error}" for op in operations if op.error)
        if any(op.error_kind == "internal" for op in operations):
            turn.failure = "operation_error"
        turn.outcomes = [
            OperationOutcome(
                funcion=op.funcion,
                parametros=op.parametros,
                resultado=clip_json(
                    op.result, max_items=self.limits.result_rows, max_chars=self.limits.result_chars
                ),
                error=op.error,
            )
            for op in operations
        ]

    @staticmethod
    def _answered(turn: _Turn, responded: RespondResponse) -> Answer:
        turn.usages.append(responded.usage)
        return responded.answer

    def _call_failed(self, turn: _Turn, error: AICallError) -> TurnResult:
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

    def _record(self, turn: _Turn, answer: Answer) -> TurnResult:
        """Store the whole turn in one transaction (blocking: the async entry points call it in a thread)."""
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
        turn.answered = True
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
            stale_state=state.stale,
        )

    def _unrecorded(self, turn: _Turn, error: BaseException) -> TurnResult:
        """A turn that ends without a model-written answer: classified, explained, nothing written."""
        kind = failure_kind_of(error)
        turn.failure = kind
        turn.answered = False
        if kind in ("input", "storage"):
            turn.errors.append(str(error))
        return turn.result(answer=user_message(kind, error), memories=[], state=turn.state, recorded=False)

    @staticmethod
    def _finish(run: TurnRun, turn: _Turn, result: TurnResult) -> TurnResult:
        """End of every turn, whichever entry point ran it: the parent run's outputs and the turn's log."""
        run.outputs.update(answer=result.answer, failure=result.failure)
        log_turn(logger, result, turn.caller.user_id)
        return result


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

    context: ConversationContext
    """The conversation's bounded context (set by ``_prepare`` before any model call)."""
    catalog: list[OperationSpec]
    """The operations the caller may run (set by ``_prepare``)."""

    def __init__(self, conversation_id: str, question: str, caller: Caller) -> None:
        self.conversation_id = conversation_id
        self.question = question
        self.caller = require_caller(caller)  # before anything reads it (the trace inputs, the access check)
        self.started = time.perf_counter()
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
        self.first_answer_ms: float | None = None

    @property
    def inputs(self) -> dict[str, Any]:
        """The inputs of the turn's parent run."""
        return {"conversation_id": _text(self.conversation_id), "question": _text(self.question)}

    def delta(self, text: str) -> AnswerDelta:
        """The next piece of the answer for the reader; the first one stamps ``first_answer_ms``."""
        if self.first_answer_ms is None:
            self.first_answer_ms = (time.perf_counter() - self.started) * 1000
        return AnswerDelta(text=text)

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
        total_ms = (time.perf_counter() - self.started) * 1000
        return TurnResult(
            mode=PlannerEngine.mode,
            conversation_id=_text(self.conversation_id),
            question=_text(self.question),
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
            first_answer_ms=self.first_answer_ms,
            simulated_first_answer_ms=self._simulated_first_answer_ms(),
            harness_ms=max(0.0, total_ms - usage.model_ms),
            total_ms=total_ms,
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


def _in_plan_order(finished: Sequence[tuple[int, ExecutedOperation]]) -> list[ExecutedOperation]:
    return [outcome for _index, outcome in sorted(finished, key=lambda item: item[0])]


async def _closing(stream: AsyncIterator[Any]) -> AsyncGenerator[Any, None]:
    """Iterate ``stream``, closing it however the iteration ends (if it is a generator: it has ``aclose``)."""
    try:
        async for item in stream:
            yield item
    finally:
        close = getattr(stream, "aclose", None)
        if close is not None:
            await close()


def _text(value: object) -> str:
    """``value`` if it is text; a refused non-text input (``None``, bytes) is recorded by its ``repr``."""
    return value if isinstance(value, str) else repr(value)
