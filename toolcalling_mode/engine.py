"""The same sales assistant as a native LangChain tool-calling agent (the article's §16 alternative).

One :func:`langchain.agents.create_agent` graph is compiled per caller on their first turn, over the
registry's LangChain tools bound to the ERP, and reused for their later turns. Each entry point takes the
turn's :class:`~shared.security.Caller` as a required argument: the engine never guesses who is asking, and
compiles no agent for a default user. Each turn:

1. builds the turn's input from the ERP-owned memory, stable part first so that a provider's prompt (prefix)
   cache can reuse it (:mod:`toolcalling_mode.prompts`): the system prompt holds the instructions, the same
   every turn; ``windowed`` renders the bounded context (today, state, memories, last exchange) into the
   turn's human message, before the question; ``full_history`` replays every stored message after the
   system prompt, then a human message with today and the state before the question (see
   :meth:`ToolCallingEngine._turn_input` for why the state too);
2. runs the agent inside the turn's parent LangChain run (:mod:`shared.tracing`), with one
   :class:`~shared.llm.usage.UsageTracker` as callback, a model-call limit (``ModelCallLimitMiddleware``) and
   a recursion limit;
3. records the turn's messages (question, tool-calling steps, tool results, final answer) atomically, with
   the conversation state the planner records too (:func:`shared.state.turn_state`): what the ERP derives
   from the operations the tools ran (year, customer, product, the calls themselves), merged with the
   structured :class:`~shared.answer.Answer`'s ``estado`` when ``structured=True`` (a prose answer has
   none); only a structured answer writes memories;
4. logs the finished turn once on the ``toolcalling_mode`` logger (:func:`shared.logs.log_turn`).

Every turn reports ``plan_valid`` (:attr:`~shared.turn.TurnResult.plan_valid`): whether every tool call the
model wrote named a tool it was given, with arguments the tool's parameters model accepts, in well-formed
JSON (:meth:`ToolCallingEngine._plan_valid`).

**Three entry points, one turn.** ``ask`` (synchronous), ``aask`` and ``astream`` (asynchronous) share every
step above and differ only in how they drive the agent: ``ask`` iterates ``agent.stream``; ``aask`` and
``astream`` iterate ``agent.astream`` (models called with their async API; the registry's tools are
synchronous and LangChain runs each in the event loop's default executor; the memory store is read and
written through ``asyncio.to_thread``), ``astream`` with LangGraph's ``messages`` stream mode added so that
it can yield :mod:`shared.events` as they happen: an ``OperationDone`` when each tool result arrives, the
answer's text in ``AnswerDelta`` s as the model writes it (:mod:`toolcalling_mode._streaming` says what
counts as answer text, including what happens to text written in a step that turns out to call tools), then
``TurnDone``. ``astream`` sets ``first_answer_ms`` (when some answer text reached the reader); every entry
point sets ``simulated_first_answer_ms`` for a turn whose answer the model wrote, when every model call
reported simulated timings (the offline model under a latency profile): the calls before the one that wrote
the first answer text, plus that call's first token and the tokens it wrote before the answer.

**Callbacks.** Each entry point takes a LangChain ``RunnableConfig`` (``callbacks``, ``tags``, ``metadata``,
``run_name``): one chain run named ``"<mode> turn"`` (or ``run_name``) is the parent of the whole turn; the
compiled agent is its child (a chain run named after the mode), and every model call and tool run of the
turn descends from it, so a tracing handler sees exactly the turn's model calls under one run. Other config
keys (``recursion_limit``, ``configurable``, …) are not passed on: the engine's own limits bound the turn.

No entry point raises for input, storage, model, tool or provider failures: every turn ends in a
:class:`TurnResult` whose ``failure`` is ``None`` or one kind of the contract in :mod:`shared.failures`, the
same as planner mode's. Only :class:`~shared.errors.ConversationAccessDenied` is raised (before any context
read, model call or event). **Recording policy** (the same in both modes): a turn is recorded only when the
model wrote its final answer, including ``invalid_plan`` (every tool call it made was refused as invalid and
none ran) and ``operation_error`` (a tool broke inside the ERP) turns. A turn that ends on a provider failure,
a timeout, unusable output (empty, cut at the output cap, no structured answer when one was asked for), a
limit, a refused input or a storage error leaves the conversation untouched; so does a stream that fails
midway, or whose consumer stops reading before ``TurnDone`` (recording happens just before it).
"""

from __future__ import annotations

import asyncio
import logging
import threading
import uuid
from collections import OrderedDict
from collections.abc import AsyncGenerator, Sequence
from contextlib import aclosing
from dataclasses import dataclass, field
from time import perf_counter
from typing import TYPE_CHECKING, Any, Literal

from langchain.agents import create_agent
from langchain.agents.middleware import ModelCallLimitMiddleware
from langchain.agents.structured_output import ProviderStrategy, StructuredOutputError, ToolStrategy
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.runnables import RunnableConfig
from langgraph.errors import GraphRecursionError

