"""The OpenAI-compatible Chat Completions protocol (``POST /v1/chat/completions``, ``GET /v1/models``), as
``langchain_openai.ChatOpenAI`` (through the ``openai`` SDK) uses it; llama.cpp's server, vLLM and LM Studio
speak it too.

- Requests carry ``messages`` (``tool_calls[].function.arguments`` is a JSON *string*), ``tools``,
  ``tool_choice`` (``auto``, ``none``, ``required`` or a named function), ``response_format``
  (``json_schema`` or ``json_object``) and an output cap, ``max_completion_tokens`` or the older
  ``max_tokens``.
- A reply is one ``chat.completion``: ``choices[0].message`` (``content`` ``null`` for only tool calls),
  ``finish_reason`` (``stop``, ``tool_calls``, or ``length`` when the cap cut it: the SDK's
  ``chat.completions.parse`` then raises ``LengthFinishReasonError``), and ``usage`` with
  ``prompt_tokens_details.cached_tokens`` (the backing model's ``cache_read``).
- ``"stream": true`` sends SSE ``chat.completion.chunk`` objects: the role, ``content`` pieces, each tool
  call's id and name with empty ``arguments`` then its arguments in pieces under its ``index``, the
  ``finish_reason`` chunk, a usage-only chunk (empty ``choices``) when ``stream_options.include_usage`` is
  set, then ``data: [DONE]``.
- Errors are ``{"error": {"message", "type", "param", "code"}}``. With an API key configured, any other
  bearer key gets 401 ``invalid_api_key``; without one, every key is accepted (as llama.cpp's server does).
"""

from __future__ import annotations

import json
import time
import uuid
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from benchmarks.stand_ins.chunks import stream_pieces
from benchmarks.stand_ins.emulators._app import SSE, Call, Protocol, chunked, encode, json_reply
from benchmarks.stand_ins.emulators._backing import BackingRequest, to_messages

DEFAULT_OPENAI_MODELS: tuple[str, ...] = ("gpt-4o-mini", "llama-3.1-8b-instruct")
"""Model ids ``GET /v1/models`` lists (a request may name any)."""
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

    def backing_request(self) -> BackingRequest:
        tools = [
            tool if "type" in tool else {"type": "function", "function": tool} for tool in self.tools or []
        ]
        choice, tool_choice = self.tool_choice, None
        if choice == "none":
            tools = []
        elif choice == "required":
            tool_choice = "any"
        elif isinstance(choice, dict):
            tool_choice = str((choice.get("function") or {}).get("name") or "any")
        kind, inner = self.response_format.get("type"), self.response_format.get("json_schema") or {}
        schema = (
            inner.get("schema") if kind == "json_schema" and isinstance(inner.get("schema"), dict) else None
        )
        return BackingRequest(
            messages=to_messages(self.messages),
            tools=tools,
            tool_choice=tool_choice,
            json_schema=schema,
            json_mode=kind == "json_object" or (kind == "json_schema" and schema is None),
        )


class OpenAIProtocol(Protocol):
    """Serves the OpenAI Chat Completions API from a LangChain chat model."""

    name = "openai"
    internal_error = "The server had an error while processing your request. Sorry about that!"

    models = DEFAULT_OPENAI_MODELS

    def error_body(
        self, status: int, message: str, *, param: str | None = None, code: str | None = None
    ) -> dict[str, Any]:
        kind = "invalid_request_error" if status < 500 else "server_error"
        return {"error": {"message": message, "type": kind, "param": param, "code": code}}

    def invalid(self, exc: ValidationError) -> Response:
        """The first problem, with the field it is about as ``param``."""
        first = exc.errors()[0]
        param = ".".join(str(part) for part in first["loc"]) or None
        return JSONResponse(self.error_body(400, f"Invalid request: {first['msg']}", param=param), 400)

    def not_found(self, request: Request) -> Response:
        return self.error(404, f"Unknown request URL: {request.method} {request.url.path}.")

    def guard(self, request: Request) -> Response | None:
        given = request.headers.get("authorization", "").removeprefix("Bearer ").strip()
        if self.api_key is None or given == self.api_key:
            return None
        shown = f"{given[:3]}…{given[-4:]}" if len(given) > 8 else given or "(none)"
        body = self.error_body(401, f"Incorrect API key provided: {shown}.", code="invalid_api_key")
        return JSONResponse(body, 401)

    def routes(self) -> list[Route]:
        """``/v1/models`` and ``/v1/chat/completions``, with or without the ``/v1`` prefix."""
        owner = self.stand_in
        models = {
            "object": "list",
            "data": [
                {"id": m, "object": "model", "created": 1_735_689_600, "owned_by": owner} for m in self.models
            ],
        }
        return [
            route
            for prefix in ("/v1", "")
            for route in (
                self.route(f"{prefix}/models", lambda _: JSONResponse(models), "GET"),
                self.route(f"{prefix}/chat/completions", self._chat),
            )
        ]

    def _chat(self, call: Call) -> Response:
        chat = self.parse(call, OpenAIChatRequest)
        cap = chat.max_completion_tokens if chat.max_completion_tokens is not None else chat.max_tokens
        decision, reply = self.respond(call, chat.backing_request(), stream=bool(chat.stream), cap=cap)
        mode, cut = decision.mode, decision.mode == "stream_break"
        completion_id = f"chatcmpl-{uuid.uuid4().hex[:24]}"
        calls = [(name, json.dumps(args, ensure_ascii=False)) for name, args in reply.tool_calls]
        if mode == "malformed_tool_call":
            calls = [reply.malformed_call]
        ids = [f"call_{completion_id[-12:]}_{i}" for i in range(len(calls))]
        finish = "length" if reply.cut else "tool_calls" if calls else "stop"
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
        if not chat.stream:
            tool_calls = [
                {"id": id_, "type": "function", "function": {"name": name, "arguments": args}}
                for id_, (name, args) in zip(ids, calls, strict=True)
            ]
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

        text = [chunk({"content": piece}) for piece in stream_pieces(reply.text)]
        rest = []
        for index, (id_, (name, args)) in enumerate(zip(ids, calls, strict=True)):
            opening = {
                "index": index,
                "id": id_,
                "type": "function",
                "function": {"name": name, "arguments": ""},
            }
            rest.append(chunk({"tool_calls": [opening]}))
            rest += [
                chunk({"tool_calls": [{"index": index, "function": {"arguments": piece}}]})
                for piece in stream_pieces(args)
            ]
        rest.append(chunk({}, finish))
        if chat.stream_options.get("include_usage"):
            rest.append({**head, "object": "chat.completion.chunk", "choices": [], "usage": usage})
        records = [
            chunk({"role": "assistant", "content": "", "refusal": None}),
            *self.cut_short(mode, text, [*text, *rest]),
        ]
        events = [encode(record, b"data: ", b"\n\n") for record in records]
        return chunked(events if cut else [*events, b"data: [DONE]\n\n"], SSE, cut=cut)
