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
from collections.abc import Sequence
from typing import Any

from langchain_core.language_models import BaseChatModel
from pydantic import BaseModel, ConfigDict, Field, ValidationError
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from benchmarks.stand_ins.chunks import stream_pieces
from benchmarks.stand_ins.emulators._app import (
    SSE,
    Call,
    Protocol,
    before_break,
    chunked,
    encode,
    json_reply,
)
from benchmarks.stand_ins.emulators._backing import (
    MALFORMED_TOOL_ARGUMENTS,
    BackingRequest,
    answer,
    stand_in_label,
    to_messages,
)

DEFAULT_OPENAI_MODELS: tuple[str, ...] = ("gpt-4o-mini", "llama-3.1-8b-instruct")
"""Model ids ``GET /v1/models`` lists (any id is accepted in a request)."""

_FINGERPRINT = "fp_erp_ai_emulator"


class OpenAIChatRequest(BaseModel):
    """The ``/v1/chat/completions`` body (only the fields the emulator acts on are typed)."""

    model_config = ConfigDict(extra="allow")

    model: str = Field(min_length=1)
    messages: list[dict[str, Any]] = Field(min_length=1)
    tools: list[dict[str, Any]] | None = None
    tool_choice: str | dict[str, Any] | None = None
    response_format: dict[str, Any] = Field(default_factory=dict)
    max_tokens: int | None = None
    max_completion_tokens: int | None = None
    stream: bool | None = False
    stream_options: dict[str, Any] = Field(default_factory=dict)


def _backing_request(chat: OpenAIChatRequest) -> BackingRequest:
    tools = [tool if "type" in tool else {"type": "function", "function": tool} for tool in chat.tools or []]
    choice, tool_choice = chat.tool_choice, None
    if choice == "none":
        tools = []
    elif choice == "required":
        tool_choice = "any"
    elif isinstance(choice, dict):
        tool_choice = str((choice.get("function") or {}).get("name") or "any")
    kind, inner = chat.response_format.get("type"), chat.response_format.get("json_schema") or {}
    schema = inner.get("schema") if kind == "json_schema" and isinstance(inner.get("schema"), dict) else None
    return BackingRequest(
        messages=to_messages(chat.messages),
        tools=tools,
        tool_choice=tool_choice,
        json_schema=schema,
        json_mode=kind == "json_object" or (kind == "json_schema" and schema is None),
    )