from shared.answer import Answer, MemoryItem
from shared.errors import (
    ConfigurationError,
    ConversationAccessDenied,
    ErpAiError,
    ModelOutputError,
    OperationError,
    StorageError,
)
from shared.events import AnswerDelta, OperationDone, TurnDone, TurnEvent
from shared.failures import NOT_RECORDED_NOTE, failure_kind_of, is_recorded, user_message
from shared.inputs import check_turn_input
from shared.llm.factory import configured_max_tokens
from shared.llm.provider_errors import as_erp_error
from shared.llm.usage import UsageTracker
from shared.logs import log_turn
from shared.memory.context import ConversationContext, render_context
from shared.memory.store import MessageIn, TurnRecord, VersionedState
from shared.security import Caller, require_caller
from shared.state import turn_state
from shared.text import strip_reasoning
from shared.tracing import TurnRun, aturn_run, turn_run
from shared.turn import ExecutedOperation, FailureKind, TurnResult
from toolcalling_mode._middleware import TurnContext, TurnMiddleware, count_recovered, executed_operation
from toolcalling_mode._streaming import AnswerSteps, FirstAnswer, simulated_first_answer_ms
from toolcalling_mode.history import (
    answered_ids,
    message_text,
    to_langchain_messages,
    tool_call_metadata,
    tool_result_metadata,
)
from toolcalling_mode.limits import ToolCallingLimits
from toolcalling_mode.prompts import system_prompt, turn_message
from toolcalling_mode.text_tool_calls import TextToolCallRecovery, looks_like_text_tool_call

if TYPE_CHECKING:
    from shared.erp.database import Erp
    from shared.memory.store import MemoryStore
    from shared.operations.registry import OperationRegistry

ContextPolicy = Literal["windowed", "full_history"]
StructuredStrategy = Literal["auto", "provider", "tool"]
StopReason = Literal["done", "model_calls", "recursion", "failed"]

AGENT_CACHE_SIZE = 256
"""Compiled agents kept, one per recent caller (their tools are bound to the caller's scope)."""

logger = logging.getLogger("toolcalling_mode")

_MODEL_NODE = "model"
"""The node of ``create_agent``'s graph that calls the model (the ``messages`` stream is filtered on it)."""

_LIMIT_MESSAGE_PREFIX = "Model call limits exceeded"
"""How ``ModelCallLimitMiddleware(exit_behavior="end")`` words the AI message it injects."""


@dataclass
class _Turn:
    """What a turn knows from its first line: who asks what, when it started, and its usage tracker."""

    conversation_id: str
    message: str
    caller: Caller
    started: float = field(default_factory=perf_counter)
    tracker: UsageTracker = field(default_factory=UsageTracker)
    first_answer_ms: float | None = None
    """Measured time to the first answer text (``astream`` only)."""
    steps: AnswerSteps | None = None
    """The answer decoders ``astream`` fed live; ``None`` for ``ask``/``aask`` (replayed from the run)."""

    def __post_init__(self) -> None:
        self.caller = require_caller(self.caller)  # before anything reads it (trace inputs, access check)

    @property
    def trace_inputs(self) -> dict[str, Any]:
        """The inputs of the turn's parent run."""
        return {
            "conversation_id": _text(self.conversation_id),
            "message": _text(self.message),
            "user_id": self.caller.user_id,
        }


@dataclass
class _Prepared:
    """A turn ready to run: the caller's agent, its input messages and runtime context."""

    agent: Any
    inputs: list[BaseMessage]
    context: TurnContext
    stored_state: VersionedState
    """The conversation's state before the turn (reported unchanged when the turn is not recorded)."""


@dataclass
class _AgentRun:
    """What one agent run left behind."""

    messages: list[BaseMessage]
    """Messages the run added after the input messages."""
    structured: Answer | None = None
    stop: StopReason = "done"
    error: ErpAiError | None = None
    """Why the run failed (``stop == "failed"``), in the project's exception tree."""
    operations: list[ExecutedOperation] = field(default_factory=list)
    plan_valid: bool | None = None
    """Whether the model's tool calls were valid requests (``None``: the run holds no model reply)."""
    recovered_tool_calls: int = 0
    """Tool calls written as text and recovered into real ones."""


