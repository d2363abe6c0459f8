"""The Ollama REST protocol (``/api/chat``, ``/api/tags``, ``/api/show``, ``/api/version``), backed by a
LangChain chat model, matching what ``langchain_ollama.ChatOllama`` and the ``ollama`` client send and expect.

Wire facts this module follows:

- ``POST /api/chat`` streams NDJSON by default (``ChatOllama`` streams even for ``invoke``);
  ``"stream": false`` returns one JSON object. Every chunk carries ``model``, ``created_at`` and
  ``message`` (with ``role``); the last has ``done: true``, ``done_reason``, ``prompt_eval_count`` /
  ``eval_count`` and ``*_duration`` in nanoseconds, which ``ChatOllama`` turns into ``usage_metadata``.
- Tool calls come back as ``message.tool_calls = [{"function": {"index": 0, "name": …, "arguments": {…}}}]``,
  arguments as an object. The client drops tool-call ids, so tool results are paired with calls by order
  (or by ``tool_name`` when given).
- ``format`` is ``"json"`` or a JSON schema.
- ``options.num_predict`` caps the output tokens (``-1`` or absent: no cap). A longer reply is cut there and
  ends with ``done_reason: "length"`` (``ChatOllama`` puts it in ``response_metadata``), streaming or not.
- A stream sends the text a few tokens at a time (:func:`benchmarks.stand_ins.chunks.stream_pieces`), tool
  calls whole
  in one chunk, then the ``done`` record with the counts.
- Errors are ``{"error": "…"}``, with an HTTP error status or as a line of the stream.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from benchmarks.stand_ins.chunks import stream_pieces
from benchmarks.stand_ins.emulators._backing import (
    MALFORMED_TOOL_ARGUMENTS,
    BackingReply,
    BackingRequest,
    call_backing_model,
    schema_invalid_text,
    shape_reply,
    stand_in_label,
)
from benchmarks.stand_ins.emulators._http import (
    BadRequestError,
    HttpRequest,
    JsonReply,
    LoggedRequest,
    Reply,
    StallReply,
    StreamReply,
    apply_delay,
    before_break,
)
from benchmarks.stand_ins.emulators.faults import FaultSelector, UnknownFaultError

DEFAULT_OLLAMA_MODELS: tuple[str, ...] = ("llama3.1:8b", "qwen2.5:7b")
"""Model names ``/api/tags`` lists by default."""
OLLAMA_VERSION = "0.12.6"
"""The server version ``/api/version`` reports."""

_RUNNER_STOPPED = (
    "model runner has unexpectedly stopped, this may be due to resource limitations or an internal error, "
    "check ollama server logs for details"
)
_STREAM_BROKEN = "an error was encountered while running the model: unexpected EOF"


class OllamaToolFunction(BaseModel):
    """``tool_calls[].function`` of a request message."""

    model_config = ConfigDict(extra="allow")

    name: str
    arguments: dict[str, Any] | str = Field(default_factory=dict)


class OllamaToolCall(BaseModel):
    """One tool call of an assistant message in a request."""

    model_config = ConfigDict(extra="allow")

    function: OllamaToolFunction


class OllamaMessage(BaseModel):
    """A message of ``/api/chat``."""

    model_config = ConfigDict(extra="allow")

    role: str
    content: str | None = ""
    tool_calls: list[OllamaToolCall] | None = None
    tool_name: str | None = None
    tool_call_id: str | None = None


class OllamaChatRequest(BaseModel):
    """The ``/api/chat`` body."""

    model_config = ConfigDict(extra="allow")

    model: str = Field(min_length=1)
    messages: list[OllamaMessage] = Field(default_factory=list)
    tools: list[dict[str, Any]] | None = None
    stream: bool = True
    format: str | dict[str, Any] | None = None
    options: dict[str, Any] | None = None


class OllamaShowRequest(BaseModel):
    """The ``/api/show`` body."""

    model_config = ConfigDict(extra="allow")

    model: str = ""
    name: str = ""

    @property
    def model_name(self) -> str:
        """The requested model (``model``, or the legacy ``name``)."""
        return self.model or self.name


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _num_predict(options: dict[str, Any] | None) -> int | None:
    """``options.num_predict`` as a cap: ``None`` when absent, not a number, or ``<= 0`` (-1 = unlimited)."""
    value = (options or {}).get("num_predict")
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return int(value) if value > 0 else None


def _parse_arguments(arguments: dict[str, Any] | str) -> dict[str, Any]:
    if not isinstance(arguments, str):
        return dict(arguments)
    try:
        parsed = json.loads(arguments)
    except json.JSONDecodeError as exc:
        raise BadRequestError(400, {"error": f"invalid tool call arguments: {exc}"}) from exc
    if not isinstance(parsed, dict):
        raise BadRequestError(400, {"error": "tool call arguments must be an object"})
    return parsed


def to_langchain_messages(messages: Sequence[OllamaMessage]) -> list[BaseMessage]:
    """Convert ``/api/chat`` messages to LangChain messages; tool calls get ids, results are paired."""
    result: list[BaseMessage] = []
    pending: list[tuple[str, str]] = []  # (call id, tool name) still waiting for a result
    counter = 0
    for message in messages:
        content = message.content or ""
        if message.role == "system":
            result.append(SystemMessage(content=content))
        elif message.role == "user":
            result.append(HumanMessage(content=content))
        elif message.role == "assistant":
            calls = []
            pending = []
            for call in message.tool_calls or []:
                counter += 1
                call_id = f"call_{counter}"
                arguments = call.function.arguments
                args = _parse_arguments(arguments)
                calls.append({"name": call.function.name, "args": args, "id": call_id, "type": "tool_call"})
                pending.append((call_id, call.function.name))
            result.append(AIMessage(content=content, tool_calls=calls))
        elif message.role == "tool":
            match = next((p for p in pending if message.tool_name and p[1] == message.tool_name), None)
            if match is None and pending:
                match = pending[0]
            if match is not None:
                pending.remove(match)
                call_id, name = match
            else:
                counter += 1
                call_id, name = message.tool_call_id or f"call_{counter}", message.tool_name or "tool"
            result.append(ToolMessage(content=content, tool_call_id=call_id, name=message.tool_name or name))
        else:
            raise BadRequestError(400, {"error": f"invalid role: {message.role}"})
    return result


class OllamaProtocol:
    """Serves the Ollama API from a LangChain chat model."""

    name = "ollama"

    def __init__(
        self,
        model: BaseChatModel,
        *,
        models: Sequence[str] = DEFAULT_OLLAMA_MODELS,
        strict_models: bool = False,
    ) -> None:
        """``models`` are listed by ``/api/tags``; with ``strict_models`` other names get a 404."""
        self.model = model
        self.models = tuple(models)
        self.strict_models = strict_models

    def error_reply(self, status: int, message: str) -> JsonReply:
        """Ollama's error body."""
        return JsonReply(status, {"error": message})

    def handle(self, request: HttpRequest, log: LoggedRequest, faults: FaultSelector) -> Reply:
        """Route one request."""
        route = (request.method, request.path.rstrip("/") or "/")
        if route == ("GET", "/api/version"):
            return JsonReply(200, {"version": OLLAMA_VERSION})
        if route == ("GET", "/api/tags"):
            return JsonReply(200, {"models": [self._model_entry(name) for name in self.models]})
        if route == ("POST", "/api/show"):
            return self._show(request)
        if route == ("POST", "/api/chat"):
            return self._chat(request, log, faults)
        if route == ("GET", "/"):
            return JsonReply(200, {"status": "Ollama is running"})
        return self.error_reply(404, "404 page not found")

    # -- endpoints ---------------------------------------------------------------------------------------

    def _known(self, name: str) -> bool:
        return not self.strict_models or any(name == m or m.startswith(f"{name}:") for m in self.models)

    def _model_entry(self, name: str) -> dict[str, Any]:
        return {
            "name": name,
            "model": name,
            "modified_at": "2025-01-01T00:00:00Z",
            "size": 4_920_000_000,
            "digest": "0" * 64,
            "details": self._details(),
        }

    def _details(self) -> dict[str, Any]:
        return {
            "stand_in": stand_in_label(self.model),
            "parent_model": "",
            "format": "gguf",
            "family": "llama",
            "families": ["llama"],
            "parameter_size": "8.0B",
            "quantization_level": "Q4_K_M",
        }

    def _show(self, request: HttpRequest) -> Reply:
        try:
            show = OllamaShowRequest.model_validate(request.body or {})
        except ValidationError as exc:
            return self.error_reply(400, str(exc))
        if not show.model_name or not self._known(show.model_name):
            return self.error_reply(404, f"model '{show.model_name}' not found")
        return JsonReply(
            200,
            {
                "license": "",
                "modelfile": f"# Emulated by erp-ai-harness\nFROM {show.model_name}\n",
                "parameters": "temperature 0",
                "template": "{{ .Prompt }}",
                "details": self._details(),
                "model_info": {"general.architecture": "llama", "llama.context_length": 8192},
                "capabilities": ["completion", "tools"],
                "modified_at": "2025-01-01T00:00:00Z",
            },
        )

    def _chat(self, request: HttpRequest, log: LoggedRequest, faults: FaultSelector) -> Reply:
        try:
            chat = OllamaChatRequest.model_validate(request.body or {})
        except ValidationError as exc:
            missing_model = any(err["loc"] == ("model",) for err in exc.errors())
            return self.error_reply(400, "model is required" if missing_model else str(exc))
        if not self._known(chat.model):
            return self.error_reply(404, f'model "{chat.model}" not found, try pulling it first')
        backing = self._backing_request(chat)  # before the fault: a bad request must not use one up
        try:
            decision = faults.decide(request.headers)
        except UnknownFaultError as exc:
            return self.error_reply(400, str(exc))
        log.fault = decision.mode
        if decision.mode == "stall":
            return StallReply()
        apply_delay(decision)
        if decision.mode == "http_500":
            return self.error_reply(500, _RUNNER_STOPPED)

        started = time.perf_counter()
        reply = call_backing_model(self.model, backing)
        reply = shape_reply(
            backing,
            reply,
            fault=decision.reply_fault,
            index=decision.index,
            max_tokens=_num_predict(chat.options),
        )
        elapsed_ms = (time.perf_counter() - started) * 1000
        text = reply.text
        if decision.mode == "schema_invalid" and chat.format:
            text = schema_invalid_text(text, has_schema=isinstance(chat.format, dict))

        if decision.mode == "malformed_tool_call":
            name = reply.tool_calls[0].name if reply.tool_calls else "ventas_anuales"
            raw = f'{{"name": "{name}", "arguments": {MALFORMED_TOOL_ARGUMENTS}'
            error = f"error parsing tool call: raw='{raw}', err=unexpected end of JSON input"
            if not chat.stream:
                return self.error_reply(500, error)
            return StreamReply("application/x-ndjson", self._lines([{"error": error}]))
        if decision.mode == "stream_error" and not chat.stream:
            return self.error_reply(500, _STREAM_BROKEN)

        final = self._final_fields(reply, elapsed_ms)
        tool_calls = [
            {"function": {"index": index, "name": call.name, "arguments": call.args}}
            for index, call in enumerate(reply.tool_calls)
        ]
        cut = decision.mode == "stream_break"
        if not chat.stream:
            message: dict[str, Any] = {"role": "assistant", "content": text}
            if tool_calls:
                message["tool_calls"] = tool_calls
            body = {"model": chat.model, "created_at": _now(), "message": message, **final}
            return JsonReply(200, body, cut=cut)
        records = self._stream_records(
            chat.model, text, tool_calls, final, broken=decision.mode == "stream_error", cut=cut
        )
        return StreamReply("application/x-ndjson", self._lines(records), cut=cut)

    # -- helpers -----------------------------------------------------------------------------------------

    @staticmethod
    def _backing_request(chat: OllamaChatRequest) -> BackingRequest:
        tools = [tool if "type" in tool else {"type": "function", **tool} for tool in chat.tools or []]
        schema = chat.format if isinstance(chat.format, dict) else None
        return BackingRequest(
            messages=to_langchain_messages(chat.messages),
            tools=tools,
            json_schema=schema,
            json_mode=chat.format == "json",
        )

    @staticmethod
    def _final_fields(reply: BackingReply, elapsed_ms: float) -> dict[str, Any]:
        total_ms = reply.simulated_ms if reply.simulated_ms is not None else elapsed_ms
        total_ns = max(1, int(total_ms * 1_000_000))
        tokens = max(1, reply.input_tokens + reply.output_tokens)
        prompt_ns = total_ns * reply.input_tokens // tokens
        return {
            "done": True,
            "done_reason": "length" if reply.cut else "stop",
            "total_duration": total_ns,
            "load_duration": 0,
            "prompt_eval_count": reply.input_tokens,
            "prompt_eval_duration": prompt_ns,
            "eval_count": reply.output_tokens,
            "eval_duration": total_ns - prompt_ns,
        }

    @staticmethod
    def _stream_records(
        model: str,
        text: str,
        tool_calls: list[dict[str, Any]],
        final: dict[str, Any],
        *,
        broken: bool,
        cut: bool,
    ) -> Iterator[dict[str, Any]]:
        """Text pieces, then the tool calls (whole, as Ollama parses them server-side), then the ``done``
        record with the counts; ``broken`` (``stream_error``) ends half-way with an error line, ``cut``
        (``stream_break``) just stops there (the server drops the connection)."""

        def piece(content: str) -> dict[str, Any]:
            message = {"role": "assistant", "content": content}
            return {"model": model, "created_at": _now(), "message": message, "done": False}

        pieces = stream_pieces(text)
        if broken or cut:
            yield from (piece(p) for p in before_break(pieces))
            if broken:
                yield {"error": _STREAM_BROKEN}
            return
        yield from (piece(p) for p in pieces)
        if tool_calls:
            yield {
                "model": model,
                "created_at": _now(),
                "message": {"role": "assistant", "content": "", "tool_calls": tool_calls},
                "done": False,
            }
        yield {"model": model, "created_at": _now(), "message": {"role": "assistant", "content": ""}, **final}

    @staticmethod
    def _lines(records: Iterator[dict[str, Any]] | list[dict[str, Any]]) -> Iterator[bytes]:
        for record in records:
            yield json.dumps(record, ensure_ascii=False).encode() + b"\n"
