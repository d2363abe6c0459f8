"""What one agent run left behind, in the project's terms, and how the turn ends: why the run stopped, its
new messages, the operations its tools ran, ``plan_valid``, and the answer and failure kind of
:mod:`shared.failures`."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from langchain.agents.structured_output import StructuredOutputError
from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
from langgraph.errors import GraphRecursionError

from shared.answer import Answer, MemoryItem
from shared.errors import ErpAiError, ModelOutputError, OperationError
from shared.failures import failure_kind_of, user_message
from shared.llm.provider_errors import as_erp_error
from shared.operations.registry import OperationRegistry
from shared.security import Caller
from shared.text import strip_reasoning
from shared.turn import ExecutedOperation, FailureKind
from toolcalling_mode._agent import TurnContext, executed_operation
from toolcalling_mode.limits import ToolCallingLimits
from toolcalling_mode.text_tool_calls import contains_machinery, looks_like_text_tool_call

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
    """Why the run failed (``stop == "failed"``)."""
    operations: list[ExecutedOperation] = field(default_factory=list)
    plan_valid: bool | None = None
    """Whether the model's tool calls were valid requests (``None``: the run holds no model reply)."""
    recovered_tool_calls: int = 0


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
    """The run from the last state it streamed (a limit or a failure ends the stream early) and the
    exception it ended on, after the turn's ``inputs``."""
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
    """``False`` when a reply holds a malformed call, a tool call left as text, or a call the registry's
    validation refuses for ``caller`` (also when it never ran); a permitted call the ERP refused on its data
    or the caller's scope was valid. The structured answer's own tool is no request."""
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


# -- how the run ends ------------------------------------------------------------------------------------


@dataclass
class Outcome:
    """How a finished agent run ends: the user's answer, the failure kind, what the store keeps."""

    answer: str
    failure: FailureKind | None = None
    metadata: dict[str, Any] = field(default_factory=dict)
    """Metadata of the final assistant message."""
    memories: list[MemoryItem] = field(default_factory=list)
    state: dict[str, Any] = field(default_factory=dict)
    """The model's ``estado`` (structured answers only); the ERP's derived keys are merged over it."""


def outcome(
    run: AgentRun,
    model_calls: int,
    errors: list[str],
    *,
    limits: ToolCallingLimits,
    structured: bool,
    recover_text_tool_calls: bool,
) -> Outcome:
    """How ``run`` ends; appends what went wrong to ``errors``."""
    if run.stop == "failed":
        error = run.error or ModelOutputError("The agent run failed")
        errors.append(f"{type(error).__name__}: {error}")
        kind = failure_kind_of(error)
        return Outcome(user_message(kind, error), failure=kind)
    if run.stop != "done":
        if run.stop == "recursion":
            errors.append(f"Recursion limit reached ({limits.recursion_limit} agent steps)")
        else:
            errors.append(f"Model call limit reached ({model_calls}/{limits.model_calls} calls)")
        return Outcome(user_message("limit"), failure="limit")
    failure = _operations_failure(run.operations)
    metadata: dict[str, Any] = {"failure": failure} if failure is not None else {}
    if run.structured is not None:
        answer = run.structured
        return Outcome(answer.text, failure, metadata, list(answer.memories), dict(answer.state))
    final = next((m for m in reversed(run.messages) if isinstance(m, AIMessage) and not m.tool_calls), None)
    # A reasoning model's <think>…</think> is not part of the answer the user reads or the ERP stores.
    text = strip_reasoning(final.text) if final is not None else ""
    unusable: ModelOutputError | None = None
    if structured:
        unusable = ModelOutputError("The model ended the turn without a structured answer.", raw=text)
    elif not text:
        unusable = ModelOutputError("The model's final answer is empty.")
    elif looks_like_text_tool_call(text):
        why = "recovery is off" if not recover_text_tool_calls else "it names the answer's own tool"
        unusable = ModelOutputError(
            f"The model wrote a tool call as text instead of calling the tool ({why}).", raw=text
        )
    elif contains_machinery(text):
        unusable = ModelOutputError(
            "The model's final answer holds a tool call written as text or is only JSON, not an answer.",
            raw=text,
        )
    if unusable is not None:
        errors.append(f"{type(unusable).__name__}: {unusable}")
        return Outcome(user_message("model_output", unusable), failure="model_output")
    return Outcome(text, failure=failure, metadata=metadata)


def operation_errors(operations: Sequence[ExecutedOperation], registry: OperationRegistry) -> list[str]:
    """One error line per operation that failed, naming a tool the model made up as unknown."""
    return [
        f"Unknown tool {op.function!r} requested by the model: {op.error}"
        if op.function not in registry
        else f"Tool {op.function!r} failed: {op.error}"
        for op in operations
        if op.error is not None
    ]


def _operations_failure(operations: Sequence[ExecutedOperation]) -> FailureKind | None:
    """``operation_error`` when a tool broke in the ERP; ``invalid_plan`` when every call was refused as
    invalid (unknown tool, invalid arguments) and none ran."""
    if any(op.error_kind == "internal" for op in operations):
        return "operation_error"
    if operations and all(op.error_kind == "invalid" for op in operations):
        return "invalid_plan"
    return None