class ToolCallingEngine:
    """A LangChain tool-calling agent over the sales registry, with ERP-owned memory."""

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
    ) -> None:
        """Configure the engine; each caller's agent is compiled on the caller's first turn (see
        :meth:`_agent_for`): the engine has no default caller, so it compiles none up front.

        Args:
            registry: The operations offered as tools (``registry.langchain_tools(erp, caller=...)``).
            erp: The ERP the tools run against; its ``today`` goes into every turn's prompt.
            store: The conversation memory (same tables as planner mode).
            model: Any LangChain chat model that supports ``bind_tools``.
            policy: ``windowed`` (bounded context before the question) or ``full_history`` (replay all).
            structured: Ask for a structured final :class:`Answer` (``respuesta``, ``memoria``, ``estado``).
            limits: Model-call and recursion limits per turn.
            structured_strategy: ``auto`` lets LangChain pick ``ProviderStrategy`` when the model's
                profile declares native structured output and ``ToolStrategy`` otherwise;
                ``provider`` or ``tool`` forces one.
            recover_text_tool_calls: Recover a reply that is only tool calls written as text (a fenced or
                bare ``{"name", "arguments"}`` object, ``<tool_call>`` tags) into those tool calls, for the
                tools offered (:mod:`toolcalling_mode.text_tool_calls`). ``False``: such a reply ends the
                turn as ``model_output`` with ``plan_valid`` False, as it does anyway for a tool not offered.

        Raises:
            ValueError: an unknown ``policy``.
            ConfigurationError: ``model`` is a chat model that cannot bind tools.
        """
        if policy not in ("windowed", "full_history"):
            raise ValueError(f"Unknown context policy {policy!r}; use 'windowed' or 'full_history'.")
        _check_tool_calling(model)
        self.mode: str = "toolcalling" if policy == "windowed" else "toolcalling-full"
        self.policy: ContextPolicy = policy
        self.structured = structured
        self.limits = limits or ToolCallingLimits()
        self.recover_text_tool_calls = recover_text_tool_calls
        self._registry = registry
        self._erp = erp
        self._store = store
        self._max_tokens = configured_max_tokens(model)
        self._structured_tool_names = (
            {spec.name for spec in ToolStrategy(Answer).schema_specs} if structured else set()
        )
        self._answer_field = "respuesta" if structured else None
        self._model = model
        self._response_format: Any = _response_format(structured_strategy) if structured else None
        self._agents: OrderedDict[tuple[str, frozenset[str]], Any] = OrderedDict()
        self._agents_lock = threading.Lock()

    # -- public -----------------------------------------------------------------------------------------

    def ask(
        self,
        conversation_id: str,
        message: str,
        caller: Caller,
        *,
        config: RunnableConfig | None = None,
    ) -> TurnResult:
        """Answer ``message`` in ``conversation_id`` (created for ``caller`` if unknown) and record the turn.

        The agent is offered only the tools ``caller`` may run, and each tool runs within the caller's data
        scope. ``config`` (``callbacks``, ``tags``, ``metadata``, ``run_name``) applies to the turn's parent
        run, which contains every model call of the turn. Raises
        :class:`~shared.errors.ConversationAccessDenied` (before any context read or model call) when the
        conversation belongs to another user; every other failure ends in the result.

        ``caller`` is required, in every entry point: the user the embedding application authenticated. It
        decides which tools the agent is offered and which rows they show, so the engine never guesses who
        is asking (there is no default user; the single-user demo passes ``shared.security.DEMO_CALLER``).
        A ``caller`` that is not a :class:`~shared.security.Caller` (a user id string, ``None``) raises
        ``TypeError`` before anything runs.
        """
        turn = _Turn(conversation_id, message, caller)
        with turn_run(config, mode=self.mode, inputs=turn.trace_inputs) as trace:
            prepared = self._prepare(turn)
            if isinstance(prepared, TurnResult):
                return self._finished(trace, turn, prepared)
            state: dict[str, Any] = {}
            failure: Exception | None = None
            try:
                for values in prepared.agent.stream(
                    {"messages": prepared.inputs},
                    config=self._agent_config(trace, turn),
                    context=prepared.context,
                    stream_mode="values",
                ):
                    state = values  # keep the last state: a limit or a failure ends the stream early
            except Exception as exc:  # classified in _agent_run: the turn ends, not the caller
                failure = exc
            result = self._conclude(turn, prepared, self._agent_run(prepared, state, failure))
            return self._finished(trace, turn, result)

    async def aask(
        self,
        conversation_id: str,
        message: str,
        caller: Caller,
        *,
        config: RunnableConfig | None = None,
    ) -> TurnResult:
        """:meth:`ask` without blocking the event loop: the same turn, driven with ``agent.astream``.
        ``caller`` is required, as in :meth:`ask`."""
        result: TurnResult | None = None
        async with aclosing(self._aturn(conversation_id, message, caller, config, stream=False)) as events:
            async for event in events:
                if isinstance(event, TurnDone):
                    result = event.result
        assert result is not None  # _aturn always ends with TurnDone (or raises)
        return result

    async def astream(
        self,
        conversation_id: str,
        message: str,
        caller: Caller,
        *,
        config: RunnableConfig | None = None,
    ) -> AsyncGenerator[TurnEvent, None]:
        """The turn of :meth:`ask` as events: ``OperationDone`` per tool result as it arrives,
        ``AnswerDelta`` s of the answer as the model writes it, then ``TurnDone`` (always last; the turn is
        recorded just before it). ``caller`` is required, as in :meth:`ask`. Raises
        ``ConversationAccessDenied`` (or ``TypeError`` for a ``caller`` that is not a ``Caller``) before the
        first event.

        A consumer that stops early should close the generator (``contextlib.aclosing``): the agent run
        stops at once and nothing is recorded."""
        async with aclosing(self._aturn(conversation_id, message, caller, config, stream=True)) as events:
            async for event in events:
                yield event

    # -- one turn, three drivers ----------------------------------------------------------------------------

    async def _aturn(
        self,
        conversation_id: str,
        message: str,
        caller: Caller,
        config: RunnableConfig | None,
        *,
        stream: bool,
    ) -> AsyncGenerator[TurnEvent, None]:
        """The async driver of :meth:`aask` (``stream=False``: only ``TurnDone``) and :meth:`astream`."""
        turn = _Turn(conversation_id, message, caller)
        async with aturn_run(config, mode=self.mode, inputs=turn.trace_inputs) as trace:
            prepared = await asyncio.to_thread(self._prepare, turn)
            if isinstance(prepared, TurnResult):
                yield TurnDone(result=self._finished(trace, turn, prepared))
                return
            if stream:
                turn.steps = AnswerSteps(self._answer_field, self._structured_tool_names)
            announced: set[str] = set()
            state: dict[str, Any] = {}
            failure: Exception | None = None
            try:
                async with aclosing(
                    prepared.agent.astream(
                        {"messages": prepared.inputs},
                        config=self._agent_config(trace, turn),
                        context=prepared.context,
                        stream_mode=["values", "messages"] if stream else "values",
                    )
                ) as chunks:
                    async for chunk in chunks:
                        if not stream:
                            state = chunk
                            continue
                        kind, item = chunk
                        if kind == "values":
                            state = item
                            continue
                        for event in self._events(turn, prepared, state, item, announced):
                            yield event
            except Exception as exc:  # classified in _agent_run, as in ask
                failure = exc
            if turn.steps is not None:  # the last step ended: what its decoders held back
                for event in _answer_delta(turn, turn.steps.finish()):
                    yield event
            run = self._agent_run(prepared, state, failure)
            if stream:  # an operation the messages stream did not show (none known): still one event each
                for operation in run.operations:
                    if operation.id is None or operation.id not in announced:
                        yield OperationDone(operation=operation)
            result = await asyncio.to_thread(self._conclude, turn, prepared, run)
            yield TurnDone(result=self._finished(trace, turn, result))

    def _events(
        self,
        turn: _Turn,
        prepared: _Prepared,
        state: dict[str, Any],
        item: tuple[BaseMessage, dict[str, Any]],
        announced: set[str],
    ) -> list[TurnEvent]:
        """The events of one item of LangGraph's ``messages`` stream: answer text of a model step, or the
        result of one tool call."""
        message, metadata = item
        events: list[TurnEvent] = []
        if isinstance(message, AIMessage) and metadata.get("langgraph_node") == _MODEL_NODE:
            assert turn.steps is not None
            events.extend(_answer_delta(turn, turn.steps.feed(message)))
        elif (
            isinstance(message, ToolMessage)
            and message.name not in self._structured_tool_names
            and message.tool_call_id not in announced
        ):
            announced.add(message.tool_call_id)
            calls = _tool_calls_by_id(state.get("messages", []))
            events.append(OperationDone(operation=_operation_for(message, calls, prepared.context)))
        return events

    def _finished(self, trace: TurnRun, turn: _Turn, result: TurnResult) -> TurnResult:
        """End the turn's bookkeeping: the parent run's outputs and the turn's log record."""
        trace.outputs.update(answer=result.answer, failure=result.failure, recorded=result.recorded)
        log_turn(logger, result, turn.caller.user_id)
        return result

    # -- turn input ---------------------------------------------------------------------------------------

    def _prepare(self, turn: _Turn) -> _Prepared | TurnResult:
        """Check the input and the caller's access, read the turn's context, pick the caller's agent.

        Returns the failed turn's result when the input or the store is refused before any model call;
        raises ``ConversationAccessDenied``. Synchronous (storage): the async drivers run it in a thread.
        """
        try:
            check_turn_input(turn.conversation_id, turn.message)
            self._store.check_access(turn.conversation_id, turn.caller.user_id)
            # record_turn creates an unknown conversation in the turn's own transaction: one write per turn.
            system_message, prior, human, stored_state = self._turn_input(turn.conversation_id, turn.message)
        except ConversationAccessDenied:
            raise
        except ErpAiError as exc:  # InputError or StorageError: refused before any model call
            kind = failure_kind_of(exc)
            return self._result(
                turn, _AgentRun(messages=[]), user_message(kind, exc), errors=[str(exc)], failure=kind
            )
        inputs = [*prior, HumanMessage(content=human)]
        for message in inputs:
            message.id = message.id or f"in-{uuid.uuid4().hex}"
        return _Prepared(
            agent=self._agent_for(turn.caller),
            inputs=inputs,
            context=TurnContext(system_message, caller=turn.caller),
            stored_state=stored_state,
        )

    def _turn_input(
        self, conversation_id: str, message: str
    ) -> tuple[SystemMessage, list[BaseMessage], str, VersionedState]:
        """The system message, the replayed messages, the text of the turn's human message (for this turn's
        policy; the store records ``message`` itself) and the stored state.

        Both policies show the stored conversation state before the question, as the planner's call 1 does.
        ``full_history`` replays every message, so the ERP-derived keys repeat facts its replayed tool calls
        already show; it gets the state anyway, so that every mode's model reads the same kind of state and
        the two policies differ only in how they give the rest (the replay, or memories and the last
        exchange): without it, the keys only the model writes (``tema``, with ``structured=True``) would be
        stored and never read, and a follow-up ("¿y en 2024?") would have to find the last operations in the
        whole history. The cost, measured on the default suite with the offline model: input tokens +0.8%,
        and a smaller prefix-cache hit (cached share of input 97.2% → 96.6%): the store keeps the question
        as the user wrote it, so the previous turn, sent after its own context, is re-read once; everything
        before it stays a cached prefix. Today's date travels with the state, so the system prompt is the
        same every day.
        """
        if self.policy == "windowed":
            context = self._store.build_context(conversation_id, self._erp.today)
            state = VersionedState(context.estado, version=context.version)
            prior: list[BaseMessage] = []
        else:
            # The state (and its version) first: the version is never newer than the messages replayed.
            state = self._store.get_state(conversation_id)
            prior = to_langchain_messages(self._store.history(conversation_id))
            context = ConversationContext(hoy=self._erp.today, estado=dict(state))
        system = SystemMessage(content=system_prompt(structured=self.structured))
        return system, prior, turn_message(message, render_context(context)), state

    # -- running -------------------------------------------------------------------------------------------

    def _agent_for(self, caller: Caller) -> Any:
        """The compiled agent of ``caller``: only their permitted tools, each running in their data scope.

        Compiled on the caller's first turn (none at construction: the engine has no default caller) and
        kept for the most recent callers (:data:`AGENT_CACHE_SIZE`), since compiling costs a few
        milliseconds. The cache is shared by threads: two first turns of one caller at once may both
        compile, and both use the agent cached first. A compilation error raises out of that first turn.
        """
        key = (caller.user_id, caller.roles)  # what the tools depend on (not the display name)
        with self._agents_lock:
            agent = self._agents.get(key)
            if agent is not None:
                self._agents.move_to_end(key)
                return agent
        middleware: list[Any] = [
            TurnMiddleware(self._registry, self._max_tokens),
            ModelCallLimitMiddleware(run_limit=self.limits.model_calls, exit_behavior="end"),
        ]
        if self.recover_text_tool_calls:
            recovery = TextToolCallRecovery(
                excluded=self._structured_tool_names, on_recovered=count_recovered
            )
            middleware.insert(1, recovery)  # inside TurnMiddleware: the output cap is checked on the reply
        agent = create_agent(
            self._model,
            tools=self._registry.langchain_tools(self._erp, caller=caller),
            middleware=middleware,
            response_format=self._response_format,
            context_schema=TurnContext,
            name=self.mode,
        )
        with self._agents_lock:
            agent = self._agents.setdefault(key, agent)  # a concurrent first turn's agent, if it won
            self._agents.move_to_end(key)
            while len(self._agents) > AGENT_CACHE_SIZE:
                self._agents.popitem(last=False)
        return agent

    def _agent_config(self, trace: TurnRun, turn: _Turn) -> RunnableConfig:
        """The agent's config: a child of the turn's run, with the usage tracker and the recursion limit."""
        return trace.child_config(turn.tracker, recursion_limit=self.limits.recursion_limit)

    def _agent_run(self, prepared: _Prepared, state: dict[str, Any], failure: Exception | None) -> _AgentRun:
        """What the run left: the last state it streamed (a limit or a failure ends the stream early) and
        the exception it ended on, in the project's terms."""
        stop: StopReason = "done"
        error: ErpAiError | None = None
        if isinstance(failure, GraphRecursionError):
            stop = "recursion"
        elif isinstance(failure, StructuredOutputError):
            stop, error = "failed", ModelOutputError(f"No usable structured answer: {failure}")
        elif failure is not None:  # any provider/SDK failure ends the turn, not the caller
            stop, error = "failed", as_erp_error(failure, max_tokens=self._max_tokens)
        input_ids = {message.id for message in prepared.inputs}
        new = [m for m in state.get("messages", []) if m.id not in input_ids]
        if stop == "done" and new and _is_limit_message(new[-1]):
            stop = "model_calls"
            new = new[:-1]
        structured = state.get("structured_response")  # an Answer: both strategies parse into the schema
        plan_valid = self._plan_valid(new, prepared.context.caller)
        if plan_valid is None and isinstance(error, ModelOutputError):
            # A reply was read but was unusable (cut at the output cap: the agent never kept it), as the
            # planner counts a call 1 it could not read as a plan: an invalid request, not an unknown one.
            plan_valid = False
        return _AgentRun(
            messages=new,
            structured=structured if isinstance(structured, Answer) else None,
            stop=stop,
            error=error,
            operations=self._operations(new, prepared.context),
            plan_valid=plan_valid,
            recovered_tool_calls=prepared.context.recovered_tool_calls,
        )

    def _operations(self, messages: Sequence[BaseMessage], context: TurnContext) -> list[ExecutedOperation]:
        """One ExecutedOperation per tool result, in the order the results entered the conversation."""
        calls = _tool_calls_by_id(messages)
        return [
            _operation_for(message, calls, context)
            for message in messages
            if isinstance(message, ToolMessage) and message.name not in self._structured_tool_names
        ]

    def _plan_valid(self, messages: Sequence[BaseMessage], caller: Caller) -> bool | None:
        """Whether every tool call of the model's replies in ``messages`` was a valid request.

        ``False`` as soon as one was not: a malformed call (``invalid_tool_calls``: JSON the provider could
        not parse), or a call the registry's validation refuses for ``caller``: an unknown tool, a tool the
        caller was not given (the agent offers only the permitted tools, so to the model it is as unknown as
        a hallucinated one, and the planner's validation refuses it too), or arguments its parameters model
        rejects. The tools run the same validation, so this is the judgement their errors reflect
        (``error_kind == "invalid"``), made here on every call as written, including calls that never ran
        (a limit or a failure ended the turn first). A permitted call the ERP refused on its data or the
        caller's scope (no such customer, a customer of another salesperson) was a valid request. The
        structured answer's own tool (``ToolStrategy``) is not a request for an operation. ``True`` for
        replies without tool calls; ``None`` when there is no reply (the first model call failed; a first
        reply cut at the output cap counts as invalid instead, see :meth:`_agent_run`).
        """
        replies = [message for message in messages if isinstance(message, AIMessage)]
        if not replies:
            return None
        for reply in replies:
            if any(call.get("name") not in self._structured_tool_names for call in reply.invalid_tool_calls):
                return False
            if not reply.tool_calls and looks_like_text_tool_call(message_text(reply)):
                return False  # a tool call written as text and left so: not a request the agent could run
            for call in reply.tool_calls:
                if call["name"] in self._structured_tool_names:
                    continue
                try:
                    self._registry.validate(call["name"], call["args"], caller=caller)
                except OperationError:
                    return False
        return True

    # -- outcome ------------------------------------------------------------------------------------------

    def _conclude(self, turn: _Turn, prepared: _Prepared, run: _AgentRun) -> TurnResult:
        """The turn's outcome, recorded when the recording policy says so. Synchronous (storage): the async
        drivers run it in a thread."""
        errors = [_operation_error(op, self._registry) for op in run.operations if op.error is not None]
        outcome = self._outcome(run, turn.tracker, errors)
        stored_state = prepared.stored_state
        if not is_recorded(outcome.failure):
            return self._result(
                turn, run, outcome.answer, errors=errors, failure=outcome.failure, state=stored_state
            )
        rows = [
            MessageIn(role="user", content=turn.message, metadata={}),
            *self._step_rows(run.messages),
            MessageIn(role="assistant", content=outcome.answer, metadata=outcome.metadata),
        ]
        # The same state update the planner records: ERP-derived keys from the operations that ran, over
        # the structured answer's estado (empty for a prose answer).
        update = turn_state(stored_state, run.operations, outcome.state)
        record = TurnRecord(messages=rows, memories=outcome.memories, state=update)
        try:
            state = self._store.record_turn(
                turn.conversation_id,
                record,
                user_id=turn.caller.user_id,
                expected_version=stored_state.version,
            )
        except ConversationAccessDenied as exc:  # another user created this id while the model worked
            errors.append(str(exc))
            answer = user_message("input", exc)
            return self._result(turn, run, answer, errors=errors, failure="input", state=stored_state)
        except StorageError as exc:  # the answer is good; only remembering it failed
            errors.append(f"Turn not recorded: {exc}")
            answer = f"{outcome.answer}\n\n{NOT_RECORDED_NOTE}"
            return self._result(
                turn, run, answer, errors=errors, failure="storage", state=stored_state, answered=True
            )
        memories = [item.contenido for item in outcome.memories]
        return self._result(
            turn,
            run,
            outcome.answer,
            errors=errors,
            failure=outcome.failure,
            state=state,
            memories=memories,
            recorded=True,
            answered=True,
            stale_state=state.stale,
        )

    def _result(
        self,
        turn: _Turn,
        run: _AgentRun,
        answer: str,
        *,
        errors: list[str],
        failure: FailureKind | None,
        state: dict[str, Any] | None = None,
        memories: list[str] | None = None,
        recorded: bool = False,
        answered: bool = False,
        stale_state: bool = False,
    ) -> TurnResult:
        """The turn's record (``state``: the conversation's state after the turn, stored or unchanged).

        ``answered``: the model wrote the turn's answer (recorded, or lost only by storage); only then is
        there a simulated time to the first answer token, whichever driver ran the turn (text that a failed
        stream showed before breaking does not count, as ``ask`` never sees it).
        """
        tracker = turn.tracker
        first: FirstAnswer | None = None
        if answered:
            steps = turn.steps or AnswerSteps.replay(
                self._answer_field, self._structured_tool_names, run.messages
            )
            first = steps.first
        total_ms = (perf_counter() - turn.started) * 1000
        return TurnResult(
            mode=self.mode,
            conversation_id=_text(turn.conversation_id),
            question=_text(turn.message),
            answer=answer,
            operations=run.operations,
            plan_valid=run.plan_valid,
            memories=memories or [],
            state=state or {},
            model_calls=tracker.calls,
            input_tokens=tracker.input_tokens,
            output_tokens=tracker.output_tokens,
            cached_input_tokens=tracker.cached_input_tokens,
            usage_reported=tracker.unreported_calls == 0,
            connection_retries=tracker.connection_retries,
            recovered_tool_calls=run.recovered_tool_calls,
            model_ms=tracker.model_ms,
            simulated_model_ms=tracker.simulated_model_ms,
            first_answer_ms=turn.first_answer_ms,
            simulated_first_answer_ms=simulated_first_answer_ms(
                tracker.simulated_calls, tracker.calls, first
            ),
            harness_ms=max(0.0, total_ms - tracker.model_ms),
            total_ms=total_ms,
            errors=errors,
            failure=failure,
            recorded=recorded,
            stale_state=stale_state,
        )

    def _outcome(self, run: _AgentRun, tracker: UsageTracker, errors: list[str]) -> _Outcome:
        """How the run ends for the user and the store (see the failure contract); appends to ``errors``."""
        if run.stop == "failed":
            error = run.error or ModelOutputError("The agent run failed")
            errors.append(f"{type(error).__name__}: {error}")
            kind = failure_kind_of(error)
            return _Outcome(user_message(kind, error), failure=kind)
        if run.stop == "recursion":
            errors.append(f"Recursion limit reached ({self.limits.recursion_limit} agent steps)")
            return _Outcome(user_message("limit"), failure="limit")
        if run.stop == "model_calls":
            errors.append(f"Model call limit reached ({tracker.calls}/{self.limits.model_calls} calls)")
            return _Outcome(user_message("limit"), failure="limit")
        failure = _operations_failure(run.operations)
        metadata: dict[str, Any] = {"failure": failure} if failure is not None else {}
        if run.structured is not None:
            structured = run.structured
            return _Outcome(
                structured.respuesta,
                failure=failure,
                metadata=metadata,
                memories=list(structured.memoria),
                state=dict(structured.estado),
            )
        final = next(
            (m for m in reversed(run.messages) if isinstance(m, AIMessage) and not m.tool_calls), None
        )
        # A reasoning model's <think>…</think> is not part of the answer the user reads or the ERP stores.
        text = strip_reasoning(message_text(final)) if final is not None else ""
        unusable: ModelOutputError | None = None  # (a reply cut at the cap already failed in TurnMiddleware)
        if self.structured:
            unusable = ModelOutputError("The model ended the turn without a structured answer.", raw=text)
        elif not text:
            unusable = ModelOutputError("The model's final answer is empty.")
        elif looks_like_text_tool_call(text):
            why = (
                "recovery is off" if not self.recover_text_tool_calls else "it names a tool it was not given"
            )
            unusable = ModelOutputError(
                f"The model wrote a tool call as text instead of calling the tool ({why}).", raw=text
            )
        if unusable is not None:
            errors.append(f"{type(unusable).__name__}: {unusable}")
            return _Outcome(user_message("model_output", unusable), failure="model_output")
        return _Outcome(text, failure=failure, metadata=metadata)

    def _step_rows(self, messages: Sequence[BaseMessage]) -> list[MessageIn]:
        """Rows for the tool-calling steps: assistant messages with ``tool_calls`` and their tool results."""
        answered = answered_ids(messages)
        rows: list[MessageIn] = []
        open_calls: set[str] = set()
        for message in messages:
            if isinstance(message, AIMessage):
                calls = [
                    call
                    for call in tool_call_metadata(message, answered)
                    if call["name"] not in self._structured_tool_names
                ]
                if calls:
                    rows.append(
                        MessageIn(
                            role="assistant", content=message_text(message), metadata={"tool_calls": calls}
                        )
                    )
                    open_calls.update(str(call["id"]) for call in calls)
            elif isinstance(message, ToolMessage) and message.tool_call_id in open_calls:
                rows.append(
                    MessageIn(
                        role="tool", content=message_text(message), metadata=tool_result_metadata(message)
                    )
                )
        return rows


