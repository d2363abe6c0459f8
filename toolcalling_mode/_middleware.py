"""Per-turn agent middleware: the turn's system prompt and a timed record of every tool call.

What changes per turn travels in the runtime context (:class:`TurnContext`, ``agent.astream(...,
context=...)``), so one compiled agent serves every conversation. Agents run asynchronously only: the hooks
are the async ones.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from time import perf_counter
from typing import Any

from langchain.agents.middleware import AgentMiddleware, ModelRequest, ModelResponse, ToolCallRequest
from langchain_core.messages import AIMessage, SystemMessage, ToolMessage
from langgraph.errors import GraphBubbleUp
from langgraph.types import Command

from shared.errors import INTERNAL_ERROR_PREFIX, OperationError, OutputLimitError
from shared.llm.provider_errors import stopped_at_limit
from shared.operations.registry import OperationRegistry, internal_error
from shared.security import Caller
from shared.turn import ExecutedOperation, OperationErrorKind


@dataclass
class TurnContext:
    """What one turn gives the compiled agent."""

    system_message: SystemMessage
    """The system prompt of this turn (instructions + rendered context or today's date)."""
    caller: Caller
    """Who the turn runs for (the tools are already bound to them; used to judge refused calls)."""
    operations: dict[str, ExecutedOperation] = field(default_factory=dict)
    """Executed tool calls, by tool call id (filled by :class:`TurnMiddleware`)."""
    recovered_tool_calls: int = 0
    """Tool calls the model wrote as text that were recovered into real ones (:func:`count_recovered`)."""
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    """Tool calls of one step run in parallel: in threads, also in an async run (tools are synchronous)."""


class TurnMiddleware(AgentMiddleware[Any, Any, Any]):
    """Sets the turn's system prompt on every model call and times every tool call.

    Operation errors reach the model as error results (the tools' ``ToolException`` handling); any other
    exception a tool raises (an ERP bug) becomes an ``error interno (ref XXXX)`` result, as in planner mode,
    instead of aborting the turn. Each recorded operation says why it failed (``error_kind``, judged against
    ``registry``: an unknown tool or invalid arguments is ``invalid``).
    """

    def __init__(self, registry: OperationRegistry, max_tokens: int | None = None) -> None:
        super().__init__()
        self._registry = registry
        self._max_tokens = max_tokens

    async def awrap_model_call(
        self,
        request: ModelRequest[Any],
        handler: Callable[[ModelRequest[Any]], Awaitable[ModelResponse[Any]]],
    ) -> ModelResponse[Any]:
        """Set the turn's system prompt; refuse any reply cut at the output cap (its tool calls or text are
        incomplete), so that no tool of a cut step runs: the turn ends as ``model_output``."""
        context = request.runtime.context if request.runtime is not None else None
        if isinstance(context, TurnContext):
            request = request.override(system_message=context.system_message)
        response = await handler(request)
        if any(isinstance(m, AIMessage) and stopped_at_limit(m) for m in response.result):
            raise OutputLimitError(self._max_tokens)
        return response

    async def awrap_tool_call(
        self,
        request: ToolCallRequest,
        handler: Callable[[ToolCallRequest], Awaitable[ToolMessage | Command[Any]]],
    ) -> ToolMessage | Command[Any]:
        """Run the tool; record it (timed, with its error kind) in the turn's context. The registry's tools
        are synchronous: LangChain runs each in the event loop's default executor, so an ERP query never
        blocks the loop."""
        started = perf_counter()
        try:
            outcome = await handler(request)
        except GraphBubbleUp:  # LangGraph control flow (interrupts), not a tool failure
            raise
        except Exception as exc:  # an ERP bug must not abort the turn; its text must not reach the model
            outcome = _internal_error_result(request, exc)
        return self._record(request, outcome, started)

    def _record(
        self, request: ToolCallRequest, outcome: ToolMessage | Command[Any], started: float
    ) -> ToolMessage | Command[Any]:
        call = request.tool_call
        duration_ms = (perf_counter() - started) * 1000
        context = request.runtime.context if request.runtime is not None else None
        if isinstance(context, TurnContext) and isinstance(outcome, ToolMessage):
            operation = executed_operation(call["name"], call["args"], call["id"], outcome, duration_ms)
            if operation.error is not None:
                operation.error_kind = self._error_kind(
                    call["name"], call["args"], operation.error, context.caller
                )
            with context.lock:
                context.operations[str(call["id"])] = operation
        return outcome

    def _error_kind(self, name: str, args: Any, error: str, caller: Caller) -> OperationErrorKind:
        if error.startswith(INTERNAL_ERROR_PREFIX):
            return "internal"
        try:
            self._registry.validate(name, args if isinstance(args, dict) else None, caller=caller)
        except OperationError:
            return "invalid"  # unknown or forbidden tool, or invalid arguments: the model's request was wrong
        return "refused"


def count_recovered(request: ModelRequest[Any], count: int) -> None:
    """Count ``count`` recovered text tool calls on the turn of ``request``."""
    context = request.runtime.context if request.runtime is not None else None
    if isinstance(context, TurnContext):
        with context.lock:
            context.recovered_tool_calls += count


def _internal_error_result(request: ToolCallRequest, error: Exception) -> ToolMessage:
    """The tool result of an unexpected exception: ``error interno (ref XXXX)``, the details logged."""
    call = request.tool_call
    return ToolMessage(
        content=str(internal_error(call["name"], error)),
        name=call["name"],
        tool_call_id=str(call["id"]),
        status="error",
    )


def executed_operation(
    name: str, args: Any, call_id: str | None, message: ToolMessage, duration_ms: float
) -> ExecutedOperation:
    """Turn a tool result into the ``ExecutedOperation`` that both modes report."""
    content = str(message.text)
    error: str | None = None
    kind: OperationErrorKind | None = None
    result: Any = None
    if message.status == "error":
        error = content or "tool error"
        kind = "invalid"  # e.g. a malformed call the agent answered itself; TurnMiddleware refines it
    else:
        try:
            result = json.loads(content)
        except ValueError:
            result = content
    return ExecutedOperation(
        funcion=name,
        parametros=dict(args) if isinstance(args, dict) else {},
        id=call_id,
        result=result,
        error=error,
        error_kind=kind,
        duration_ms=duration_ms,
    )
