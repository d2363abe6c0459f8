"""Calls the LangChain chat model behind an emulator.

A protocol reduces a request to a :class:`BackingRequest`; :func:`answer` calls the model and applies the
request's fault and output cap to the :class:`BackingReply` the protocol turns back into wire JSON.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, convert_to_messages
from langchain_core.outputs import LLMResult
from pydantic import BaseModel

from benchmarks.stand_ins.emulators.faults import FaultDecision
from benchmarks.stand_ins.output_cap import ToolCall, fit_reply, reply_tokens
from shared.llm.tokens import approx_json_tokens, approx_tokens

STAND_IN_MARKER = "erp-ai emulator"
"""Marks the model identity every emulator reports (``/api/tags``, ``/v1/models``, Gemini's model
resource), so that a run against it is never taken for a real model."""

MALFORMED_TOOL_ARGUMENTS = '{"anio": 2025, "cliente": "Empresa ABC'
"""Tool-call arguments cut short: not valid JSON (the langchain#34746 case)."""


class BadRequestError(ValueError):
    """A request the protocol cannot take; the message goes into a 400 error body."""


def _text(content: Any) -> str:
    """Text content, or the text parts of a list of content parts, joined."""
    if isinstance(content, list):
        return "".join(
            str(p.get("text", "")) for p in content if isinstance(p, dict) and p.get("type") == "text"
        )
    return str(content or "")


def to_messages(messages: Sequence[dict[str, Any]]) -> list[BaseMessage]:
    """OpenAI-shaped message dicts (Ollama shares the shape, Gemini's contents map onto it) as LangChain
    messages.

    A tool call without an ``id`` gets one; a tool result pairs with the latest assistant message's calls
    by ``tool_call_id``, else by tool name (Ollama: ``tool_name``), else in order (Ollama sends no ids).

    Raises:
        BadRequestError: a message without a known role, or tool-call arguments that are not an object.
    """
    entries: list[dict[str, Any]] = []
    pending: list[tuple[str, str]] = []  # (id, name) of the calls still waiting for a result
    for n, message in enumerate(messages):
        entry = {**message, "content": _text(message.get("content"))}
        if entry.get("role") == "assistant":
            calls = [
                {**c, "id": c.get("id") or f"call_{n}_{i}"}
                for i, c in enumerate(entry.get("tool_calls") or [])
            ]
            pending = [(c["id"], str((c.get("function") or {}).get("name"))) for c in calls]
            entry["tool_calls"] = calls
        elif entry.get("role") == "tool":
            name = entry.pop("tool_name", None) or entry.get("name")
            match = (
                next((p for p in pending if p[0] == entry.get("tool_call_id")), None)
                or next((p for p in pending if p[1] == name), None)
                or (pending[0] if pending else None)
            )
            if match is not None:
                pending.remove(match)
            call_id, paired = match or (entry.get("tool_call_id") or f"call_{n}", "tool")
            entry.update(tool_call_id=call_id, name=name or paired)
        entries.append(entry)
    try:
        return convert_to_messages(entries)
    except (ValueError, KeyError, TypeError) as exc:  # pydantic's ValidationError is a ValueError
        raise BadRequestError(f"invalid message: {str(exc).splitlines()[0]}") from exc


@dataclass(frozen=True)
class BackingRequest:
    """A provider-neutral model request."""

    messages: list[BaseMessage]
    tools: list[dict[str, Any]] = field(default_factory=list)
    """OpenAI-style (``{"type": "function", "function": {...}}``)."""
    tool_choice: str | None = None
    """``None`` (the model decides), ``"any"`` or a tool name."""
    json_schema: dict[str, Any] | None = None
    json_mode: bool = False
    """JSON asked for without a schema."""


@dataclass(frozen=True)
class BackingReply:
    """The backing model's answer, with token counts."""

    text: str
    tool_calls: list[ToolCall]
    """``(name, args)`` pairs."""
    input_tokens: int
    output_tokens: int
    cached_tokens: int = 0
    """The part of ``input_tokens`` the model served from its prompt cache (``cache_read``)."""
    duration_ms: float = 0.0
    """The model's ``response_metadata["simulated_latency_ms"]`` when it reports one, else the time taken."""
    cut: bool = False
    """Cut at the output cap (Ollama ``done_reason: "length"``, Gemini ``MAX_TOKENS``, OpenAI ``length``)."""

    @property
    def malformed_call(self) -> tuple[str, str]:
        """The ``malformed_tool_call`` fault's call: the first tool's name, arguments that are not JSON."""
        return (self.tool_calls[0][0] if self.tool_calls else "ventas_anuales"), MALFORMED_TOOL_ARGUMENTS


class _Replies(BaseCallbackHandler):
    """Collects the messages of every model call made under one ``invoke``."""

    def __init__(self) -> None:
        self.messages: list[AIMessage] = []

    def on_llm_end(self, response: LLMResult, **kwargs: Any) -> None:
        for generation in (g for gs in response.generations for g in gs):
            if isinstance(message := getattr(generation, "message", None), AIMessage):
                self.messages.append(message)


def call_backing_model(model: BaseChatModel, request: BackingRequest) -> BackingReply:
    """Run ``request``: a schema through ``with_structured_output(method="json_schema")`` (back as JSON
    text), tools through ``bind_tools``; the model's exceptions propagate (the server's HTTP 500)."""
    started, replies = time.perf_counter(), _Replies()
    config: Any = {"callbacks": [replies]}
    tool_calls: list[ToolCall] = []
    if request.json_schema is not None:
        # LangChain's converters need a top-level title to name a dict schema; wire schemas may lack one.
        schema = {"title": "output", **request.json_schema}
        result = model.with_structured_output(schema, method="json_schema").invoke(request.messages, config)
        if isinstance(result, BaseModel):
            result = result.model_dump(mode="json")
        text = result if isinstance(result, str) else json.dumps(result, ensure_ascii=False)
    else:
        runnable: Any = model
        if request.tools:
            choice = {} if request.tool_choice is None else {"tool_choice": request.tool_choice}
            runnable = model.bind_tools(request.tools, **choice)
        message = runnable.invoke(request.messages, config=config)
        text = message.text if isinstance(message, BaseMessage) else str(message)
        if isinstance(message, AIMessage):
            tool_calls = [(call["name"], dict(call["args"])) for call in message.tool_calls]
    usages = [m.usage_metadata for m in replies.messages if m.usage_metadata]
    if usages:
        input_tokens = sum(u["input_tokens"] for u in usages)
        output_tokens = sum(u["output_tokens"] for u in usages)
    else:  # the model reports no usage: count with the project's approximation
        input_tokens = sum(approx_tokens(m.text) for m in request.messages)
        output_tokens = approx_tokens(text) + sum(approx_json_tokens(args) for _, args in tool_calls)
    cached = sum(int((u.get("input_token_details") or {}).get("cache_read") or 0) for u in usages)
    simulated = [m.response_metadata.get("simulated_latency_ms") for m in replies.messages]
    timed = [float(ms) for ms in simulated if isinstance(ms, int | float)]
    duration_ms = sum(timed) if timed else (time.perf_counter() - started) * 1000
    return BackingReply(text, tool_calls, input_tokens, output_tokens, cached, duration_ms)


def answer(
    model: BaseChatModel, request: BackingRequest, decision: FaultDecision, max_tokens: int | None = None
) -> BackingReply:
    """Call ``model``, then apply the request's fault and output cap (``None`` or ``<= 0``: none).

    A reply fault is the offline model's (``misbehave``), applied to any model's reply; ``schema_invalid``
    replaces a JSON reply with JSON that ignores the schema, or fences it in JSON mode.
    """
    reply = call_backing_model(model, request)
    text, calls, repeat = reply.text, reply.tool_calls, ""
    output_tokens = reply.output_tokens
    if decision.reply_fault is not None:
        from benchmarks.stand_ins.offline import misbehave  # late: the offline model is heavier to load

        changed = misbehave(
            decision.reply_fault,
            request.messages,
            text=text,
            tool_calls=calls,
            tools_bound=bool(request.tools),
            schema=request.json_schema,
            call_index=decision.index,
        )
        text, repeat = changed.text, changed.repeat
        calls = changed.tool_calls
        output_tokens = reply_tokens(text, calls)
    elif decision.mode == "schema_invalid" and request.json_schema is not None:
        ignored = {"respuesta_libre": text, "nota": "el esquema fue ignorado"}
        text, calls = json.dumps(ignored, ensure_ascii=False), []
    elif decision.mode == "schema_invalid" and request.json_mode:
        text, calls = f"```json\n{text}\n```", []
    cap = max_tokens if max_tokens is not None and max_tokens > 0 else None
    text, cut_at = fit_reply(text, calls, cap, repeat=repeat)
    if cut_at is None:
        return replace(reply, text=text, tool_calls=calls, output_tokens=output_tokens)
    return replace(reply, text=text, tool_calls=[], output_tokens=cut_at, cut=True)