@dataclass
class _Outcome:
    """How a finished agent run ends: the user's answer, the failure kind, what the store keeps."""

    answer: str
    failure: FailureKind | None = None
    metadata: dict[str, Any] = field(default_factory=dict)
    """Metadata of the final assistant message."""
    memories: list[MemoryItem] = field(default_factory=list)
    state: dict[str, Any] = field(default_factory=dict)
    """The model's ``estado`` (structured answers only); the ERP's derived keys are merged over it."""


def _operations_failure(operations: Sequence[ExecutedOperation]) -> FailureKind | None:
    """``operation_error`` when a tool broke in the ERP; ``invalid_plan`` when every call was refused as
    invalid (unknown tool, invalid arguments) and none ran; otherwise ``None``."""
    if any(op.error_kind == "internal" for op in operations):
        return "operation_error"
    if operations and all(op.error_kind == "invalid" for op in operations):
        return "invalid_plan"
    return None


def _check_tool_calling(model: BaseChatModel) -> None:
    """Refuse a chat model that cannot bind tools, before any turn: it would otherwise fail every turn, as
    an unexplained provider failure (``BaseChatModel.bind_tools`` raises a bare ``NotImplementedError``).

    Cheap, so checked at construction. Anything that is not a ``BaseChatModel`` (a configurable model, a
    binding) is left to its first turn.
    """
    if isinstance(model, BaseChatModel) and type(model).bind_tools is BaseChatModel.bind_tools:
        raise ConfigurationError(
            f"{type(model).__name__} does not support tool calling (it does not implement bind_tools). "
            "Tool-calling mode needs a chat model that does (the offline model, ChatOpenAI, ChatOllama, "
            "ChatGoogleGenerativeAI); planner mode needs none."
        )


