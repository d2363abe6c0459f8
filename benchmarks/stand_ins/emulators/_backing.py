"""Calls the LangChain chat model that stands behind an emulator.

Each protocol reduces a request to a :class:`BackingRequest` (LangChain messages, built by
:func:`to_messages` from :class:`WireMessage`, the OpenAI-shaped message Ollama's API shares and Gemini's
contents map onto; OpenAI-style tool dicts; an optional JSON schema or JSON mode), then :func:`answer` calls
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
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.outputs import LLMResult
from pydantic import AliasChoices, BaseModel, ConfigDict, Field

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


class _Wire(BaseModel):
    model_config = ConfigDict(extra="allow")


class WireFunction(_Wire):
    """``tool_calls[].function``: the arguments as an object (Ollama) or as JSON text (OpenAI)."""

    name: str
    arguments: dict[str, Any] | str = Field(default_factory=dict)


class WireToolCall(_Wire):
    """One tool call of an assistant message."""

    id: str | None = None
    function: WireFunction


class WireMessage(_Wire):
    """A chat message; ``content`` is text or a list of content parts (their text is joined)."""

    role: str
    content: str | list[dict[str, Any]] | None = None
    tool_calls: list[WireToolCall] | None = None
    tool_call_id: str | None = None
    name: str | None = Field(default=None, validation_alias=AliasChoices("name", "tool_name"))
    """The tool a result comes from (Ollama: ``tool_name``)."""

    @property
    def text(self) -> str:
        """The text of ``content``."""
        if isinstance(self.content, list):
            return "".join(str(p.get("text", "")) for p in self.content if p.get("type") == "text")
        return self.content or ""


def _arguments(arguments: dict[str, Any] | str) -> dict[str, Any]:
    if not isinstance(arguments, str):
        return dict(arguments)
    try:
        parsed = json.loads(arguments or "{}")
    except json.JSONDecodeError as exc:
        raise BadRequestError(f"invalid tool call arguments: {exc}") from exc
    if not isinstance(parsed, dict):
        raise BadRequestError("invalid tool call arguments: not a JSON object")
    return parsed


def to_messages(messages: Sequence[WireMessage]) -> list[BaseMessage]:
    """Convert wire messages to LangChain messages.

    A tool call without an ``id`` gets one; a tool result pairs with the latest assistant message's calls
    by ``tool_call_id``, else by tool name, else in order (Ollama's client sends no ids).

    Raises:
        BadRequestError: an unknown role, or tool-call arguments that are not a JSON object.
    """
    result: list[BaseMessage] = []
    pending: list[tuple[str, str]] = []  # (id, name) of the calls still waiting for a result
    for n, message in enumerate(messages):
        if message.role in ("system", "developer"):
            result.append(SystemMessage(message.text))
        elif message.role == "user":
            result.append(HumanMessage(message.text))
        elif message.role == "assistant":
            calls: list[dict[str, Any]] = [
                {
                    "name": c.function.name,
                    "args": _arguments(c.function.arguments),
                    "id": c.id or f"call_{n}_{i}",
                }
                for i, c in enumerate(message.tool_calls or [])
            ]
            pending = [(call["id"], call["name"]) for call in calls]
            result.append(AIMessage(message.text, tool_calls=calls))  # type: ignore[arg-type]
        elif message.role == "tool":
            match = next((p for p in pending if p[0] == message.tool_call_id), None)
            match = match or next((p for p in pending if p[1] == message.name), None)
            match = match or (pending[0] if pending else None)
            if match is not None:
                pending.remove(match)
            call_id, name = match or (message.tool_call_id or f"call_{n}", "tool")
            result.append(ToolMessage(message.text, tool_call_id=call_id, name=message.name or name))
        else:
            raise BadRequestError(f"invalid role: {message.role!r}; use system, user, assistant or tool")
    return result


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
