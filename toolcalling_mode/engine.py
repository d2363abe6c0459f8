"""The same sales assistant as a native LangChain tool-calling agent (the article's §16 alternative).

A turn builds its input from the ERP-owned memory, stable part first for a provider's prefix cache
(:mod:`toolcalling_mode.prompts`; ``windowed``: the bounded context before the question; ``full_history``:
every stored message replayed, then today and the state), runs the caller's compiled agent
(:mod:`toolcalling_mode._agent`) inside the turn's parent LangChain run (:mod:`shared.tracing`), records
the question, the tool-calling steps, their results and the final answer atomically with the planner's
state update (:func:`shared.state.turn_state`), and logs the finished turn on the ``toolcalling_mode`` logger.

:meth:`~ToolCallingEngine.astream` is the turn, over ``agent.astream``: ``OperationDone`` per tool result,
the answer in ``AnswerDelta`` s (:mod:`toolcalling_mode._streaming`), then ``TurnDone``; ``aask`` drains it
without a reader and ``ask`` runs ``aask`` to completion. ``config`` applies to one chain run named
``"<mode> turn"``, parent of every model call and tool run of the turn. Only
:class:`~shared.errors.ConversationAccessDenied` is raised; every other failure ends in the result, and a
turn is recorded only when the model wrote its final answer (nothing, when a stream fails midway or its
reader stops before ``TurnDone``).
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import uuid
from collections.abc import AsyncGenerator
from contextlib import aclosing
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.runnables import RunnableConfig

from shared.answer_check import (
    AnswerCheck,
    failed_check_errors,
    refusal_text,
    trusted_context,
    verify_answer,
)
from shared.engine import TurnEngine
from shared.errors import ConversationAccessDenied, ErpAiError, StorageError
from shared.events import AnswerDelta, OperationDone, TurnDone, TurnEvent
from shared.failures import NOT_RECORDED_NOTE, failure_kind_of, is_recorded, user_message
from shared.grounding import GroundingPolicy
from shared.llm.factory import configured_max_tokens
from shared.llm.usage import UsageTracker
from shared.memory.context import ConversationContext, render_context
from shared.memory.store import MessageIn, TurnRecord, VersionedState
from shared.security import Caller, require_caller
from shared.state import turn_state
from shared.tracing import TurnRun, aturn_run
from shared.turn import FailureKind, TurnResult
from shared.turn_steps import AnswerClock, admit_turn, finish_turn, measured_figures, read_context, text_of
from toolcalling_mode._agent import StructuredStrategy, TurnContext, agent_factory, answer_tool_names
from toolcalling_mode._run import (
    AgentRun,
    Outcome,
    operation_errors,
    operation_for,
    outcome,
    read_run,
    tool_calls_by_id,
)
from toolcalling_mode._streaming import AnswerSteps
from toolcalling_mode.history import step_rows, to_langchain_messages
from toolcalling_mode.limits import ToolCallingLimits
from toolcalling_mode.prompts import system_prompt, turn_message

if TYPE_CHECKING:
    from shared.erp.database import Erp
    from shared.memory.store import MemoryStore
    from shared.operations.registry import OperationRegistry

ContextPolicy = Literal["windowed", "full_history"]

logger = logging.getLogger("toolcalling_mode")

_MODEL_NODE = "model"
"""The node of ``create_agent``'s graph that calls the model (the ``messages`` stream is filtered on it)."""


@dataclass
class _Turn:
    """One turn from its first line: who asks what, its clock and usage tracker, and once prepared, the
    caller's agent, its input messages and runtime context and the state before the turn."""

    conversation_id: str
    message: str
    caller: Caller
    clock: AnswerClock
    tracker: UsageTracker = field(default_factory=UsageTracker)
    agent: Any = None
    inputs: list[BaseMessage] = field(default_factory=list)
    context: TurnContext | None = None
    stored_state: VersionedState = field(default_factory=VersionedState)
    trusted_context: str = ""
    """The turn's context as a grounding source: without the state keys only a model wrote."""

    def deltas(self, text: str) -> list[AnswerDelta]:
        """``text`` as an ``AnswerDelta`` (none when empty); the first one a reader sees stamps the clock."""
        return [self.clock.delta(text)] if text else []


@dataclass
class _Kept:
    """What became of a finished turn: the answer shown, its failure kind, and what the store kept."""

    answer: str
    failure: FailureKind | None
    state: dict[str, Any]
    """The conversation's state after the turn, stored or unchanged."""
    memories: list[str] = field(default_factory=list)
    recorded: bool = False
    answered: bool = False
    """The model wrote the turn's answer (recorded, or lost only by storage)."""
    stale_state: bool = False


