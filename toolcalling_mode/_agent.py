"""Each caller's compiled :func:`langchain.agents.create_agent` graph and its per-turn middleware.

The graph holds the registry's tools bound to the caller's scope, the turn middleware, the model-call limit
and the structured answer's format. What changes per turn travels in the runtime context
(:class:`TurnContext`), so one compiled agent serves every conversation. Agents run asynchronously only.
"""

from __future__ import annotations

import asyncio
import functools
import json
import threading
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from time import perf_counter
from typing import TYPE_CHECKING, Any, Literal

from langchain.agents import create_agent
from langchain.agents.middleware import (
    AgentMiddleware,
    ModelCallLimitMiddleware,
    ModelRequest,
    ModelResponse,
    ToolCallRequest,
)
from langchain.agents.structured_output import ProviderStrategy, ToolStrategy
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, SystemMessage, ToolCall, ToolMessage
from langgraph.errors import GraphBubbleUp
from langgraph.types import Command

from shared.answer import Answer
from shared.bounds import MAX_OPERATIONS_PER_TURN, RAW_SHOWN_CHARS, clip_text, reply_max_chars
from shared.errors import (
    INTERNAL_ERROR_PREFIX,
    ConfigurationError,
    OperationError,
    OutputLimitError,
    ReplyTooLongError,
    TurnLimitError,
)
from shared.llm.provider_errors import stopped_at_limit
from shared.operations.registry import OperationRegistry, internal_error
from shared.security import Caller
from shared.turn import ExecutedOperation, OperationErrorKind
from toolcalling_mode.limits import ToolCallingLimits
from toolcalling_mode.text_tool_calls import recover_text_tool_calls

if TYPE_CHECKING:
    from shared.erp.database import Erp

StructuredStrategy = Literal["auto", "provider", "tool"]

AGENT_CACHE_SIZE = 256
"""Compiled agents kept, one per recent caller (their tools are bound to the caller's scope)."""

REPEAT_NOTE = "(Resultado ya obtenido en este turno; no se volvió a ejecutar.)"
"""What the model reads before the earlier result when it repeats a call it already has the result of."""


@dataclass(frozen=True)
class FirstCall:
    """The call that ran an operation in a turn: what an identical call of the turn gets without running."""

    operation: ExecutedOperation
    """Its record (succeeded)."""
    content: str
    """The result the model read."""


@dataclass
class TurnContext:
    """What one turn gives the compiled agent."""

    system_message: SystemMessage
    caller: Caller
    """Who the turn runs for (the tools are already bound to them; used to judge refused calls)."""
    operations: dict[str, ExecutedOperation] = field(default_factory=dict)
    """Executed tool calls, by tool call id."""
    first_calls: dict[str, asyncio.Future[FirstCall | None]] = field(default_factory=dict)
    """The call running or done for each distinct operation, by canonical call (name and validated
    parameters): its future holds the :class:`FirstCall` once it succeeded, ``None`` if it failed (a failed
    call leaves no entry, so an identical one runs again)."""
    recovered_tool_calls: int = 0
    requested_operations: int = 0
    """Tool calls the model asked for so far this turn (recovered ones and repeats included)."""
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    """Tool calls of one step run in parallel threads (the registry's tools are synchronous)."""


def agent_factory(
    registry: OperationRegistry,
    erp: Erp,
    model: BaseChatModel,
    *,
    name: str,
    limits: ToolCallingLimits,
    max_tokens: int | None,
    structured_strategy: StructuredStrategy | None,
    answer_tools: frozenset[str],
    recover_text_tool_calls: bool,
) -> Callable[[Caller], Any]:
    """Each caller's compiled agent: only their permitted tools, each running in their data scope.

    Compiled on the caller's first turn (there is no default caller) and kept for the most recent callers,
    since compiling costs a few milliseconds. ``structured_strategy``: ``None`` for a prose answer;
    ``answer_tools``: the structured answer's own tool names (never recovered from text).
    """
    # BaseChatModel.bind_tools raises a bare NotImplementedError: refuse such a model before any turn.
    if isinstance(model, BaseChatModel) and type(model).bind_tools is BaseChatModel.bind_tools:
        raise ConfigurationError(
            f"{type(model).__name__} does not support tool calling (it does not implement bind_tools). "
            "Tool-calling mode needs a chat model that does (the offline model, ChatOpenAI, ChatOllama, "
            "ChatGoogleGenerativeAI); planner mode needs none."
        )
    # "auto": LangChain's AutoStrategy (ProviderStrategy if the model's profile supports it)
    formats: dict[str | None, Any] = {"provider": ProviderStrategy(Answer), "tool": ToolStrategy(Answer)}
    response_format = formats.get(structured_strategy, Answer if structured_strategy else None)
    recover_excluding = answer_tools if recover_text_tool_calls else None

    @functools.lru_cache(maxsize=AGENT_CACHE_SIZE)
    def compiled(user_id: str, roles: frozenset[str]) -> Any:
        return create_agent(
            model,
            tools=registry.langchain_tools(erp, caller=Caller(user_id=user_id, roles=roles)),
            middleware=[
                TurnMiddleware(registry, max_tokens, recover_excluding, limits.operations),
                ModelCallLimitMiddleware(run_limit=limits.model_calls, exit_behavior="end"),
            ],
            response_format=response_format,
            context_schema=TurnContext,
            name=name,
        )

    return lambda caller: compiled(caller.user_id, caller.roles)  # what the tools depend on (not the name)