def _response_format(strategy: StructuredStrategy) -> Any:
    if strategy == "provider":
        return ProviderStrategy(Answer)
    if strategy == "tool":
        return ToolStrategy(Answer)
    return Answer  # AutoStrategy: ProviderStrategy if the model's profile supports it, else ToolStrategy


def _is_limit_message(message: BaseMessage) -> bool:
    return (
        isinstance(message, AIMessage)
        and not message.tool_calls
        and message_text(message).startswith(_LIMIT_MESSAGE_PREFIX)
    )


def _operation_error(operation: ExecutedOperation, registry: OperationRegistry) -> str:
    if operation.funcion not in registry:
        return f"Unknown tool {operation.funcion!r} requested by the model: {operation.error}"
    return f"Tool {operation.funcion!r} failed: {operation.error}"


def _text(value: object) -> str:
    """``value`` if it is text; a refused non-text input (``None``, bytes) is recorded by its ``repr``."""
    return value if isinstance(value, str) else repr(value)


def _answer_delta(turn: _Turn, text: str) -> list[TurnEvent]:
    """``text`` as an ``AnswerDelta`` (none when empty); the first one sets ``turn.first_answer_ms``."""
    if not text:
        return []
    if turn.first_answer_ms is None:
        turn.first_answer_ms = (perf_counter() - turn.started) * 1000
    return [AnswerDelta(text=text)]


def _tool_calls_by_id(messages: Sequence[BaseMessage]) -> dict[str, tuple[str, Any]]:
    """``(name, args)`` of every tool call the AI messages in ``messages`` asked for, by call id."""
    calls: dict[str, tuple[str, Any]] = {}
    for message in messages:
        if isinstance(message, AIMessage):
            for call in message.tool_calls:
                calls[str(call["id"])] = (call["name"], call["args"])
            for invalid in message.invalid_tool_calls:
                calls[str(invalid.get("id"))] = (invalid.get("name") or "", {})
    return calls


def _operation_for(
    message: ToolMessage, calls: dict[str, tuple[str, Any]], context: TurnContext
) -> ExecutedOperation:
    """The operation a tool result reports: as the middleware recorded it, else rebuilt from the result."""
    with context.lock:
        recorded = context.operations.get(message.tool_call_id)
    if recorded is None:  # e.g. a malformed call answered by the agent without running a tool
        name, args = calls.get(message.tool_call_id, (message.name or "", {}))
        recorded = executed_operation(name, args, message.tool_call_id, message, 0.0)
    return recorded
