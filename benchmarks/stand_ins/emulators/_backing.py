"""Calls the LangChain chat model that stands behind an emulator.

Each protocol reduces a request to a :class:`BackingRequest` (LangChain messages, OpenAI-style tool dicts,
an optional JSON schema or JSON mode), then :func:`shape_reply` applies a reply fault and the request's
output cap to the :class:`BackingReply`, which the protocol turns back into wire JSON.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any
from uuid import UUID

from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import LLMResult
from pydantic import BaseModel

from benchmarks.stand_ins.faults import RUNAWAY_CONTEXT_TOKENS, ReplyFault, cut_to_tokens, grow
from shared.llm.tokens import approx_json_tokens, approx_tokens

STAND_IN_MARKER = "erp-ai emulator"
"""How every emulator marks the model identity it reports (``/api/tags``, ``/v1/models``, Gemini's model
resource), so that a run against it is never taken for a real model (see :func:`stand_in_label`)."""


def stand_in_label(model: BaseChatModel) -> str:
    """What an emulator says answers behind it: ``erp-ai emulator: OfflineSalesModel answers, not the model
    named``."""
    return f"{STAND_IN_MARKER}: {type(model).__name__} answers, not the model named"


@dataclass(frozen=True)
class BackingRequest:
    """A provider-neutral model request."""

    messages: list[BaseMessage]
    """The conversation, as LangChain messages."""
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
    """Collects the usage of every model call made under one ``invoke``."""

    def __init__(self) -> None:
        self.input_tokens = 0
        self.output_tokens = 0
        self.cached_tokens = 0
        self.seen_usage = False
        self.simulated_ms: float | None = None

    def on_llm_end(
        self, response: LLMResult, *, run_id: UUID, parent_run_id: UUID | None = None, **kwargs: Any
    ) -> None:
        for generations in response.generations:
            for generation in generations:
                message = getattr(generation, "message", None)
                if not isinstance(message, AIMessage):
                    continue
                if message.usage_metadata:
                    self.seen_usage = True
                    self.input_tokens += message.usage_metadata["input_tokens"]
                    self.output_tokens += message.usage_metadata["output_tokens"]
                    details = message.usage_metadata.get("input_token_details") or {}
                    self.cached_tokens += int(details.get("cache_read") or 0)
                simulated = message.response_metadata.get("simulated_latency_ms")
                if isinstance(simulated, int | float):
                    self.simulated_ms = (self.simulated_ms or 0.0) + float(simulated)


def call_backing_model(model: BaseChatModel, request: BackingRequest) -> BackingReply:
    """Run ``request`` against ``model`` and return its reply.

    Structured output goes through ``with_structured_output(schema, method="json_schema")`` and comes back
    as JSON text; tools go through ``bind_tools``. Exceptions from the model propagate (the server turns
    them into the provider's HTTP 500).
    """
    capture = _UsageCapture()
    config: Any = {"callbacks": [capture]}
    text: str
    tool_calls: list[BackingToolCall] = []
    if request.json_schema is not None:
        # LangChain's converters need a top-level title to name a dict schema; wire schemas may lack one.
        schema = {"title": "output", **request.json_schema}
        structured = model.with_structured_output(schema, method="json_schema")
        result = structured.invoke(request.messages, config=config)
        text = _to_json_text(result)
    else:
        runnable: Any = model
        if request.tools:
            kwargs: dict[str, Any] = {}
            if request.tool_choice is not None:
                kwargs["tool_choice"] = request.tool_choice
            runnable = model.bind_tools(request.tools, **kwargs)
        message = runnable.invoke(request.messages, config=config)
        text = message.text if isinstance(message, BaseMessage) else str(message)
        if isinstance(message, AIMessage):
            tool_calls = [
                BackingToolCall(name=call["name"], args=dict(call["args"])) for call in message.tool_calls
            ]
    input_tokens = capture.input_tokens
    output_tokens = capture.output_tokens
    if not capture.seen_usage:  # the model reports no usage: count with the project's approximation
        input_tokens = sum(approx_tokens(m.text) for m in request.messages)
        output_tokens = approx_tokens(text) + sum(approx_json_tokens(c.args) for c in tool_calls)
    return BackingReply(
        text=text,
        tool_calls=tool_calls,
        input_tokens=input_tokens,
        output_tokens=output_tokens,
        cached_tokens=capture.cached_tokens if capture.seen_usage else 0,
        simulated_ms=capture.simulated_ms,
    )


def _wire_tokens(text: str, tool_calls: list[BackingToolCall]) -> int:
    return approx_tokens(text) + sum(
        approx_json_tokens({"name": c.name, "arguments": c.args}) for c in tool_calls
    )


def shape_reply(
    request: BackingRequest,
    reply: BackingReply,
    *,
    fault: ReplyFault | None = None,
    index: int = 0,
    max_tokens: int | None = None,
) -> BackingReply:
    """Apply a reply ``fault`` (the offline model's, to any backing model's reply) and the output cap.

    ``max_tokens`` is the request's cap (``None`` or ``<= 0``: none). A reply longer than the cap, counted
    with :mod:`shared.llm.tokens`, is cut there and marked ``cut``; tool calls that did not fit are only text
    (as when a real server's tool-call parser meets half a call). A ``runaway`` reply grows until the cap,
    or :data:`~benchmarks.stand_ins.faults.RUNAWAY_CONTEXT_TOKENS` without one. ``index`` numbers the
    server's model
    requests (``schema_ignored`` alternates on it).
    """
    text, calls, output_tokens, repeat = reply.text, list(reply.tool_calls), reply.output_tokens, ""
    if fault is not None:
        from benchmarks.stand_ins.offline import (
            misbehave,  # imported late: the offline model is heavier to load
        )

        changed = misbehave(
            fault,
            request.messages,
            text=text,
            tool_calls=[(call.name, call.args) for call in calls],
            tools_bound=bool(request.tools),
            schema=request.json_schema,
            call_index=index,
        )
        text, repeat = changed.text, changed.repeat
        calls = [BackingToolCall(name=name, args=args) for name, args in changed.tool_calls]
        output_tokens = _wire_tokens(text, calls)
    cap = max_tokens if max_tokens is not None and max_tokens > 0 else None
    if repeat:
        cap = cap if cap is not None else RUNAWAY_CONTEXT_TOKENS
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
        text=text,
        tool_calls=calls,
        input_tokens=reply.input_tokens,
        output_tokens=output_tokens,
        cached_tokens=reply.cached_tokens,
        simulated_ms=reply.simulated_ms,
        cut=cut,
    )


def _to_json_text(result: Any) -> str:
    if isinstance(result, BaseModel):
        result = result.model_dump(mode="json")
    if isinstance(result, str):
        return result
    return json.dumps(result, ensure_ascii=False)


def schema_invalid_text(reply_text: str, *, has_schema: bool) -> str:
    """The ``schema_invalid`` fault: JSON that ignores the schema, or fenced JSON in plain JSON mode."""
    if has_schema:
        return json.dumps(
            {"respuesta_libre": reply_text, "nota": "el esquema fue ignorado"}, ensure_ascii=False
        )
    return f"```json\n{reply_text}\n```"


MALFORMED_TOOL_ARGUMENTS = '{"anio": 2025, "cliente": "Empresa ABC'
"""Tool-call arguments cut short: not valid JSON (the langchain#34746 case)."""
