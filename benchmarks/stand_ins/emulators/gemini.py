"""The Gemini Developer API protocol (``generateContent`` / ``streamGenerateContent``), backed by a LangChain
chat model, matching what ``langchain_google_genai.ChatGoogleGenerativeAI`` (through ``google-genai``) sends.

Wire facts this module follows:

- ``POST /{v1,v1beta}/models/{model}:generateContent`` returns one ``GenerateContentResponse``;
  ``:streamGenerateContent?alt=sse`` returns server-sent events, one ``data: {…}`` per chunk: the text a few
  tokens at a time, function calls whole in the last chunk.
  JSON is camelCase.
- Requests carry ``contents`` (roles ``user`` / ``model``; parts ``text``, ``functionCall``,
  ``functionResponse``), ``systemInstruction``, ``tools[].functionDeclarations`` (``parameters`` or
  ``parametersJsonSchema``), ``toolConfig.functionCallingConfig`` and ``generationConfig``
  (``responseMimeType`` plus ``responseJsonSchema`` or the OpenAPI-style ``responseSchema``).
- ``generationConfig.maxOutputTokens`` caps the output tokens: a longer reply is cut there and ends with
  ``finishReason: "MAX_TOKENS"`` (usage still reported), streaming or not.
- Replies carry ``candidates[].content.parts`` (``text`` / ``functionCall``), ``finishReason``,
  ``usageMetadata`` (cumulative in every stream chunk, as the real API does; ``cachedContentTokenCount``,
  the part of ``promptTokenCount`` served from a cache, when there is one: the backing model's
  ``cache_read``) and ``modelVersion``, which LangChain reports as ``response_metadata["model_name"]``.
- Every model call needs an API key (``x-goog-api-key`` header or ``?key=``): none gives 403
  ``PERMISSION_DENIED``; a wrong one (when the server was given a key) gives 400 ``INVALID_ARGUMENT``, as the
  real API does. Errors are ``{"error": {"code", "message", "status"}}``.
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import replace
from typing import Any
from urllib.parse import unquote

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

DEFAULT_GEMINI_MODELS: tuple[str, ...] = ("gemini-2.5-flash", "gemini-2.5-flash-lite")
"""Model names ``GET /v1beta/models`` lists."""

_ROUTE = re.compile(r"^/(?P<version>v1|v1beta|v1alpha)/models/(?P<model>[^/:]+):(?P<method>[A-Za-z]+)$")
_MODEL_ROUTE = re.compile(r"^/(?P<version>v1|v1beta|v1alpha)/models(?:/(?P<model>[^/:]+))?$")
_STATUS_NAMES = {
    400: "INVALID_ARGUMENT",
    403: "PERMISSION_DENIED",
    404: "NOT_FOUND",
    500: "INTERNAL",
    503: "UNAVAILABLE",
}
_INTERNAL = "An internal error has occurred. Please retry or report in https://developers.generativeai.google/guide/troubleshooting"
_NO_KEY = (
    "Method doesn't allow unregistered callers (callers without established identity). "
    "Please use API Key or other form of API consumer identity to call this API."
)


class _Wire(BaseModel):
    model_config = ConfigDict(extra="allow")


class GeminiFunctionCall(_Wire):
    """A ``functionCall`` part."""

    name: str
    args: dict[str, Any] = Field(default_factory=dict)
    id: str | None = None


class GeminiFunctionResponse(_Wire):
    """A ``functionResponse`` part."""

    name: str | None = None
    response: dict[str, Any] | None = None
    id: str | None = None


class GeminiPart(_Wire):
    """One part of a content; only the kinds this emulator understands are typed."""

    text: str | None = None
    thought: bool | None = None
    functionCall: GeminiFunctionCall | None = None
    functionResponse: GeminiFunctionResponse | None = None


class GeminiContent(_Wire):
    """A ``Content``: a role and its parts."""

    role: str | None = None
    parts: list[GeminiPart] = Field(default_factory=list)


class GeminiFunctionDeclaration(_Wire):
    """A declared function."""

    name: str
    description: str | None = None
    parameters: dict[str, Any] | None = None
    parametersJsonSchema: dict[str, Any] | None = None


class GeminiTool(_Wire):
    """An entry of ``tools``."""

    functionDeclarations: list[GeminiFunctionDeclaration] | None = None


class GeminiFunctionCallingConfig(_Wire):
    """``toolConfig.functionCallingConfig``."""

    mode: str | None = None
    allowedFunctionNames: list[str] | None = None


class GeminiToolConfig(_Wire):
    """``toolConfig``."""

    functionCallingConfig: GeminiFunctionCallingConfig | None = None


class GeminiGenerationConfig(_Wire):
    """``generationConfig`` (only the fields the emulator acts on are typed)."""

    responseMimeType: str | None = None
    responseJsonSchema: dict[str, Any] | None = None
    responseSchema: dict[str, Any] | None = None
    temperature: float | None = None
    maxOutputTokens: int | None = None


class GeminiGenerateRequest(_Wire):
    """The ``generateContent`` body."""

    contents: list[GeminiContent] = Field(min_length=1)
    systemInstruction: GeminiContent | None = None
    tools: list[GeminiTool] | None = None
    toolConfig: GeminiToolConfig | None = None
    generationConfig: GeminiGenerationConfig | None = None


def _finish_reason(reply: BackingReply) -> str:
    return "MAX_TOKENS" if reply.cut else "STOP"


def openapi_to_json_schema(schema: Any) -> Any:
    """Convert a Gemini ``responseSchema`` / ``parameters`` (OpenAPI subset, ``"OBJECT"``-style upper-case
    types) into JSON schema with lower-case types; anything else is kept."""
    if isinstance(schema, list):
        return [openapi_to_json_schema(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    converted: dict[str, Any] = {}
    for key, value in schema.items():
        if key == "type" and isinstance(value, str):
            converted[key] = value.lower()
        elif key in ("properties", "$defs", "definitions") and isinstance(value, dict):
            converted[key] = {name: openapi_to_json_schema(sub) for name, sub in value.items()}
        else:
            converted[key] = openapi_to_json_schema(value)
    return converted


def _text_of(content: GeminiContent) -> str:
    return "".join(part.text for part in content.parts if part.text is not None and not part.thought)


def _tool_result_text(response: dict[str, Any] | None) -> str:
    if not response:
        return ""
    if len(response) == 1:
        (value,) = response.values()
        if next(iter(response)) in ("output", "result"):
            return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return json.dumps(response, ensure_ascii=False)


def to_langchain_messages(
    contents: Sequence[GeminiContent], system: GeminiContent | None = None
) -> list[BaseMessage]:
    """Convert Gemini ``contents`` (and ``systemInstruction``) to LangChain messages.

    Function calls without an ``id`` get one; function responses are paired with the earlier calls by ``id``,
    then by name, then by order.
    """
    messages: list[BaseMessage] = []
    if system is not None and _text_of(system):
        messages.append(SystemMessage(content=_text_of(system)))
    pending: list[tuple[str, str]] = []
    counter = 0
    for content in contents:
        text = _text_of(content)
        calls = [part.functionCall for part in content.parts if part.functionCall is not None]
        responses = [part.functionResponse for part in content.parts if part.functionResponse is not None]
        if content.role == "model":
            tool_calls = []
            pending = []
            for call in calls:
                counter += 1
                call_id = call.id or f"call_{counter}"
                tool_calls.append(
                    {"name": call.name, "args": dict(call.args), "id": call_id, "type": "tool_call"}
                )
                pending.append((call_id, call.name))
            messages.append(AIMessage(content=text, tool_calls=tool_calls))
            continue
        for response in responses:
            match = next((p for p in pending if response.id and p[0] == response.id), None)
            match = match or next((p for p in pending if response.name and p[1] == response.name), None)
            match = match or (pending[0] if pending else None)
            if match is not None:
                pending.remove(match)
                call_id = match[0]
            else:
                counter += 1
                call_id = response.id or f"call_{counter}"
            messages.append(
                ToolMessage(
                    content=_tool_result_text(response.response),
                    tool_call_id=call_id,
                    name=response.name or (match[1] if match else "tool"),
                )
            )
        if text or not responses:
            messages.append(HumanMessage(content=text))
    return messages


class GeminiProtocol:
    """Serves the Gemini ``generateContent`` API from a LangChain chat model."""

    name = "gemini"

    def __init__(
        self,
        model: BaseChatModel,
        *,
        api_key: str | None = None,
        models: Sequence[str] = DEFAULT_GEMINI_MODELS,
    ) -> None:
        """With ``api_key`` only that key is accepted; otherwise any non-empty key is."""
        self.model = model
        self.api_key = api_key
        self.models = tuple(models)

    def error_reply(self, status: int, message: str) -> JsonReply:
        """Google's error body."""
        return JsonReply(
            status,
            {"error": {"code": status, "message": message, "status": _STATUS_NAMES.get(status, "UNKNOWN")}},
        )

    def handle(self, request: HttpRequest, log: LoggedRequest, faults: FaultSelector) -> Reply:
        """Check the API key and route one request."""
        path = unquote(request.path)
        key = request.header("x-goog-api-key") or next(iter(request.query.get("key", [])), None)
        if not key:
            return self.error_reply(403, _NO_KEY)
        if self.api_key is not None and key != self.api_key:
            return self.error_reply(400, "API key not valid. Please pass a valid API key.")
        if request.method == "GET" and (listing := _MODEL_ROUTE.match(path)):
            name = listing.group("model")
            if name is None:
                return JsonReply(200, {"models": [self._model_entry(m) for m in self.models]})
            return JsonReply(200, self._model_entry(name))
        route = _ROUTE.match(path)
        if request.method != "POST" or route is None:
            return self.error_reply(404, f"Method not found: {request.method} {path}")
        method = route.group("method")
        if method not in ("generateContent", "streamGenerateContent"):
            return self.error_reply(404, f"Method not found: {method}")
        return self._generate(
            request,
            log,
            faults,
            model_name=route.group("model"),
            stream=method == "streamGenerateContent",
        )

    def _model_entry(self, name: str) -> dict[str, Any]:
        return {
            "name": f"models/{name}",
            "version": "001",
            "displayName": name,
            "description": stand_in_label(self.model),
            "inputTokenLimit": 1_048_576,
            "outputTokenLimit": 65_536,
            "supportedGenerationMethods": ["generateContent", "countTokens"],
        }

    def _generate(
        self,
        request: HttpRequest,
        log: LoggedRequest,
        faults: FaultSelector,
        *,
        model_name: str,
        stream: bool,
    ) -> Reply:
        try:
            body = GeminiGenerateRequest.model_validate(request.body or {})
        except ValidationError as exc:
            return self.error_reply(400, f"Invalid JSON payload received. {exc}")
        try:
            decision = faults.decide(request.headers)
        except UnknownFaultError as exc:
            return self.error_reply(400, str(exc))
        log.fault = decision.mode
        if decision.mode == "stall":
            return StallReply()
        apply_delay(decision)
        sse = request.query.get("alt") == ["sse"]
        if decision.mode == "http_500" or (decision.mode == "stream_error" and not stream):
            return self.error_reply(500, _INTERNAL)

        backing = self._backing_request(body)
        reply = call_backing_model(self.model, backing)
        config = body.generationConfig or GeminiGenerationConfig()
        reply = shape_reply(
            backing,
            reply,
            fault=decision.reply_fault,
            index=decision.index,
            max_tokens=config.maxOutputTokens,
        )
        if decision.mode == "schema_invalid" and (backing.json_schema is not None or backing.json_mode):
            text = schema_invalid_text(reply.text, has_schema=backing.json_schema is not None)
            reply = replace(reply, text=text, tool_calls=[], simulated_ms=None)
        response_id = uuid.uuid4().hex[:22]
        if decision.mode == "malformed_tool_call":
            name = reply.tool_calls[0].name if reply.tool_calls else "ventas_anuales"
            candidate = {
                "finishReason": "MALFORMED_FUNCTION_CALL",
                "finishMessage": f"Malformed function call: {name}({MALFORMED_TOOL_ARGUMENTS}",
                "index": 0,
            }
            record = self._response(candidate, reply, model_name, response_id, output_tokens=0)
            return self._stream_reply([record], sse=sse) if stream else JsonReply(200, record)
        cut = decision.mode == "stream_break"
        if not stream:
            parts = self._parts(reply.text, reply)
            candidate = {
                "content": {"role": "model", "parts": parts},
                "finishReason": _finish_reason(reply),
                "index": 0,
            }
            return JsonReply(
                200,
                self._response(candidate, reply, model_name, response_id),
                cut=cut,
            )
        records = self._stream_records(
            reply, model_name, response_id, broken=decision.mode == "stream_error", cut=cut
        )
        return self._stream_reply(records, sse=sse, cut=cut)

    # -- helpers -----------------------------------------------------------------------------------------

    @staticmethod
    def _backing_request(body: GeminiGenerateRequest) -> BackingRequest:
        tools: list[dict[str, Any]] = []
        for tool in body.tools or []:
            for declaration in tool.functionDeclarations or []:
                parameters = declaration.parametersJsonSchema or openapi_to_json_schema(
                    declaration.parameters or {"type": "object", "properties": {}}
                )
                tools.append(
                    {
                        "type": "function",
                        "function": {
                            "name": declaration.name,
                            "description": declaration.description or "",
                            "parameters": parameters,
                        },
                    }
                )
        tool_choice: str | None = None
        calling = body.toolConfig.functionCallingConfig if body.toolConfig else None
        if calling is not None and calling.mode:
            mode = calling.mode.upper()
            if mode == "NONE":
                tools = []
            elif mode == "ANY":
                allowed = calling.allowedFunctionNames or []
                tool_choice = allowed[0] if len(allowed) == 1 and len(tools) > 1 else "any"
        config = body.generationConfig or GeminiGenerationConfig()
        schema = config.responseJsonSchema
        if schema is None and config.responseSchema is not None:
            schema = openapi_to_json_schema(config.responseSchema)
        json_mode = (config.responseMimeType or "").lower() == "application/json"
        return BackingRequest(
            messages=to_langchain_messages(body.contents, body.systemInstruction),
            tools=tools,
            tool_choice=tool_choice,
            json_schema=schema,
            json_mode=json_mode and schema is None,
        )

    @staticmethod
    def _parts(text: str, reply: BackingReply) -> list[dict[str, Any]]:
        parts: list[dict[str, Any]] = [{"text": text}] if text else []
        parts.extend({"functionCall": {"name": call.name, "args": call.args}} for call in reply.tool_calls)
        return parts

    @staticmethod
    def _response(
        candidate: dict[str, Any],
        reply: BackingReply,
        model_name: str,
        response_id: str,
        *,
        output_tokens: int | None = None,
    ) -> dict[str, Any]:
        """One ``GenerateContentResponse`` with the reply's usage (``output_tokens`` so far, when given)."""
        written = reply.output_tokens if output_tokens is None else output_tokens
        usage: dict[str, Any] = {
            "promptTokenCount": reply.input_tokens,
            "candidatesTokenCount": written,
            "totalTokenCount": reply.input_tokens + written,
        }
        if reply.cached_tokens:  # the API leaves the field out when nothing came from a cache
            usage["cachedContentTokenCount"] = reply.cached_tokens
        return {
            "candidates": [candidate],
            "usageMetadata": usage,
            "modelVersion": model_name,
            "responseId": response_id,
        }

    def _stream_records(
        self, reply: BackingReply, model_name: str, response_id: str, *, broken: bool, cut: bool
    ) -> Iterator[dict[str, Any]]:
        """Text pieces, then the function calls with ``finishReason`` and the complete usage.

        ``broken`` (``stream_error``) ends half-way through the text with an error event; ``cut``
        (``stream_break``) just stops there (the server drops the connection).
        """
        pieces = stream_pieces(reply.text)

        def text_record(piece: str) -> dict[str, Any]:
            candidate = {"content": {"role": "model", "parts": [{"text": piece}]}, "index": 0}
            return self._response(candidate, reply, model_name, response_id, output_tokens=0)

        if broken or cut:
            yield from (text_record(piece) for piece in before_break(pieces))
            if broken:
                yield self.error_reply(500, _INTERNAL).body
            return
        # Text first, then function calls; usage is cumulative, complete on the final (finishReason) chunk.
        last_parts: list[dict[str, Any]] = self._parts("", reply)
        if not last_parts and pieces:
            last_parts = [{"text": pieces.pop()}]
        yield from (text_record(piece) for piece in pieces)
        candidate = {
            "content": {"role": "model", "parts": last_parts},
            "finishReason": _finish_reason(reply),
            "index": 0,
        }
        yield self._response(candidate, reply, model_name, response_id)

    @staticmethod
    def _stream_reply(
        records: Iterator[dict[str, Any]] | list[dict[str, Any]], *, sse: bool, cut: bool = False
    ) -> Reply:
        """Server-sent events with ``alt=sse`` (what google-genai asks for); otherwise one JSON array."""
        if not sse:
            return JsonReply(200, list(records), cut=cut)

        def events() -> Iterator[bytes]:
            for record in records:
                yield b"data: " + json.dumps(record, ensure_ascii=False).encode() + b"\r\n\r\n"

        return StreamReply("text/event-stream", events(), cut=cut)