class OpenAIProtocol(Protocol):
    """Serves the OpenAI Chat Completions API from a LangChain chat model."""

    name = "openai"
    internal_error = "The server had an error while processing your request. Sorry about that!"

    def __init__(
        self,
        model: BaseChatModel,
        *,
        api_key: str | None = None,
        models: Sequence[str] = DEFAULT_OPENAI_MODELS,
    ) -> None:
        """With ``api_key`` only that bearer key is accepted; otherwise any key (or none) is."""
        super().__init__(model, models, api_key)

    def error_body(
        self, status: int, message: str, *, param: str | None = None, code: str | None = None
    ) -> dict[str, Any]:
        """OpenAI's error body."""
        kind = "invalid_request_error" if status < 500 else "server_error"
        return {"error": {"message": message, "type": kind, "param": param, "code": code}}

    def invalid(self, exc: ValidationError) -> Response:
        """The first problem, with the field it is about as ``param``."""
        first = exc.errors()[0]
        param = ".".join(str(part) for part in first["loc"]) or None
        return JSONResponse(self.error_body(400, f"Invalid request: {first['msg']}", param=param), 400)

    def not_found(self, request: Request) -> Response:
        """OpenAI's 404."""
        return self.error(404, f"Unknown request URL: {request.method} {request.url.path}.")

    def guard(self, request: Request) -> Response | None:
        """With a configured key, any other bearer key gets 401 ``invalid_api_key``."""
        given = request.headers.get("authorization", "").removeprefix("Bearer ").strip()
        if self.api_key is None or given == self.api_key:
            return None
        shown = f"{given[:3]}…{given[-4:]}" if len(given) > 8 else given or "(none)"
        body = self.error_body(401, f"Incorrect API key provided: {shown}.", code="invalid_api_key")
        return JSONResponse(body, 401)

    def routes(self) -> list[Route]:
        """``/v1/models`` and ``/v1/chat/completions``, with or without the ``/v1`` prefix."""
        models = {"object": "list", "data": [self._entry(m) for m in self.models]}
        return [
            route
            for prefix in ("/v1", "")
            for route in (
                self.route(f"{prefix}/models", lambda _: JSONResponse(models), "GET"),
                self.route(f"{prefix}/chat/completions", self._chat),
            )
        ]

    def _entry(self, name: str) -> dict[str, Any]:
        return {
            "id": name,
            "object": "model",
            "created": 1_735_689_600,
            "owned_by": stand_in_label(self.model),
        }

    def _chat(self, call: Call) -> Response:
        chat = call.parse(OpenAIChatRequest)
        request = _backing_request(chat)  # before the fault: a bad request must not use one up
        decision = call.fault()
        mode = decision.mode
        if mode == "stream_error" and not chat.stream:
            return self.error(500, self.internal_error)
        cap = chat.max_completion_tokens if chat.max_completion_tokens is not None else chat.max_tokens
        reply = answer(self.model, request, decision, cap)
        completion_id = f"chatcmpl-{uuid.uuid4().hex[:24]}"
        calls = [(c.name, json.dumps(c.args, ensure_ascii=False)) for c in reply.tool_calls]
        if mode == "malformed_tool_call":
            calls = [
                (reply.tool_calls[0].name if reply.tool_calls else "ventas_anuales", MALFORMED_TOOL_ARGUMENTS)
            ]
        ids = [f"call_{completion_id[-12:]}_{i}" for i in range(len(calls))]
        tool_calls = [
            {"id": id_, "type": "function", "function": {"name": name, "arguments": args}}
            for id_, (name, args) in zip(ids, calls, strict=True)
        ]
        finish = "length" if reply.cut else "tool_calls" if tool_calls else "stop"
        usage = {
            "prompt_tokens": reply.input_tokens,
            "completion_tokens": reply.output_tokens,
            "total_tokens": reply.input_tokens + reply.output_tokens,
            "prompt_tokens_details": {"cached_tokens": reply.cached_tokens},
        }
        head = {
            "id": completion_id,
            "created": int(time.time()),
            "model": chat.model,
            "system_fingerprint": _FINGERPRINT,
        }
        cut = mode == "stream_break"
        if not chat.stream:
            content = reply.text if reply.text or not tool_calls else None
            message: dict[str, Any] = {"role": "assistant", "content": content, "refusal": None}
            if tool_calls:
                message["tool_calls"] = tool_calls
            choice = {"index": 0, "message": message, "logprobs": None, "finish_reason": finish}
            return json_reply(
                {**head, "object": "chat.completion", "choices": [choice], "usage": usage}, cut=cut
            )

        def chunk(delta: dict[str, Any], finish_reason: str | None = None) -> dict[str, Any]:
            choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish_reason}
            return {**head, "object": "chat.completion.chunk", "choices": [choice]}

        # The role, the text pieces, each tool call (its id and name, then its arguments in pieces under its
        # ``index``, as OpenAI streams them), the ``finish_reason`` chunk, then the usage-only chunk.
        records = [chunk({"role": "assistant", "content": "", "refusal": None})]
        text = [chunk({"content": piece}) for piece in stream_pieces(reply.text)]
        if mode in ("stream_error", "stream_break"):
            records += before_break(text) + ([self.error_body(500, self.internal_error)] if not cut else [])
        else:
            records += text
            for index, (id_, (name, args)) in enumerate(zip(ids, calls, strict=True)):
                opening = {
                    "index": index,
                    "id": id_,
                    "type": "function",
                    "function": {"name": name, "arguments": ""},
                }
                records.append(chunk({"tool_calls": [opening]}))
                records += [
                    chunk({"tool_calls": [{"index": index, "function": {"arguments": piece}}]})
                    for piece in stream_pieces(args)
                ]
            records.append(chunk({}, finish))
            if chat.stream_options.get("include_usage"):
                records.append({**head, "object": "chat.completion.chunk", "choices": [], "usage": usage})
        events = [encode(record, b"data: ", b"\n\n") for record in records]
        return chunked(events if cut else [*events, b"data: [DONE]\n\n"], SSE, cut=cut)
