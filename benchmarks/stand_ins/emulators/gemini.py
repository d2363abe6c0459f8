"""The Gemini Developer API protocol (``generateContent`` / ``streamGenerateContent``), as
``langchain_google_genai.ChatGoogleGenerativeAI`` (through ``google-genai``) uses it. JSON is camelCase.

- ``POST /{v1,v1beta,v1alpha}/models/{model}:generateContent`` returns one ``GenerateContentResponse``;
  ``:streamGenerateContent?alt=sse`` sends one SSE ``data: {…}`` per chunk, the text a few tokens at a time
  and the function calls whole in the last (without ``alt=sse``: one JSON array).
- Requests carry ``contents`` (roles ``user`` / ``model``; parts ``text``, ``functionCall``,
  ``functionResponse``), ``systemInstruction``, ``tools[].functionDeclarations`` (``parameters`` or
  ``parametersJsonSchema``), ``toolConfig.functionCallingConfig`` and ``generationConfig``
  (``responseMimeType``, ``responseJsonSchema`` or the OpenAPI-style ``responseSchema``, and
  ``maxOutputTokens``: a cut reply ends with ``finishReason: "MAX_TOKENS"``).
- Replies carry ``candidates[].content.parts``, ``finishReason``, ``usageMetadata`` (cumulative in every
  chunk, as the real API's; ``cachedContentTokenCount`` only when the backing model read from its cache)
  and ``modelVersion`` (LangChain's ``response_metadata["model_name"]``).
- Every call needs an API key (``x-goog-api-key`` or ``?key=``): none gives 403 ``PERMISSION_DENIED``, a
  wrong one (when the server has a key) 400 ``INVALID_ARGUMENT``. Errors are ``{"error": {"code",
  "message", "status"}}``.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Sequence
from typing import Any

from langchain_core.messages import BaseMessage
from pydantic import BaseModel, ConfigDict, Field, ValidationError
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from benchmarks.stand_ins.chunks import stream_pieces
from benchmarks.stand_ins.emulators._app import SSE, Call, Protocol, chunked, encode, json_reply
from benchmarks.stand_ins.emulators._backing import BackingReply, BackingRequest, to_messages

DEFAULT_GEMINI_MODELS: tuple[str, ...] = ("gemini-2.5-flash", "gemini-2.5-flash-lite")
_VERSIONS = ("v1", "v1beta", "v1alpha")
_METHODS = ("generateContent", "streamGenerateContent")
_STATUS_NAMES = {400: "INVALID_ARGUMENT", 403: "PERMISSION_DENIED", 404: "NOT_FOUND", 500: "INTERNAL"}
_NO_KEY = (
    "Method doesn't allow unregistered callers (callers without established identity). "
    "Please use API Key or other form of API consumer identity to call this API."
)


class _Wire(BaseModel):
    model_config = ConfigDict(extra="allow")


class GeminiPart(_Wire):
    """A ``text`` (unless a ``thought``), a ``functionCall`` or a ``functionResponse``."""

    text: str | None = None
    thought: bool | None = None
    functionCall: dict[str, Any] | None = None
    functionResponse: dict[str, Any] | None = None


class GeminiContent(_Wire):
    role: str | None = None
    parts: list[GeminiPart] = Field(default_factory=list)

    @property
    def text(self) -> str:
        return "".join(part.text for part in self.parts if part.text is not None and not part.thought)


class GeminiGenerateRequest(_Wire):
    """The ``generateContent`` body (``tools``, ``toolConfig`` and ``generationConfig`` read as JSON)."""

    contents: list[GeminiContent] = Field(min_length=1)
    systemInstruction: GeminiContent | None = None
    tools: list[dict[str, Any]] = Field(default_factory=list)
    toolConfig: dict[str, Any] = Field(default_factory=dict)
    generationConfig: dict[str, Any] = Field(default_factory=dict)

    def backing_request(self) -> BackingRequest:
        tools = [
            {
                "type": "function",
                "function": {
                    "name": declaration["name"],
                    "description": declaration.get("description") or "",
                    "parameters": declaration.get("parametersJsonSchema")
                    or openapi_to_json_schema(
                        declaration.get("parameters") or {"type": "object", "properties": {}}
                    ),
                },
            }
            for tool in self.tools
            for declaration in tool.get("functionDeclarations") or []
        ]
        calling = self.toolConfig.get("functionCallingConfig") or {}
        mode, tool_choice = str(calling.get("mode") or "").upper(), None
        if mode == "NONE":
            tools = []
        elif mode == "ANY":
            allowed = calling.get("allowedFunctionNames") or []
            tool_choice = allowed[0] if len(allowed) == 1 and len(tools) > 1 else "any"
        config = self.generationConfig
        schema = config.get("responseJsonSchema")
        if schema is None and config.get("responseSchema") is not None:
            schema = openapi_to_json_schema(config["responseSchema"])
        return BackingRequest(
            messages=to_langchain_messages(self.contents, self.systemInstruction),
            tools=tools,
            tool_choice=tool_choice,
            json_schema=schema,
            json_mode=schema is None
            and str(config.get("responseMimeType") or "").lower() == "application/json",
        )


def openapi_to_json_schema(schema: Any) -> Any:
    """A Gemini ``responseSchema`` / ``parameters`` (OpenAPI subset, ``"OBJECT"``-style types) as JSON
    schema (lower-case types)."""
    if isinstance(schema, list):
        return [openapi_to_json_schema(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    return {
        key: value.lower() if key == "type" and isinstance(value, str) else openapi_to_json_schema(value)
        for key, value in schema.items()
    }


def _result_text(response: dict[str, Any] | None) -> str:
    """A function response as the tool result's text: a lone ``output`` / ``result`` value, else the JSON."""
    if response and len(response) == 1 and next(iter(response)) in ("output", "result"):
        (value,) = response.values()
        return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return json.dumps(response, ensure_ascii=False) if response else ""


