"""What one agent run left behind, in the project's terms: why it stopped, its new messages, the operations
its tools ran and whether the model's tool calls were valid requests (``TurnResult.plan_valid``)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from langchain.agents.structured_output import StructuredOutputError
from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
from langgraph.errors import GraphRecursionError

from shared.answer import Answer
from shared.errors import ErpAiError, ModelOutputError, OperationError
from shared.llm.provider_errors import as_erp_error
from shared.operations.registry import OperationRegistry
from shared.security import Caller
from shared.turn import ExecutedOperation
from toolcalling_mode._middleware import TurnContext, executed_operation
from toolcalling_mode.text_tool_calls import looks_like_text_tool_call

StopReason = Literal["done", "model_calls", "recursion", "failed"]

_LIMIT_MESSAGE_PREFIX = "Model call limits exceeded"
"""How ``ModelCallLimitMiddleware(exit_behavior="end")`` words the AI message it injects."""


@dataclass
class AgentRun:
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


def read_run(
    state: dict[str, Any],
    failure: Exception | None,
    inputs: Sequence[BaseMessage],
    context: TurnContext,
    *,
    registry: OperationRegistry,
    answer_tools: frozenset[str],
    max_tokens: int | None,
) -> AgentRun:
    """What the run left: the last state it streamed (a limit or a failure ends the stream early) and the
    exception it ended on (``failure``), after the turn's ``inputs``."""
    stop: StopReason = "done"
    error: ErpAiError | None = None
    if isinstance(failure, GraphRecursionError):
        stop = "recursion"
    elif isinstance(failure, StructuredOutputError):
        stop, error = "failed", ModelOutputError(f"No usable structured answer: {failure}")
    elif failure is not None:  # any provider/SDK failure ends the turn, not the caller
        stop, error = "failed", as_erp_error(failure, max_tokens=max_tokens)
    input_ids = {message.id for message in inputs}
    new = [m for m in state.get("messages", []) if m.id not in input_ids]
    if stop == "done" and new and _is_limit_message(new[-1]):
        stop = "model_calls"
        new = new[:-1]
    structured = state.get("structured_response")  # an Answer: both strategies parse into the schema
    plan_valid = _plan_valid(new, context.caller, registry, answer_tools)
    if plan_valid is None and isinstance(error, ModelOutputError):
        # A reply was read but was unusable (cut at the output cap: the agent never kept it), as the
        # planner counts a call 1 it could not read as a plan: an invalid request, not an unknown one.
        plan_valid = False
    calls = tool_calls_by_id(new)
    return AgentRun(
        messages=new,
        structured=structured if isinstance(structured, Answer) else None,
        stop=stop,
        error=error,
        operations=[
            operation_for(message, calls, context)
            for message in new
            if isinstance(message, ToolMessage) and message.name not in answer_tools
        ],
        plan_valid=plan_valid,
        recovered_tool_calls=context.recovered_tool_calls,
    )


def _plan_valid(
    messages: Sequence[BaseMessage], caller: Caller, registry: OperationRegistry, answer_tools: frozenset[str]
) -> bool | None:
    """Whether every tool call of the model's replies in ``messages`` was a valid request: ``False`` for a
    malformed call (``invalid_tool_calls``), a tool call written as text and left so, or a call the
    registry's validation refuses for ``caller`` (an unknown tool, one the caller was not given, invalid
    arguments), also when it never ran; a permitted call the ERP refused on its data or the caller's scope
    was valid. The structured answer's own tool is no request. ``None`` when there is no reply.
    """
    replies = [message for message in messages if isinstance(message, AIMessage)]
    if not replies:
        return None
    for reply in replies:
        if any(call.get("name") not in answer_tools for call in reply.invalid_tool_calls):
            return False
        if not reply.tool_calls and looks_like_text_tool_call(reply.text):
            return False
        for call in reply.tool_calls:
            if call["name"] in answer_tools:
                continue
            try:
                registry.validate(call["name"], call["args"], caller=caller)
            except OperationError:
                return False
    return True


def _is_limit_message(message: BaseMessage) -> bool:
    return (
        isinstance(message, AIMessage)
        and not message.tool_calls
        and message.text.startswith(_LIMIT_MESSAGE_PREFIX)
    )


def tool_calls_by_id(messages: Sequence[BaseMessage]) -> dict[str, tuple[str, Any]]:
    """``(name, args)`` of every tool call the AI messages in ``messages`` asked for, by call id."""
    calls: dict[str, tuple[str, Any]] = {}
    for message in messages:
        if isinstance(message, AIMessage):
            for call in message.tool_calls:
                calls[str(call["id"])] = (call["name"], call["args"])
            for invalid in message.invalid_tool_calls:
                calls[str(invalid.get("id"))] = (invalid.get("name") or "", {})
    return calls


def operation_for(
    message: ToolMessage, calls: dict[str, tuple[str, Any]], context: TurnContext
) -> ExecutedOperation:
    """The operation a tool result reports: as the middleware recorded it, else rebuilt from the result."""
    with context.lock:
        recorded = context.operations.get(message.tool_call_id)
    if recorded is None:  # e.g. a malformed call answered by the agent without running a tool
        name, args = calls.get(message.tool_call_id, (message.name or "", {}))
        recorded = executed_operation(name, args, message.tool_call_id, message, 0.0)
    return recorded
