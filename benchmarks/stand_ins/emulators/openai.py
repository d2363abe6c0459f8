"""The OpenAI-compatible Chat Completions protocol (``POST /v1/chat/completions``, ``GET /v1/models``), backed
by a LangChain chat model, matching what ``langchain_openai.ChatOpenAI`` (through the ``openai`` SDK) sends.

This is the API llama.cpp's server, vLLM, LM Studio and OpenAI itself speak. Wire facts this module follows:

- Requests carry ``messages`` (roles ``system`` / ``developer``, ``user``, ``assistant`` with ``tool_calls``
  whose ``function.arguments`` is a JSON *string*, ``tool`` with ``tool_call_id``), ``tools``
  (``{"type": "function", "function": {...}}``), ``tool_choice`` (``auto``, ``none``, ``required`` or
  ``{"type": "function", "function": {"name": …}}``), ``response_format`` (``json_schema`` with
  ``json_schema.schema``, or ``json_object``) and an output cap, ``max_completion_tokens`` or the older
  ``max_tokens``.
- A reply is one ``chat.completion`` with ``choices[0].message`` (``content`` is ``null`` when the reply is
  only tool calls) and ``finish_reason``: ``stop``, ``tool_calls``, or ``length`` when the cap cut it, which
  ``ChatOpenAI`` reports as ``response_metadata["finish_reason"]``; the SDK's ``chat.completions.parse``
  (used by ``with_structured_output(method="json_schema")``) raises ``LengthFinishReasonError`` on it.
  ``usage`` has ``prompt_tokens`` / ``completion_tokens`` / ``total_tokens`` and
  ``prompt_tokens_details.cached_tokens`` (the prompt tokens served from the server's prompt cache: the
  backing model's ``cache_read``), which ``ChatOpenAI`` reports as
  ``usage_metadata["input_token_details"]["cache_read"]``.
- ``"stream": true`` returns server-sent events of ``chat.completion.chunk`` objects (``delta`` with
  ``role``, ``content`` pieces of a few tokens, ``tool_calls`` with an ``index``: first the id and name with
  empty ``arguments``, then the arguments in pieces), then one with ``finish_reason``, then a usage-only
  chunk (empty ``choices``) when ``stream_options.include_usage`` is set, then ``data: [DONE]``.
- Errors are ``{"error": {"message", "type", "param", "code"}}``. With an API key configured, any other
  ``Authorization: Bearer`` key gets 401 ``invalid_api_key``; without one, every key is accepted (as a local
  llama.cpp server does).
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import replace
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from benchmarks.stand_ins.chunks import stream_pieces
from benchmarks.stand_ins.emulators._backing import (
    MALFORMED_TOOL_ARGUMENTS,
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

DEFAULT_OPENAI_MODELS: tuple[str, ...] = ("gpt-4o-mini", "llama-3.1-8b-instruct")
"""Model ids ``GET /v1/models`` lists (any id is accepted in a request)."""

_FINGERPRINT = "fp_erp_ai_emulator"
_TYPES = {400: "invalid_request_error", 401: "invalid_request_error", 404: "invalid_request_error"}
_STREAM_BROKEN = "The server had an error while processing your request. Sorry about that!"


class _Wire(BaseModel):
    model_config = ConfigDict(extra="allow")


class OpenAIFunctionCall(_Wire):
    """``tool_calls[].function`` of an assistant message."""

    name: str
    arguments: str | dict[str, Any] = "{}"


class OpenAIToolCall(_Wire):
    """One tool call of an assistant message in a request."""

    id: str | None = None
    type: str = "function"
    function: OpenAIFunctionCall


class OpenAIMessage(_Wire):
    """A message of ``/v1/chat/completions``; ``content`` may be text or a list of content parts."""

    role: str
    content: str | list[dict[str, Any]] | None = None
    tool_calls: list[OpenAIToolCall] | None = None
    tool_call_id: str | None = None
    name: str | None = None

    @property
    def text(self) -> str:
        """The text of ``content`` (text parts joined)."""
        if isinstance(self.content, list):
            return "".join(str(p.get("text", "")) for p in self.content if p.get("type") == "text")
        return self.content or ""


class OpenAIChatRequest(_Wire):
    """The ``/v1/chat/completions`` body (only the fields the emulator acts on are typed)."""

    model: str = Field(min_length=1)
    messages: list[OpenAIMessage] = Field(min_length=1)
    tools: list[dict[str, Any]] | None = None
    tool_choice: str | dict[str, Any] | None = None
    response_format: dict[str, Any] | None = None
    max_tokens: int | None = None
    max_completion_tokens: int | None = None
    stream: bool | None = False
    stream_options: dict[str, Any] | None = None

    @property
    def output_cap(self) -> int | None:
        """``max_completion_tokens``, else ``max_tokens`` (``None``: no cap)."""
        return self.max_completion_tokens if self.max_completion_tokens is not None else self.max_tokens


def _arguments(call: OpenAIToolCall) -> dict[str, Any]:
    arguments = call.function.arguments
    if isinstance(arguments, dict):
        return dict(arguments)
    try:
        parsed = json.loads(arguments or "{}")
    except json.JSONDecodeError as exc:
        raise BadRequestError(400, _error_body(400, f"Invalid tool call arguments: {exc}")) from exc
    if not isinstance(parsed, dict):
        raise BadRequestError(400, _error_body(400, "Tool call arguments must be a JSON object."))
    return parsed


def to_langchain_messages(messages: Sequence[OpenAIMessage]) -> list[BaseMessage]:
    """Convert Chat Completions messages to LangChain messages; tool results keep their ``tool_call_id``."""
    result: list[BaseMessage] = []
    names: dict[str, str] = {}
    for index, message in enumerate(messages):
        if message.role in ("system", "developer"):
            result.append(SystemMessage(content=message.text))
        elif message.role == "user":
            result.append(HumanMessage(content=message.text))
        elif message.role == "assistant":
            calls = []
            for number, call in enumerate(message.tool_calls or []):
                call_id = call.id or f"call_{index}_{number}"
                names[call_id] = call.function.name
                calls.append(
                    {"name": call.function.name, "args": _arguments(call), "id": call_id, "type": "tool_call"}
                )
            result.append(AIMessage(content=message.text, tool_calls=calls))
        elif message.role == "tool":
            call_id = message.tool_call_id or f"call_{index}"
            name = message.name or names.get(call_id, "tool")
            result.append(ToolMessage(content=message.text, tool_call_id=call_id, name=name))
        else:
            supported = "'system', 'developer', 'user', 'assistant' and 'tool'"
            error = f"Invalid value: '{message.role}'. Supported values are: {supported}."
            raise BadRequestError(400, _error_body(400, error, param=f"messages[{index}].role"))
    return result


def _error_body(status: int, message: str, *, param: str | None = None, code: str | None = None) -> Any:
    return {
        "error": {
            "message": message,
            "type": _TYPES.get(status, "server_error"),
            "param": param,
            "code": code,
        }
    }


class OpenAIProtocol:
    """Serves the OpenAI Chat Completions API from a LangChain chat model."""

    name = "openai"

    def __init__(
        self,
        model: BaseChatModel,
        *,
        api_key: str | None = None,
        models: Sequence[str] = DEFAULT_OPENAI_MODELS,
    ) -> None:
        """With ``api_key`` only that bearer key is accepted; otherwise any key (or none) is."""
        self.model = model
        self.api_key = api_key
        self.models = tuple(models)

    def error_reply(self, status: int, message: str) -> JsonReply:
        """OpenAI's error body."""
        return JsonReply(status, _error_body(status, message))

    def handle(self, request: HttpRequest, log: LoggedRequest, faults: FaultSelector) -> Reply:
        """Check the API key and route one request (with or without the ``/v1`` prefix)."""
        if self.api_key is not None:
            given = (request.header("authorization") or "").removeprefix("Bearer ").strip()
            if given != self.api_key:
                shown = f"{given[:3]}…{given[-4:]}" if len(given) > 8 else given or "(none)"
                return JsonReply(
                    401,
                    _error_body(401, f"Incorrect API key provided: {shown}.", code="invalid_api_key"),
                )
        path = request.path.rstrip("/").removeprefix("/v1") or "/"
        if (request.method, path) == ("GET", "/models"):
            return JsonReply(200, {"object": "list", "data": [self._model_entry(m) for m in self.models]})
        if (request.method, path) == ("POST", "/chat/completions"):
            return self._chat(request, log, faults)
        return self.error_reply(404, f"Unknown request URL: {request.method} {request.path}.")

    def _model_entry(self, name: str) -> dict[str, Any]:
        return {
            "id": name,
            "object": "model",
            "created": 1_735_689_600,
            "owned_by": stand_in_label(self.model),
        }

    def _chat(self, request: HttpRequest, log: LoggedRequest, faults: FaultSelector) -> Reply:
        try:
            chat = OpenAIChatRequest.model_validate(request.body or {})
        except ValidationError as exc:
            first = exc.errors()[0]
            param = ".".join(str(part) for part in first["loc"]) or None
            return JsonReply(400, _error_body(400, f"Invalid request: {first['msg']}", param=param))
        backing = self._backing_request(chat)  # before the fault: a bad request must not use one up
        try:
            decision = faults.decide(request.headers)
        except UnknownFaultError as exc:
            return self.error_reply(400, str(exc))
        log.fault = decision.mode
        if decision.mode == "stall":
            return StallReply()
        apply_delay(decision)
        if decision.mode == "http_500" or (decision.mode == "stream_error" and not chat.stream):
            return self.error_reply(500, _STREAM_BROKEN)

        reply = call_backing_model(self.model, backing)
        reply = shape_reply(
            backing, reply, fault=decision.reply_fault, index=decision.index, max_tokens=chat.output_cap
        )
        if decision.mode == "schema_invalid" and (backing.json_schema is not None or backing.json_mode):
            text = schema_invalid_text(reply.text, has_schema=backing.json_schema is not None)
            reply = replace(reply, text=text, tool_calls=[], simulated_ms=None)
        completion_id = f"chatcmpl-{uuid.uuid4().hex[:24]}"
        tool_calls = [
            {
                "id": f"call_{completion_id[-12:]}_{i}",
                "type": "function",
                "function": {"name": call.name, "arguments": json.dumps(call.args, ensure_ascii=False)},
            }
            for i, call in enumerate(reply.tool_calls)
        ]
        if decision.mode == "malformed_tool_call":
            name = reply.tool_calls[0].name if reply.tool_calls else "ventas_anuales"
            tool_calls = [
                {
                    "id": f"call_{completion_id[-12:]}_0",
                    "type": "function",
                    "function": {"name": name, "arguments": MALFORMED_TOOL_ARGUMENTS},
                }
            ]
        finish = "length" if reply.cut else "tool_calls" if tool_calls else "stop"
        usage = {
            "prompt_tokens": reply.input_tokens,
            "completion_tokens": reply.output_tokens,
            "total_tokens": reply.input_tokens + reply.output_tokens,
            "prompt_tokens_details": {"cached_tokens": reply.cached_tokens},
        }
        head = {"id": completion_id, "created": int(time.time()), "model": chat.model}
        cut = decision.mode == "stream_break"
        if not chat.stream:
            message: dict[str, Any] = {
                "role": "assistant",
                "content": reply.text if reply.text or not tool_calls else None,
                "refusal": None,
            }
            if tool_calls:
                message["tool_calls"] = tool_calls
            choice = {"index": 0, "message": message, "logprobs": None, "finish_reason": finish}
            return JsonReply(
                200,
                {
                    **head,
                    "object": "chat.completion",
                    "choices": [choice],
                    "usage": usage,
                    "system_fingerprint": _FINGERPRINT,
                },
                cut=cut,
            )
        include_usage = bool((chat.stream_options or {}).get("include_usage"))
        records = self._stream_records(
            head,
            reply.text,
            tool_calls,
            finish,
            usage if include_usage else None,
            broken=decision.mode == "stream_error",
            cut=cut,
        )
        return StreamReply("text/event-stream", self._events(records, done=not cut), cut=cut)

    # -- helpers -----------------------------------------------------------------------------------------

    @staticmethod
    def _backing_request(chat: OpenAIChatRequest) -> BackingRequest:
        tools = [
            tool if "type" in tool else {"type": "function", "function": tool} for tool in chat.tools or []
        ]
        tool_choice: str | None = None
        choice = chat.tool_choice
        if choice == "none":
            tools = []
        elif choice == "required":
            tool_choice = "any"
        elif isinstance(choice, dict):
            name = (choice.get("function") or {}).get("name")
            tool_choice = str(name) if name else "any"
        schema: dict[str, Any] | None = None
        json_mode = False
        response_format = chat.response_format or {}
        if response_format.get("type") == "json_schema":
            inner = response_format.get("json_schema") or {}
            schema = inner.get("schema") if isinstance(inner.get("schema"), dict) else None
            json_mode = schema is None
        elif response_format.get("type") == "json_object":
            json_mode = True
        return BackingRequest(
            messages=to_langchain_messages(chat.messages),
            tools=tools,
            tool_choice=tool_choice,
            json_schema=schema,
            json_mode=json_mode,
        )

    @staticmethod
    def _stream_records(
        head: dict[str, Any],
        text: str,
        tool_calls: list[dict[str, Any]],
        finish: str,
        usage: dict[str, Any] | None,
        *,
        broken: bool,
        cut: bool,
    ) -> Iterator[dict[str, Any]]:
        """The role, text pieces, each tool call (id and name, then its arguments in pieces under its
        ``index``, as OpenAI streams them), the ``finish_reason`` chunk, then the usage-only chunk.

        ``broken`` (``stream_error``) ends half-way through the text with an error event; ``cut``
        (``stream_break``) just stops there (the server drops the connection).
        """

        def chunk(delta: dict[str, Any], finish_reason: str | None = None) -> dict[str, Any]:
            choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish_reason}
            return {
                **head,
                "object": "chat.completion.chunk",
                "system_fingerprint": _FINGERPRINT,
                "choices": [choice],
            }

        yield chunk({"role": "assistant", "content": "", "refusal": None})
        pieces = stream_pieces(text)
        if broken or cut:
            yield from (chunk({"content": piece}) for piece in before_break(pieces))
            if broken:
                yield _error_body(500, _STREAM_BROKEN)
            return
        yield from (chunk({"content": piece}) for piece in pieces)
        for index, call in enumerate(tool_calls):
            function = call["function"]
            opening = {"index": index, "id": call["id"], "type": "function"}
            yield chunk(
                {"tool_calls": [{**opening, "function": {"name": function["name"], "arguments": ""}}]}
            )
            for piece in stream_pieces(function["arguments"]):
                yield chunk({"tool_calls": [{"index": index, "function": {"arguments": piece}}]})
        yield chunk({}, finish)
        if usage is not None:
            yield {
                **head,
                "object": "chat.completion.chunk",
                "system_fingerprint": _FINGERPRINT,
                "choices": [],
                "usage": usage,
            }

    @staticmethod
    def _events(records: Iterator[dict[str, Any]], *, done: bool = True) -> Iterator[bytes]:
        for record in records:
            yield b"data: " + json.dumps(record, ensure_ascii=False).encode() + b"\n\n"
        if done:
            yield b"data: [DONE]\n\n"