def to_langchain_messages(
    contents: Sequence[GeminiContent], system: GeminiContent | None = None
) -> list[BaseMessage]:
    """Gemini ``contents`` (and ``systemInstruction``) as LangChain messages; function responses pair with
    the calls by ``id``, then name, then order (:func:`to_messages`)."""
    wire: list[dict[str, Any]] = (
        [{"role": "system", "content": system.text}] if system and system.text else []
    )
    for content in contents:
        if content.role == "model":
            calls = [p.functionCall for p in content.parts if p.functionCall is not None]
            functions = [
                {"id": c.get("id"), "function": {"name": c.get("name"), "arguments": c.get("args") or {}}}
                for c in calls
            ]
            wire.append({"role": "assistant", "content": content.text, "tool_calls": functions})
            continue
        responses = [p.functionResponse for p in content.parts if p.functionResponse is not None]
        wire += [
            {
                "role": "tool",
                "tool_call_id": r.get("id"),
                "name": r.get("name"),
                "content": _result_text(r.get("response")),
            }
            for r in responses
        ]
        if content.text or not responses:
            wire.append({"role": "user", "content": content.text})
    return to_messages(wire)


class GeminiProtocol(Protocol):
    """Serves the Gemini ``generateContent`` API from a LangChain chat model."""

    name = "gemini"
    internal_error = (
        "An internal error has occurred. Please retry or report in "
        "https://developers.generativeai.google/guide/troubleshooting"
    )

    models = DEFAULT_GEMINI_MODELS

    def error_body(self, status: int, message: str) -> dict[str, Any]:
        return {"error": {"code": status, "message": message, "status": _STATUS_NAMES.get(status, "UNKNOWN")}}

    def invalid(self, exc: ValidationError) -> Response:
        return self.error(400, f"Invalid JSON payload received. {exc}")

    def not_found(self, request: Request) -> Response:
        return self.error(404, f"Method not found: {request.method} {request.url.path}")

    def guard(self, request: Request) -> Response | None:
        key = request.headers.get("x-goog-api-key") or request.query_params.get("key")
        if not key:
            return self.error(403, _NO_KEY)
        if self.api_key is not None and key != self.api_key:
            return self.error(400, "API key not valid. Please pass a valid API key.")
        return None

    def routes(self) -> list[Route]:
        """The model listing, one model's resource, and ``{model}:{method}`` calls."""
        return [
            self.route("/{version}/models", self._listing, "GET"),
            self.route("/{version}/models/{name}", self._listing, "GET"),
            self.route("/{version}/models/{name}", self._generate),
        ]

    def _entry(self, name: str) -> dict[str, Any]:
        return {
            "name": f"models/{name}",
            "version": "001",
            "displayName": name,
            "description": self.stand_in,
            "inputTokenLimit": 1_048_576,
            "outputTokenLimit": 65_536,
            "supportedGenerationMethods": ["generateContent", "countTokens"],
        }

    def _listing(self, call: Call) -> Response:
        if call.params["version"] not in _VERSIONS:
            return self.error(404, f"Method not found: GET {call.log.path}")
        name = call.params.get("name")
        return JSONResponse(self._entry(name) if name else {"models": [self._entry(m) for m in self.models]})

    def _generate(self, call: Call) -> Response:
        model_name, _, method = call.params["name"].partition(":")
        if call.params["version"] not in _VERSIONS or method not in _METHODS:
            return self.error(404, f"Method not found: {method or call.log.path}")
        stream, sse = method == "streamGenerateContent", call.log.query.get("alt") == ["sse"]
        body = self.parse(call, GeminiGenerateRequest)
        cap = body.generationConfig.get("maxOutputTokens")
        decision, reply = self.respond(call, body.backing_request(), stream=stream, cap=cap)
        mode, cut = decision.mode, decision.mode == "stream_break"
        response_id = uuid.uuid4().hex[:22]

        def record(candidate: dict[str, Any], written: int | None = None) -> dict[str, Any]:
            """One ``GenerateContentResponse``, with the usage so far (``written`` output tokens)."""
            output = reply.output_tokens if written is None else written
            usage = {
                "promptTokenCount": reply.input_tokens,
                "candidatesTokenCount": output,
                "totalTokenCount": reply.input_tokens + output,
            }
            if reply.cached_tokens:
                usage["cachedContentTokenCount"] = reply.cached_tokens
            return {
                "candidates": [{**candidate, "index": 0}],
                "usageMetadata": usage,
                "modelVersion": model_name,
                "responseId": response_id,
            }

        if mode == "malformed_tool_call":
            name, arguments = reply.malformed_call
            message = f"Malformed function call: {name}({arguments}"
            records = [record({"finishReason": "MALFORMED_FUNCTION_CALL", "finishMessage": message}, 0)]
        elif not stream:
            records = [record(_final(reply, reply.text))]
        else:
            # Text pieces, the last one (when no function call follows) in the closing record.
            pieces = stream_pieces(reply.text)
            text = [record({"content": {"role": "model", "parts": [{"text": p}]}}, 0) for p in pieces]
            last = "" if reply.tool_calls or not pieces else pieces[-1]
            records = self.cut_short(
                mode, text, [*text[: len(text) - bool(last)], record(_final(reply, last))]
            )
        if not (stream and sse):
            return json_reply(records if stream else records[0], cut=cut)
        return chunked((encode(r, b"data: ", b"\r\n\r\n") for r in records), SSE, cut=cut)


def _final(reply: BackingReply, text: str) -> dict[str, Any]:
    """The closing candidate: ``text``, the function calls, and why the reply ended."""
    parts: list[dict[str, Any]] = [{"text": text}] if text else []
    parts += [{"functionCall": {"name": name, "args": args}} for name, args in reply.tool_calls]
    return {
        "content": {"role": "model", "parts": parts},
        "finishReason": "MAX_TOKENS" if reply.cut else "STOP",
    }
