"""Calls the LangChain chat model that stands behind an emulator.

Each protocol reduces a request to a :class:`BackingRequest` (LangChain messages from :func:`to_messages`,
OpenAI-style tool dicts, an optional JSON schema or JSON mode), then :func:`answer` calls
the model and applies the request's fault and output cap to the :class:`BackingReply`, which the protocol
turns back into wire JSON.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, convert_to_messages
from langchain_core.outputs import LLMResult
from pydantic import BaseModel

from benchmarks.stand_ins.emulators._app import BadRequestError
from benchmarks.stand_ins.emulators.faults import FaultDecision
from benchmarks.stand_ins.faults import RUNAWAY_CONTEXT_TOKENS, cut_to_tokens, grow
from shared.llm.tokens import approx_json_tokens, approx_tokens

STAND_IN_MARKER = "erp-ai emulator"
"""How every emulator marks the model identity it reports (``/api/tags``, ``/v1/models``, Gemini's model
resource), so that a run against it is never taken for a real model (see :func:`stand_in_label`)."""

MALFORMED_TOOL_ARGUMENTS = '{"anio": 2025, "cliente": "Empresa ABC'
"""Tool-call arguments cut short: not valid JSON (the langchain#34746 case)."""


def stand_in_label(model: BaseChatModel) -> str:
    """What an emulator says answers behind it: ``erp-ai emulator: OfflineSalesModel answers, not the model
    named``."""
    return f"{STAND_IN_MARKER}: {type(model).__name__} answers, not the model named"


def _text(content: Any) -> str:
    """Text content, or the text of a list of content parts, joined."""
    if isinstance(content, list):
        return "".join(
            str(p.get("text", "")) for p in content if isinstance(p, dict) and p.get("type") == "text"
        )
    return str(content or "")


def to_messages(messages: Sequence[dict[str, Any]]) -> list[BaseMessage]:
    """Convert OpenAI-shaped message dicts (Ollama's API shares the shape, Gemini's contents map onto it)
    to LangChain messages, with :func:`langchain_core.messages.convert_to_messages`.

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
            match = next((p for p in pending if p[0] == entry.get("tool_call_id")), None)
            match = (
                match or next((p for p in pending if p[1] == name), None) or (pending[0] if pending else None)
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
    """Tools as OpenAI-style dicts (``{"type": "function", "function": {...}}``)."""
    tool_choice: str | None = None
    """``None`` (model decides), ``"any"`` or a tool name."""
    json_schema: dict[str, Any] | None = None
    """A JSON schema the reply must follow (structured output)."""
    json_mode: bool = False
    """Reply with JSON, no schema given."""


@dataclass(frozen=True)
class BackingToolCall:
    """One tool call produced by the backing model."""

    name: str
    args: dict[str, Any]


@dataclass(frozen=True)
class BackingReply:
    """What the backing model answered, with token counts and simulated latency."""

    text: str
    tool_calls: list[BackingToolCall]
    input_tokens: int
    output_tokens: int
    cached_tokens: int = 0
    """The part of ``input_tokens`` the backing model served from its prompt cache (``cache_read``)."""
    simulated_ms: float | None = None
    """``response_metadata["simulated_latency_ms"]`` when the model reported one."""
    cut: bool = False
    """The reply was cut at the output cap (Ollama ``done_reason: "length"``, Gemini ``MAX_TOKENS``)."""


class _UsageCapture(BaseCallbackHandler):
    """Adds up the usage (and simulated latency) of every model call made under one ``invoke``."""

    def __init__(self) -> None:
        self.tokens = [0, 0, 0]  # input, output, cache_read
        self.seen_usage = False
        self.simulated_ms: float | None = None

    def on_llm_end(self, response: LLMResult, **kwargs: Any) -> None:
        for generation in (g for gs in response.generations for g in gs):
            message = getattr(generation, "message", None)
            if not isinstance(message, AIMessage):
                continue
            if usage := message.usage_metadata:
                self.seen_usage = True
                cached = int((usage.get("input_token_details") or {}).get("cache_read") or 0)
                self.tokens = [
                    a + b
                    for a, b in zip(
                        self.tokens, (usage["input_tokens"], usage["output_tokens"], cached), strict=True
                    )
                ]
            simulated = message.response_metadata.get("simulated_latency_ms")
            if isinstance(simulated, int | float):
                self.simulated_ms = (self.simulated_ms or 0.0) + float(simulated)


def call_backing_model(model: BaseChatModel, request: BackingRequest) -> BackingReply:
    """Run ``request`` against ``model``: structured output through ``with_structured_output(schema,
    method="json_schema")`` (back as JSON text), tools through ``bind_tools``. The model's exceptions
    propagate (the server turns them into the provider's HTTP 500)."""
    capture = _UsageCapture()
    config: Any = {"callbacks": [capture]}
    tool_calls: list[BackingToolCall] = []
    if request.json_schema is not None:
        # LangChain's converters need a top-level title to name a dict schema; wire schemas may lack one.
        structured = model.with_structured_output(
            {"title": "output", **request.json_schema}, method="json_schema"
        )
        result = structured.invoke(request.messages, config=config)
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
            tool_calls = [BackingToolCall(call["name"], dict(call["args"])) for call in message.tool_calls]
    input_tokens, output_tokens, cached = capture.tokens
    if not capture.seen_usage:  # the model reports no usage: count with the project's approximation
        input_tokens = sum(approx_tokens(m.text) for m in request.messages)
        output_tokens = approx_tokens(text) + sum(approx_json_tokens(c.args) for c in tool_calls)
    return BackingReply(text, tool_calls, input_tokens, output_tokens, cached, capture.simulated_ms)


def _wire_tokens(text: str, tool_calls: list[BackingToolCall]) -> int:
    return approx_tokens(text) + sum(
        approx_json_tokens({"name": c.name, "arguments": c.args}) for c in tool_calls
    )


def schema_invalid_text(reply_text: str, *, has_schema: bool) -> str:
    """The ``schema_invalid`` fault: JSON that ignores the schema, or fenced JSON in plain JSON mode."""
    if has_schema:
        return json.dumps(
            {"respuesta_libre": reply_text, "nota": "el esquema fue ignorado"}, ensure_ascii=False
        )
    return f"```json\n{reply_text}\n```"


def answer(
    model: BaseChatModel, request: BackingRequest, decision: FaultDecision, max_tokens: int | None = None
) -> BackingReply:
    """Call ``model``, then apply the request's reply fault and its output cap ``max_tokens``.

    A reply fault is the offline model's (``misbehave``), applied to any backing model's reply;
    ``schema_invalid`` replaces a structured reply with JSON that ignores the schema. ``max_tokens`` (``None``
    or ``<= 0``: none) cuts a longer reply, counted with :mod:`shared.llm.tokens`, and marks it ``cut``;
    tool calls that did not fit are only text (as when a real server's tool-call parser meets half a
    call). A ``runaway`` reply grows until the cap, or ``RUNAWAY_CONTEXT_TOKENS`` without one.
    """
    reply = call_backing_model(model, request)
    text, calls, output_tokens, repeat = reply.text, reply.tool_calls, reply.output_tokens, ""
    if decision.reply_fault is not None:
        from benchmarks.stand_ins.offline import misbehave  # late: the offline model is heavier to load

        changed = misbehave(
            decision.reply_fault,
            request.messages,
            text=text,
            tool_calls=[(call.name, call.args) for call in calls],
            tools_bound=bool(request.tools),
            schema=request.json_schema,
            call_index=decision.index,
        )
        text, repeat = changed.text, changed.repeat
        calls = [BackingToolCall(name, args) for name, args in changed.tool_calls]
        output_tokens = _wire_tokens(text, calls)
    elif decision.mode == "schema_invalid" and (request.json_schema is not None or request.json_mode):
        text, calls = schema_invalid_text(text, has_schema=request.json_schema is not None), []
    cap = max_tokens if max_tokens is not None and max_tokens > 0 else None
    if repeat:
        cap = cap or RUNAWAY_CONTEXT_TOKENS
        text = grow(text, repeat, cap)
    cut = cap is not None and _wire_tokens(text, calls) > cap
    if cut and cap is not None:
        written = text + "".join(
            ("\n" if text or i else "")
            + json.dumps({"name": c.name, "arguments": c.args}, ensure_ascii=False)
            for i, c in enumerate(calls)
        )
        text, calls, output_tokens = cut_to_tokens(written, cap), [], cap
    return BackingReply(
        text, calls, reply.input_tokens, output_tokens, reply.cached_tokens, reply.simulated_ms, cut=cut
    )
