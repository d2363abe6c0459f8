"""How a finished agent run ends for the user and the store: the answer, the failure kind of
:mod:`shared.failures`, and what a recorded turn keeps (final message metadata, memories, ``estado``)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from langchain_core.messages import AIMessage

from shared.answer import MemoryItem
from shared.errors import ModelOutputError
from shared.failures import failure_kind_of, user_message
from shared.operations.registry import OperationRegistry
from shared.text import strip_reasoning
from shared.turn import ExecutedOperation, FailureKind
from toolcalling_mode._run import AgentRun
from toolcalling_mode.limits import ToolCallingLimits
from toolcalling_mode.text_tool_calls import looks_like_text_tool_call


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
    """How ``run`` ends (see the failure contract); appends what went wrong to ``errors``."""
    if run.stop == "failed":
        error = run.error or ModelOutputError("The agent run failed")
        errors.append(f"{type(error).__name__}: {error}")
        kind = failure_kind_of(error)
        return Outcome(user_message(kind, error), failure=kind)
    if run.stop == "recursion":
        errors.append(f"Recursion limit reached ({limits.recursion_limit} agent steps)")
        return Outcome(user_message("limit"), failure="limit")
    if run.stop == "model_calls":
        errors.append(f"Model call limit reached ({model_calls}/{limits.model_calls} calls)")
        return Outcome(user_message("limit"), failure="limit")
    failure = _operations_failure(run.operations)
    metadata: dict[str, Any] = {"failure": failure} if failure is not None else {}
    if run.structured is not None:
        answer = run.structured
        return Outcome(
            answer.respuesta,
            failure=failure,
            metadata=metadata,
            memories=list(answer.memoria),
            state=dict(answer.estado),
        )
    final = next((m for m in reversed(run.messages) if isinstance(m, AIMessage) and not m.tool_calls), None)
    # A reasoning model's <think>…</think> is not part of the answer the user reads or the ERP stores.
    text = strip_reasoning(final.text) if final is not None else ""
    unusable: ModelOutputError | None = None  # (a reply cut at the cap already failed in TurnMiddleware)
    if structured:
        unusable = ModelOutputError("The model ended the turn without a structured answer.", raw=text)
    elif not text:
        unusable = ModelOutputError("The model's final answer is empty.")
    elif looks_like_text_tool_call(text):
        why = "recovery is off" if not recover_text_tool_calls else "it names a tool it was not given"
        unusable = ModelOutputError(
            f"The model wrote a tool call as text instead of calling the tool ({why}).", raw=text
        )
    if unusable is not None:
        errors.append(f"{type(unusable).__name__}: {unusable}")
        return Outcome(user_message("model_output", unusable), failure="model_output")
    return Outcome(text, failure=failure, metadata=metadata)


def operation_errors(operations: Sequence[ExecutedOperation], registry: OperationRegistry) -> list[str]:
    """One error line per operation that failed, naming a tool the model made up as unknown."""
    errors: list[str] = []
    for operation in operations:
        if operation.error is None:
            continue
        if operation.funcion not in registry:
            errors.append(f"Unknown tool {operation.funcion!r} requested by the model: {operation.error}")
        else:
            errors.append(f"Tool {operation.funcion!r} failed: {operation.error}")
    return errors


def _operations_failure(operations: Sequence[ExecutedOperation]) -> FailureKind | None:
    """``operation_error`` when a tool broke in the ERP; ``invalid_plan`` when every call was refused as
    invalid (unknown tool, invalid arguments) and none ran; otherwise ``None``."""
    if any(op.error_kind == "internal" for op in operations):
        return "operation_error"
    if operations and all(op.error_kind == "invalid" for op in operations):
        return "invalid_plan"
    return None
