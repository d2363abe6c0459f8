"""The Ollama REST protocol (``/api/chat``, ``/api/tags``, ``/api/show``, ``/api/version``), as
``langchain_ollama.ChatOllama`` and the ``ollama`` client use it.

- ``POST /api/chat`` streams NDJSON by default (``ChatOllama`` streams even for ``invoke``); ``"stream":
  false`` returns one object. Every chunk carries ``model``, ``created_at`` and ``message`` (with ``role``):
  the text a few tokens at a time, the tool calls whole (arguments as an object), then the ``done: true``
  record with ``done_reason``, ``prompt_eval_count`` / ``eval_count`` and ``*_duration`` in nanoseconds.
- The client drops tool-call ids: tool results pair with calls by order, or by ``tool_name``.
- ``format`` is ``"json"`` or a JSON schema; ``options.num_predict`` caps the output (``-1``: none), and a
  cut reply ends with ``done_reason: "length"``.
- Errors are ``{"error": "…"}``, with an HTTP error status or as a line of the stream.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from langchain_core.language_models import BaseChatModel
from pydantic import BaseModel, ConfigDict, Field, ValidationError
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from benchmarks.stand_ins.chunks import stream_pieces
from benchmarks.stand_ins.emulators._app import NDJSON, Call, Protocol, chunked, encode, json_reply
from benchmarks.stand_ins.emulators._backing import BackingReply, BackingRequest, to_messages

DEFAULT_OLLAMA_MODELS: tuple[str, ...] = ("llama3.1:8b", "qwen2.5:7b")
OLLAMA_VERSION = "0.12.6"
_MODIFIED = "2025-01-01T00:00:00Z"


class OllamaChatRequest(BaseModel):
    """The ``/api/chat`` body."""

    model_config = ConfigDict(extra="allow")

    model: str = Field(min_length=1)
    messages: list[dict[str, Any]] = Field(default_factory=list)
    tools: list[dict[str, Any]] | None = None
    stream: bool = True
    format: str | dict[str, Any] | None = None
    options: dict[str, Any] | None = None

    @property
    def num_predict(self) -> int | None:
        """``options.num_predict`` as a cap: ``None`` when absent, not a number or ``<= 0``."""
        value = (self.options or {}).get("num_predict")
        if isinstance(value, bool) or not isinstance(value, int | float):
            return None
        return int(value) if value > 0 else None


class OllamaProtocol(Protocol):
    """Serves the Ollama API from a LangChain chat model."""

    name = "ollama"
    internal_error = (
        "model runner has unexpectedly stopped, this may be due to resource limitations or an internal "
        "error, check ollama server logs for details"
    )
    stream_broken = "an error was encountered while running the model: unexpected EOF"

    models = DEFAULT_OLLAMA_MODELS

    def __init__(self, model: BaseChatModel) -> None:
        super().__init__(model)
        self.details = {
            "stand_in": self.stand_in,
            "parent_model": "",
            "format": "gguf",
            "family": "llama",
            "families": ["llama"],
            "parameter_size": "8.0B",
            "quantization_level": "Q4_K_M",
        }

    def error_body(self, status: int, message: str) -> dict[str, Any]:
        return {"error": message}

    def invalid(self, exc: ValidationError) -> Response:
        """``model is required``, as Ollama says it, or pydantic's account."""
        missing_model = any(error["loc"] == ("model",) for error in exc.errors())
        return self.error(400, "model is required" if missing_model else str(exc))

    def not_found(self, request: Request) -> Response:
        return self.error(404, "404 page not found")  # Go's http.NotFound

    def routes(self) -> list[Route]:
        entry = {"modified_at": _MODIFIED, "size": 4_920_000_000, "digest": "0" * 64, "details": self.details}
        tags = {"models": [{"name": m, "model": m, **entry} for m in self.models]}
        return [
            self.route("/", lambda _: JSONResponse({"status": "Ollama is running"}), "GET"),
            self.route("/api/version", lambda _: JSONResponse({"version": OLLAMA_VERSION}), "GET"),
            self.route("/api/tags", lambda _: JSONResponse(tags), "GET"),
            self.route("/api/show", self._show),
            self.route("/api/chat", self._chat),
        ]

    def _show(self, call: Call) -> Response:
        name = str(call.fields.get("model") or call.fields.get("name") or "")  # ``name``: the legacy field
        if not name:
            return self.error(404, f"model '{name}' not found")
        return JSONResponse(
            {
                "license": "",
                "modelfile": f"# Emulated by erp-ai-harness\nFROM {name}\n",
                "parameters": "temperature 0",
                "template": "{{ .Prompt }}",
                "details": self.details,
                "model_info": {"general.architecture": "llama", "llama.context_length": 8192},
                "capabilities": ["completion", "tools"],
                "modified_at": _MODIFIED,
            }
        )

    def _chat(self, call: Call) -> Response:
        chat = self.parse(call, OllamaChatRequest)
        request = BackingRequest(  # before the fault: a bad request must not use one up
            messages=to_messages(chat.messages),
            tools=[tool if "type" in tool else {"type": "function", **tool} for tool in chat.tools or []],
            json_schema=chat.format if isinstance(chat.format, dict) else None,
            json_mode=chat.format == "json",
        )
        decision, reply = self.respond(call, request, stream=chat.stream, cap=chat.num_predict)
        mode = decision.mode
        if mode == "malformed_tool_call":
            name, arguments = reply.malformed_call
            raw = f'{{"name": "{name}", "arguments": {arguments}'
            error = f"error parsing tool call: raw='{raw}', err=unexpected end of JSON input"
            return chunked([encode({"error": error})], NDJSON) if chat.stream else self.error(500, error)

        def record(content: str = "", **fields: Any) -> dict[str, Any]:
            message = {"role": "assistant", "content": content}
            if calls := fields.pop("tool_calls", None):
                message["tool_calls"] = calls
            created = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
            return {"model": chat.model, "created_at": created, "message": message, "done": False, **fields}

        tool_calls = [
            {"function": {"index": i, "name": name, "arguments": args}}
            for i, (name, args) in enumerate(reply.tool_calls)
        ]
        done = _done(reply)
        if not chat.stream:
            return json_reply(record(reply.text, tool_calls=tool_calls, **done), cut=mode == "stream_break")
        text = [record(piece) for piece in stream_pieces(reply.text)]
        calls = [record(tool_calls=tool_calls)] if tool_calls else []
        records = self.cut_short(mode, text, [*text, *calls, record(**done)])
        return chunked(map(encode, records), NDJSON, cut=mode == "stream_break")


def _done(reply: BackingReply) -> dict[str, Any]:
    """The final record's fields."""
    total_ns = max(1, int(reply.duration_ms * 1_000_000))
    prompt_ns = total_ns * reply.input_tokens // max(1, reply.input_tokens + reply.output_tokens)
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