def answer_tool_names(structured: bool) -> frozenset[str]:
    """The tool names of the structured answer under ``ToolStrategy`` (none for a prose answer)."""
    return frozenset(spec.name for spec in ToolStrategy(Answer).schema_specs) if structured else frozenset()


class TurnMiddleware(AgentMiddleware[Any, Any, Any]):
    """Sets the turn's system prompt, recovers text tool calls, refuses replies cut at the output cap, and
    records every tool call, timed, with why it failed.

    ``recover_excluding``: the offered tools never recovered from text (the structured answer's), or
    ``None`` when recovery is off. Operation errors reach the model as error results; any other exception
    a tool raises (an ERP bug) becomes an ``error interno (ref XXXX)`` result, as in planner mode.

    An operation runs once per turn: a call identical to one that succeeded (same name, same arguments once
    the operation's model has validated them), in a later step or in parallel with it, does not run; the
    model reads :data:`REPEAT_NOTE` and the earlier result, and the call is recorded with that result and
    ``repeat_of`` naming the earlier call. Errors are not reused: a call identical to one that failed runs.
    """

    def __init__(
        self,
        registry: OperationRegistry,
        max_tokens: int | None,
        recover_excluding: frozenset[str] | None,
        max_operations: int = MAX_OPERATIONS_PER_TURN,
    ) -> None:
        super().__init__()
        self._registry = registry
        self._max_tokens = max_tokens
        self._max_chars = reply_max_chars(max_tokens)
        self._recover_excluding = recover_excluding
        self._max_operations = max_operations

    async def awrap_model_call(
        self,
        request: ModelRequest[Any],
        handler: Callable[[ModelRequest[Any]], Awaitable[ModelResponse[Any]]],
    ) -> ModelResponse[Any]:
        context = _context(request)
        response = await handler(request.override(system_message=context.system_message))
        # A reply longer than its cap can hold (a server ignoring max_tokens) is refused before anything
        # (recovery of text tool calls, the answer checks) reads it.
        for message in response.result:
            if isinstance(message, AIMessage) and len(text := message.text) > self._max_chars:
                raise ReplyTooLongError(
                    self._max_tokens, self._max_chars, raw=clip_text(text, RAW_SHOWN_CHARS)
                )
        recovered = 0
        if self._recover_excluding is not None:
            result = [
                recover_text_tool_calls(message, self._recover_excluding) for message in response.result
            ]
            recovered = sum(message.response_metadata.get("recovered_tool_calls", 0) for message in result)
            if result != list(response.result):
                response = ModelResponse(result=result, structured_response=response.structured_response)
        # A cut reply's tool calls or text are incomplete: no tool of it runs, the turn ends as model_output.
        if any(isinstance(m, AIMessage) and stopped_at_limit(m) for m in response.result):
            raise OutputLimitError(self._max_tokens)
        # The per-turn operation cap: a step that would pass it ends the turn before any of its calls runs,
        # so no reply, however many calls it holds, makes the ERP work or the next request grow unbounded.
        asked = sum(len(m.tool_calls) for m in response.result if isinstance(m, AIMessage))
        with context.lock:
            context.requested_operations += asked
            total = context.requested_operations
        if total > self._max_operations:
            raise TurnLimitError(
                f"The model asked for {total} operations in this turn; at most {self._max_operations} run."
            )
        # The calls' arguments are bounded as the text is (a structured answer's arguments are its text).
        written = sum(
            len(json.dumps(c["args"], default=str))
            for m in response.result
            if isinstance(m, AIMessage)
            for c in m.tool_calls
        )
        if written > self._max_chars:
            raise ReplyTooLongError(self._max_tokens, self._max_chars)
        if recovered:  # counted once they are sure to run: a reply refused above ran none of them
            with context.lock:
                context.recovered_tool_calls += recovered
        return response

    async def awrap_tool_call(
        self,
        request: ToolCallRequest,
        handler: Callable[[ToolCallRequest], Awaitable[ToolMessage | Command[Any]]],
    ) -> ToolMessage | Command[Any]:
        call = request.tool_call
        context = _context(request)
        key = self._identity(call["name"], call["args"], context.caller)
        if key is None:  # an invalid call: it runs, and fails, on its own
            return (await self._run(request, handler, context))[0]
        while True:
            with context.lock:
                first = context.first_calls.get(key)
                if first is None:
                    mine: asyncio.Future[FirstCall | None] = asyncio.get_running_loop().create_future()
                    context.first_calls[key] = mine
            if first is None:
                break
            # shielded: cancelling this call must not cancel the future the first call resolves
            earlier = await asyncio.shield(first)
            if earlier is not None:
                return self._repeat(call, earlier, context)
            # the identical call failed: this one runs (or waits for another identical one that does)
        succeeded: FirstCall | None = None
        try:
            outcome, operation = await self._run(request, handler, context)
            if isinstance(outcome, ToolMessage) and operation is not None and operation.ok:
                succeeded = FirstCall(operation, str(outcome.text))
        finally:
            if succeeded is None:
                with context.lock:
                    del context.first_calls[key]
            mine.set_result(succeeded)
        return outcome

    async def _run(
        self,
        request: ToolCallRequest,
        handler: Callable[[ToolCallRequest], Awaitable[ToolMessage | Command[Any]]],
        context: TurnContext,
    ) -> tuple[ToolMessage | Command[Any], ExecutedOperation | None]:
        """Run the call and record it (when it ends in a tool result)."""
        call = request.tool_call
        started = perf_counter()
        outcome: ToolMessage | Command[Any]
        try:
            if request.tool is None:  # not offered to this caller: the ERP says why, as to the planner
                outcome = self._not_offered(call, context.caller)
            else:  # in the loop's default executor: an ERP query never blocks it
                outcome = await handler(request)
        except GraphBubbleUp:  # LangGraph control flow (interrupts), not a tool failure
            raise
        except Exception as exc:  # an ERP bug must not abort the turn; its text must not reach the model
            outcome = ToolMessage(
                content=str(internal_error(call["name"], exc)),
                name=call["name"],
                tool_call_id=str(call["id"]),
                status="error",
            )
        if not isinstance(outcome, ToolMessage):
            return outcome, None
        duration_ms = (perf_counter() - started) * 1000
        operation = executed_operation(call["name"], call["args"], call["id"], outcome, duration_ms)
        if operation.error is not None:
            operation.error_kind = self._error_kind(call["name"], call["args"], operation.error, context)
        with context.lock:
            context.operations[str(call["id"])] = operation
        return outcome, operation

    def _not_offered(self, call: ToolCall, caller: Caller) -> ToolMessage:
        """The result of a call to a tool the caller's agent does not have: the registry's own error (the
        operation does not exist, or the caller may not run it), the words planner mode's call 2 reads."""
        try:
            self._registry.validate(call["name"], call["args"], caller=caller)
            error: str = f"La operación {call['name']!r} no está disponible."  # registered after compiling
        except OperationError as exc:
            error = str(exc)
        return ToolMessage(content=error, name=call["name"], tool_call_id=str(call["id"]), status="error")

    @staticmethod
    def _repeat(call: ToolCall, first: FirstCall, context: TurnContext) -> ToolMessage:
        """The answer to a call identical to ``first``: its result, not run again, recorded as a repeat."""
        repeat = first.operation.model_copy(
            update={
                "parameters": dict(call["args"]),
                "id": call["id"],
                "duration_ms": 0.0,
                "repeat_of": str(first.operation.id),
            }
        )
        with context.lock:
            context.operations[str(call["id"])] = repeat
        return ToolMessage(
            content=f"{REPEAT_NOTE}\n{first.content}", name=call["name"], tool_call_id=str(call["id"])
        )

    def _identity(self, name: str, args: Any, caller: Caller) -> str | None:
        """The canonical form of a call: its name and its arguments as the operation's model validates them;
        ``None`` when they do not validate."""
        try:
            validated = self._registry.validate(name, args if isinstance(args, dict) else None, caller=caller)
        except OperationError:
            return None
        return json.dumps([name, validated.model_dump(mode="json")], sort_keys=True, ensure_ascii=False)

    def _error_kind(self, name: str, args: Any, error: str, context: TurnContext) -> OperationErrorKind:
        if error.startswith(INTERNAL_ERROR_PREFIX):
            return "internal"
        try:
            self._registry.validate(name, args if isinstance(args, dict) else None, caller=context.caller)
        except OperationError:
            return "invalid"  # unknown or forbidden tool, or invalid arguments: the model's request was wrong
        return "refused"


def _context(request: ModelRequest[Any] | ToolCallRequest) -> TurnContext:
    context = request.runtime.context if request.runtime is not None else None
    assert isinstance(context, TurnContext), "the engine runs every turn with its TurnContext"
    return context


def executed_operation(
    name: str, args: Any, call_id: str | None, message: ToolMessage, duration_ms: float
) -> ExecutedOperation:
    """The ``ExecutedOperation`` both modes report for a tool result."""
    content = str(message.text)
    error: str | None = None
    result: Any = None
    if message.status == "error":
        error = content or "tool error"
    elif message.artifact is not None:  # the ERP's result, as the operation returned it
        result = message.artifact
    else:
        try:
            result = json.loads(content)
        except ValueError:
            result = content
    return ExecutedOperation(
        function=name,
        parameters=dict(args) if isinstance(args, dict) else {},
        id=call_id,
        result=result,
        error=error,
        # e.g. a malformed call the agent answered itself; TurnMiddleware refines it
        error_kind="invalid" if error is not None else None,
        duration_ms=duration_ms,
    )