class ToolCallingEngine(TurnEngine):
    """A LangChain tool-calling agent over the sales registry, with ERP-owned memory.

    ``ask``, ``aask`` and ``astream`` (:class:`~shared.engine.TurnEngine`) run one turn as the turn's
    ``caller``, who decides which tools the agent is offered and which rows they show. A reader of
    ``astream`` that stops early stops the agent run at once, and nothing is recorded.
    """

    def __init__(
        self,
        registry: OperationRegistry,
        erp: Erp,
        store: MemoryStore,
        model: BaseChatModel,
        *,
        policy: ContextPolicy = "windowed",
        structured: bool = False,
        limits: ToolCallingLimits | None = None,
        structured_strategy: StructuredStrategy = "auto",
        recover_text_tool_calls: bool = True,
        grounding: GroundingPolicy = "refuse",
    ) -> None:
        """Configure the engine (each caller's agent is compiled on their first turn).

        Args:
            registry: The operations offered as tools (``registry.langchain_tools(erp, caller=...)``).
            erp: The ERP the tools run against; its ``today`` goes into every turn's prompt.
            store: The conversation memory (same tables as planner mode).
            model: Any LangChain chat model that supports ``bind_tools``.
            policy: ``windowed`` (bounded context before the question) or ``full_history`` (replay all).
            structured: Ask for a structured final :class:`Answer` (``respuesta``, ``memoria``, ``estado``).
            limits: Model-call and recursion limits per turn.
            structured_strategy: ``provider`` or ``tool`` forces LangChain's strategy; ``auto`` picks
                ``ProviderStrategy`` when the model's profile declares native structured output.
            recover_text_tool_calls: Recover a reply that is only tool calls written as text into those
                calls, for the tools offered (:mod:`toolcalling_mode.text_tool_calls`); ``False``: such a
                reply ends the turn as ``model_output`` with ``plan_valid`` False.
            grounding: A final answer stating figures no tool result, input or tool description supports
                (:mod:`shared.grounding`): ``refuse`` (the turn ends ``ungrounded``, unrecorded), ``flag``
                (shown and recorded, the figures in the result) or ``off``.

        Raises:
            ValueError: an unknown ``policy`` or ``grounding``.
            ConfigurationError: ``model`` is a chat model that cannot bind tools.
        """
        if policy not in ("windowed", "full_history"):
            raise ValueError(f"Unknown context policy {policy!r}; use 'windowed' or 'full_history'.")
        if grounding not in ("refuse", "flag", "off"):
            raise ValueError(f"Unknown grounding policy {grounding!r}; use 'refuse', 'flag' or 'off'.")
        self.grounding: GroundingPolicy = grounding
        self.mode: str = "toolcalling" if policy == "windowed" else "toolcalling-full"
        self.policy: ContextPolicy = policy
        self.structured = structured
        self.limits = limits or ToolCallingLimits()
        self.recover_text_tool_calls = recover_text_tool_calls
        self._registry = registry
        self._erp = erp
        self._store = store
        self._max_tokens = configured_max_tokens(model)
        self._answer_tools = answer_tool_names(structured)
        self._answer_field = "respuesta" if structured else None
        self._agent_for = agent_factory(
            registry,
            erp,
            model,
            name=self.mode,
            limits=self.limits,
            max_tokens=self._max_tokens,
            structured_strategy=structured_strategy if structured else None,
            answer_tools=self._answer_tools,
            recover_text_tool_calls=recover_text_tool_calls,
        )

    async def _turn(
        self,
        conversation_id: str,
        message: str,
        caller: Caller,
        config: RunnableConfig | None,
        *,
        reading: bool,
    ) -> AsyncGenerator[TurnEvent, None]:
        # reading: the agent runs with LangGraph's ``messages`` stream too and the answer is decoded live.
        caller = require_caller(caller)  # before anything reads it (trace inputs, access check)
        turn = _Turn(conversation_id, message, caller, AnswerClock(reading=reading))
        inputs = {
            "conversation_id": text_of(conversation_id),
            "message": text_of(message),
            "user_id": caller.user_id,
        }
        async with aturn_run(config, mode=self.mode, inputs=inputs) as trace:
            refused = await asyncio.to_thread(self._prepare, turn)
            if refused is not None:
                yield TurnDone(result=self._finished(trace, turn, refused))
                return
            assert turn.context is not None
            steps = (
                AnswerSteps(self._answer_field, self._answer_tools, max_tokens=self._max_tokens)
                if reading
                else None
            )
            announced: set[str] = set()
            state: dict[str, Any] = {}
            failure: Exception | None = None
            try:
                async with aclosing(
                    turn.agent.astream(
                        {"messages": turn.inputs},
                        config=trace.child_config(turn.tracker, recursion_limit=self.limits.recursion_limit),
                        context=turn.context,
                        stream_mode=["values", "messages"] if reading else ["values"],
                    )
                ) as chunks:
                    async for kind, item in chunks:
                        if kind == "values":
                            state = item  # the last state: a limit or a failure ends the stream early
                            continue
                        assert steps is not None
                        chunk, metadata = item
                        if isinstance(chunk, AIMessage) and metadata.get("langgraph_node") == _MODEL_NODE:
                            for event in turn.deltas(steps.feed(chunk)):
                                yield event
                        elif (
                            isinstance(chunk, ToolMessage)
                            and chunk.name not in self._answer_tools
                            and chunk.tool_call_id not in announced
                        ):
                            announced.add(chunk.tool_call_id)
                            calls = tool_calls_by_id(state.get("messages", []))
                            yield OperationDone(operation=operation_for(chunk, calls, turn.context))
            except Exception as exc:  # classified in read_run: the turn ends, not the caller
                failure = exc
            if steps is not None and failure is None:  # the last step ended: what its decoders held back
                # (after a failure nothing held back is shown: the failure's message replaces it)
                for event in turn.deltas(steps.finish()):
                    yield event
            run = read_run(
                state,
                failure,
                turn.inputs,
                turn.context,
                registry=self._registry,
                answer_tools=self._answer_tools,
                max_tokens=self._max_tokens,
            )
            for operation in run.operations:  # one event each, also for those no tool message showed
                if operation.id is None or operation.id not in announced:
                    yield OperationDone(operation=operation)
            result = await asyncio.to_thread(self._conclude, turn, run, steps)
            yield TurnDone(result=self._finished(trace, turn, result))

    def _prepare(self, turn: _Turn) -> TurnResult | None:
        """Check the input and the caller's access, read the turn's input, pick the caller's agent: the
        refused turn's result when the input or the store is refused before any model call. Blocking."""
        try:
            admit_turn(self._store, turn.conversation_id, turn.message, turn.caller)
            # record_turn creates an unknown conversation in the turn's own transaction: one write per turn.
            system_message, prior, human, turn.stored_state, turn.trusted_context = self._turn_input(
                turn.conversation_id, turn.message, turn.caller
            )
        except ConversationAccessDenied:
            raise
        except ErpAiError as exc:  # InputError or StorageError: refused before any model call
            kind = failure_kind_of(exc)
            kept = _Kept(user_message(kind, exc), kind, {})
            return self._result(turn, AgentRun(messages=[]), kept, [str(exc)], None)
        turn.inputs = [*prior, HumanMessage(content=human)]
        for message in turn.inputs:
            message.id = message.id or f"in-{uuid.uuid4().hex}"
        turn.agent = self._agent_for(turn.caller)
        turn.context = TurnContext(system_message, caller=turn.caller)
        return None

    def _turn_input(
        self, conversation_id: str, message: str, turn_caller: Caller
    ) -> tuple[SystemMessage, list[BaseMessage], str, VersionedState, str]:
        """The system message, the replayed messages, the turn's human message text, the stored state and the
        context as a grounding source (:func:`shared.answer_check.trusted_context`).

        Both policies show the stored state before the question, as the planner's call 1 does: the keys
        only the model writes (``tema``) would otherwise never be read. Today's date travels with the state,
        so the system prompt is the same every day.
        """
        if self.policy == "windowed":
            context = read_context(self._store, conversation_id, self._erp.today)
            state = VersionedState(context.state, version=context.version)
            prior: list[BaseMessage] = []
        else:
            # The state (and its version) first: the version is never newer than the messages replayed.
            state = self._store.get_state(conversation_id)
            prior = to_langchain_messages(self._store.history(conversation_id))
            context = ConversationContext(today=self._erp.today, state=dict(state))
        context = context.model_copy(update={"denied_operations": self._registry.denied(turn_caller)})
        system = SystemMessage(content=system_prompt(structured=self.structured))
        return system, prior, turn_message(message, render_context(context)), state, trusted_context(context)

    def _conclude(self, turn: _Turn, run: AgentRun, steps: AnswerSteps | None) -> TurnResult:
        """The turn's outcome, recorded when the recording policy says so. Blocking (storage). Without live
        decoders (no reader), the answer text is read from the run."""
        errors = operation_errors(run.operations, self._registry)
        end = outcome(
            run,
            turn.tracker.calls,
            errors,
            limits=self.limits,
            structured=self.structured,
            recover_text_tool_calls=self.recover_text_tool_calls,
        )
        end, check = self._grounded(turn, run, end, errors)
        kept = self._record(turn, run, end, errors)
        if steps is None and kept.answered:
            steps = AnswerSteps.replay(self._answer_field, self._answer_tools, run.messages)
        result = self._result(turn, run, kept, errors, steps)
        if check is None or check.passed:
            return result
        return result.model_copy(
            update={"ungrounded_figures": check.figures, "claimed_actions": check.claims}
        )

    def _grounded(
        self, turn: _Turn, run: AgentRun, end: Outcome, errors: list[str]
    ) -> tuple[Outcome, AnswerCheck | None]:
        """Check a model-written answer against the tool results, the turn's input and the tools'
        descriptions (:mod:`shared.answer_check`: its figures and the actions it claims): the outcome to
        record (memory items with ungrounded figures dropped) and the check; under ``refuse`` an answer that
        failed becomes the ``ungrounded`` refusal the user reads, recorded with no memory and no model state
        (the state the operations imply is still derived)."""
        if self.grounding == "off" or not is_recorded(end.failure):
            return end, None
        texts: list[str] = [str(message.text) for message in turn.inputs[:-1]]  # replayed history, if any
        texts += [turn.message, turn.trusted_context]  # never the state a model wrote
        texts.extend(spec.model_dump_json() for spec in self._registry.catalog(turn.caller))
        today = self._erp.today
        check = verify_answer(end.answer, end.memories, run.operations, texts, today, end.state)
        if check.passed or self.grounding != "refuse":
            return dataclasses.replace(end, memories=check.memories, state=check.state), check
        errors.extend(failed_check_errors(check))
        refused = Outcome(refusal_text(check, run.operations), "ungrounded", {"failure": "ungrounded"})
        return refused, check

    def _record(self, turn: _Turn, run: AgentRun, end: Outcome, errors: list[str]) -> _Kept:
        """Record the turn when the recording policy says so; appends to ``errors`` what kept it from the
        store."""
        stored = turn.stored_state
        if not is_recorded(end.failure):
            return _Kept(end.answer, end.failure, dict(stored))
        rows = [
            MessageIn(role="user", content=turn.message, metadata={}),
            *step_rows(run.messages, self._answer_tools),
            MessageIn(role="assistant", content=end.answer, metadata=end.metadata),
        ]
        # The planner's state update: ERP-derived keys from the operations that ran, over the model's estado.
        record = TurnRecord(
            messages=rows, memories=end.memories, state=turn_state(stored, run.operations, end.state)
        )
        try:
            state = self._store.record_turn(
                turn.conversation_id, record, user_id=turn.caller.user_id, expected_version=stored.version
            )
        except ConversationAccessDenied as exc:  # another user created this id while the model worked
            errors.append(str(exc))
            return _Kept(user_message("input", exc), "input", dict(stored))
        except StorageError as exc:  # the answer is good; only remembering it failed
            errors.append(f"Turn not recorded: {exc}")
            if end.failure == "ungrounded":  # the refusal stands; only remembering it failed
                return _Kept(end.answer, end.failure, dict(stored))
            return _Kept(f"{end.answer}\n\n{NOT_RECORDED_NOTE}", "storage", dict(stored), answered=True)
        memories = [item.content for item in end.memories]
        answered = end.failure != "ungrounded"  # a refused answer is the ERP's text, not the model's
        return _Kept(end.answer, end.failure, dict(state), memories, True, answered, state.stale)

    def _result(
        self, turn: _Turn, run: AgentRun, kept: _Kept, errors: list[str], steps: AnswerSteps | None
    ) -> TurnResult:
        """The turn's record. Only a turn whose answer the model wrote has a ``first_answer_call``: the step
        that wrote the kept text (not a preamble before it), whichever driver ran it (text a failed stream
        showed before breaking does not count, as ``ask`` never sees it)."""
        return TurnResult(
            mode=self.mode,
            conversation_id=text_of(turn.conversation_id),
            question=text_of(turn.message),
            answer=kept.answer,
            operations=run.operations,
            plan_valid=run.plan_valid,
            memories=kept.memories,
            state=kept.state,
            **measured_figures(turn.tracker.snapshot(), turn.clock, kept.answer),
            recovered_tool_calls=run.recovered_tool_calls,
            first_answer_call=steps.last if kept.answered and steps is not None else None,
            errors=errors,
            failure=kept.failure,
            recorded=kept.recorded,
            stale_state=kept.stale_state,
        )

    def _finished(self, trace: TurnRun, turn: _Turn, result: TurnResult) -> TurnResult:
        """End the turn's bookkeeping: the parent run's outputs and the turn's log record."""
        trace.outputs["recorded"] = result.recorded
        return finish_turn(trace, logger, result, turn.caller.user_id)
