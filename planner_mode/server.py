"""The stateless AI server (article §13–14): ``POST /ai/analyze``, ``POST /ai/respond``, ``GET /healthz``.

Every request carries everything needed; the server keeps no conversation state in memory or on disk, so any
number of instances (``uvicorn --workers N``, several hosts) can serve any turn of any conversation.

Every error is a JSON :class:`~planner_mode.wire.ErrorResponse` (``{"error", "kind", "usage", "detail"}``),
never a stack trace. In the order a request meets them:

- **Bearer token** (``token=`` or ``ERP_AI_SERVER_TOKEN``): checked first, before the body is read, on every
  path but ``/healthz``: a missing or wrong token gets 401 even when the body is invalid or oversized. With a
  token, ``/openapi.json`` needs it too, and ``/docs`` and ``/redoc`` are switched off (a browser cannot send
  the token; fetch the schema with the header instead). Without a token everything is open: bind a loopback
  address, or see :func:`bind_warning`.
- **Body size**: more than ``max_body_bytes``: 413.
- **Unknown path or method**: 404, kind ``not_found``; 405, kind ``method_not_allowed``, with an ``Allow``
  header (after the token: without it, any path but ``/healthz`` is a 401).
- **Invalid body**: 422, kind ``invalid_request``, ``detail`` naming the fields. That covers bodies that are
  not UTF-8, not JSON (FastAPI's own 400 for these is replaced), JSON that Python accepts but JSON does not
  (``NaN``, a lone surrogate escape such as ``"\\ud800"``, which no UTF-8 text can hold), nesting deeper than
  200 levels, a body not sent as ``application/json``, and bodies that fail the request model: a question
  the ERP would refuse (empty or blank, over :data:`~shared.inputs.MAX_QUESTION_CHARS` characters, a control
  character but tab and line ends: :func:`shared.inputs.check_question`), a context beyond the bounds the
  memory store builds it to (:mod:`shared.bounds`) or holding a control character, a catalog over
  :data:`~planner_mode.wire.MAX_CATALOG_OPERATIONS` operations or
  :data:`~planner_mode.wire.MAX_CATALOG_CHARS` characters. The HTTP client builds the same request models,
  so the ERP side and the server refuse the same requests; none of them reaches the model.
- **Model or provider failures**: 502 with the failed call's ``usage``.
- **Unexpected errors**: 500 ``Internal error in the AI server (ref XXXXXXXX).``; the traceback is logged
  under that reference to the ``planner_mode.server`` logger, never sent.

**Streaming.** ``POST /ai/respond`` with ``Accept: application/x-ndjson`` answers ``200`` in NDJSON, one JSON
object per line (:data:`~planner_mode.wire.RespondStreamLine`), as soon as call 2 writes the answer's first
characters::

    {"type": "answer_delta", "text": "..."}          # the answer's text, as the model writes it
    {"type": "response", "answer": {...}, "usage": {...}}   # last: the RespondResponse
    {"type": "error", "error": "...", "kind": "...", "usage": {...}}  # last instead, if the model failed

The answer deltas concatenated are ``answer.respuesta``. ``POST /ai/analyze`` streams the same way
(:data:`~planner_mode.wire.AnalyzeStreamLine`): its deltas are a direct answer (``plan.respuesta_directa``)
as call 1 writes it, when the reply starts with one, and its ``response`` line carries ``plan`` and ``usage``;
a plan with operations streams no delta, only its last line. Everything found before the first line keeps its
status code and JSON error body: the token, the size, an invalid body and a model failure before the first
delta. A failure after it is the ``error`` line (model failures with their kind and usage; an unexpected error
as ``internal`` with only its reference, the traceback going to the log as above).

**Logging.** Every request is logged once on ``planner_mode.server`` when its response has been sent (INFO;
DEBUG for ``/healthz``), with its fields in ``record.erp_ai``: ``method``, ``path``, ``status``, ``kind`` (the
error kind, or ``None``), ``streamed``, ``model_calls``, ``input_tokens``, ``output_tokens``, ``model_ms`` and
``ms`` (wall time of the whole request). No question, result or answer text is logged.

The endpoints are ``async``: the model is called with ``ainvoke``/``astream``, not from a thread per request.
A body larger than :data:`INLINE_PARSE_BYTES` is parsed in a worker thread, so that reading it does not hold
up the other requests (``/healthz`` included); every request's text is bounded (above), so what is left on
the event loop per request (validation, prompt rendering) is bounded too.

**Garbage collection.** Served by :func:`app_from_env` (``erp-ai serve``), the app tunes Python's cyclic
garbage collector for its lifetime (:func:`serving_gc`): the objects that exist once the server has started
(the imported libraries, the app, the models: hundreds of thousands) are frozen out of the collector's scans,
and the youngest generation is collected every :data:`SERVING_GC_THRESHOLD` net allocations instead of 700.
Each request allocates many short-lived containers (prompt messages, LangChain runs, pydantic models) that
reference counting frees anyway; with the defaults the collector ran several times per request and every
full collection rescanned the whole startup heap, pausing every request in flight for a fifth of a second on
a busy machine. The previous settings come back when the app shuts down.

Run it with ``uvicorn --factory planner_mode.server:app_from_env`` (configuration from the environment).
"""

# ruff: noqa: E402  (FastAPI is imported after checking that the [server] extra is installed)
from __future__ import annotations

import gc
import ipaddress
import json
import logging
import os
import secrets
import time
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Coroutine, Sequence
from contextlib import aclosing, asynccontextmanager
from dataclasses import dataclass
from typing import Any

from shared.extras import require

# Without the [server] extra: one line naming it, not a ModuleNotFoundError traceback.
require("fastapi", "server", "The AI server (planner_mode.server)")

from fastapi import FastAPI, Request, Response
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, StreamingResponse
from fastapi.routing import APIRoute
from langchain_core.language_models import BaseChatModel
from pydantic import TypeAdapter
from pydantic_core import from_json
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from planner_mode.ai import PlannerAI
from planner_mode.client import AICallError, InProcessAIClient
from planner_mode.wire import (
    NDJSON,
    AnalyzeLine,
    AnalyzeRequest,
    AnalyzeResponse,
    AnalyzeStreamLine,
    AnswerDeltaLine,
    CallUsage,
    ErrorKind,
    ErrorLine,
    ErrorResponse,
    FieldError,
    RespondLine,
    RespondRequest,
    RespondResponse,
    RespondStreamLine,
)
from shared.errors import ConfigurationError, ModelOutputError, OutputLimitError, ProviderTimeoutError

__all__ = [
    "DEFAULT_MAX_BODY_BYTES",
    "INLINE_PARSE_BYTES",
    "BearerAuth",
    "BodySizeLimit",
    "RequestLog",
    "app_from_env",
    "bind_warning",
    "create_app",
    "serving_gc",
]

DEFAULT_MAX_BODY_BYTES = 1_000_000
"""Default request body limit: far above any real context + catalog, far below a memory problem."""

INLINE_PARSE_BYTES = 64_000
"""Bodies up to this size are parsed on the event loop (well under a millisecond); larger ones in a thread."""

SERVING_GC_THRESHOLD = 10_000
"""Net container allocations between two young-generation collections while serving (Python: 700)."""

TOKEN_ENV = "ERP_AI_SERVER_TOKEN"
PUBLIC_PATHS = frozenset({"/healthz"})
"""Paths served without the token."""

logger = logging.getLogger("planner_mode.server")

_MAX_FIELD_ERRORS = 20
_ERROR_RESPONSES: dict[int | str, dict[str, Any]] = {
    401: {"model": ErrorResponse, "description": "Missing or wrong bearer token (checked before the body)."},
    413: {"model": ErrorResponse, "description": "Request body too large."},
    422: {"model": ErrorResponse, "description": "Invalid request body; `detail` names the fields."},
    500: {"model": ErrorResponse, "description": "Unexpected server error; the log has it under `ref`."},
    502: {"model": ErrorResponse, "description": "The model or its provider failed."},
}
_STREAM_LINE_SCHEMA = TypeAdapter(RespondStreamLine).json_schema(
    mode="serialization", ref_template="#/components/schemas/{model}"
)
"""JSON schema of one NDJSON line; its ``$defs`` go to the OpenAPI components (see ``_document_stream``)."""
_ANALYZE_LINE_SCHEMA = TypeAdapter(AnalyzeStreamLine).json_schema(
    mode="serialization", ref_template="#/components/schemas/{model}"
)


def _streamed_responses(what: str, schema: dict[str, Any]) -> dict[int | str, dict[str, Any]]:
    """The documented responses of an endpoint that streams on ``Accept: application/x-ndjson``."""
    return {
        200: {
            "description": (
                f"{what} and its usage (`application/json`), or with `Accept: application/x-ndjson` "
                "streamed: one JSON object per line, `answer_delta` lines then one `response` or `error` "
                "line."
            ),
            "content": {NDJSON: {"schema": {k: v for k, v in schema.items() if k != "$defs"}}},
        },
        **_ERROR_RESPONSES,
    }


_RESPOND_RESPONSES = _streamed_responses("The answer", _STREAM_LINE_SCHEMA)
_ANALYZE_RESPONSES = _streamed_responses(
    "The plan (a direct answer's text in the deltas)", _ANALYZE_LINE_SCHEMA
)


def _effective_token(token: str | None) -> str | None:
    """``token``, or ``$ERP_AI_SERVER_TOKEN`` when it is ``None``; an empty value means no token."""
    return (token if token is not None else os.environ.get(TOKEN_ENV)) or None


def _is_loopback(host: str) -> bool:
    name = host.strip().strip("[]").split("%", 1)[0].rstrip(".").lower()
    if name == "localhost" or name.endswith(".localhost"):
        return True
    try:
        address = ipaddress.ip_address(name)
    except ValueError:
        return False  # a host name other than localhost: it may resolve to anything
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return address.ipv4_mapped.is_loopback
    return address.is_loopback


def bind_warning(host: str, token: str | None) -> str | None:
    """A warning to print when the server would listen beyond this machine without a token, else ``None``.

    ``token`` is read like :func:`create_app` reads it (``None``: ``$ERP_AI_SERVER_TOKEN``; empty: none).
    Loopback means ``localhost``, ``127.0.0.0/8`` or ``::1``; any other host, including ``0.0.0.0``, ``::``
    and the empty host (all interfaces), gets the warning.
    """
    if _effective_token(token) is not None or _is_loopback(host):
        return None
    where = host or "all interfaces"
    return (
        f"The AI server will listen on {where}, which is not a loopback address, without a bearer token: "
        "anyone who can reach it can use your model. Set a token (--token or ERP_AI_SERVER_TOKEN) or bind "
        "127.0.0.1."
    )


async def _send_error(send: Send, status_code: int, body: ErrorResponse, headers: dict[str, str]) -> None:
    response = JSONResponse(status_code=status_code, content=body.model_dump(mode="json"), headers=headers)
    await response({"type": "http"}, _no_receive, send)


async def _no_receive() -> Message:  # pragma: no cover - JSONResponse never reads the request
    return {"type": "http.disconnect"}


_UNAUTHORIZED = ErrorResponse(error="Missing or wrong bearer token.", kind="unauthorized")


class BearerAuth:
    """ASGI middleware: answer 401 unless ``Authorization: Bearer <token>`` matches; runs before the body.

    As the outermost middleware it refuses a request from its headers alone: nothing of the body is read,
    so a wrong token is a 401 whatever the body is (invalid, oversized, never sent). ``public_paths`` pass.
    """

    def __init__(self, app: ASGIApp, token: str, public_paths: frozenset[str] = PUBLIC_PATHS) -> None:
        self.app = app
        self._expected = token.encode()
        self.public_paths = public_paths

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"] in self.public_paths or self._authorised(scope):
            await self.app(scope, receive, send)
            return
        await _send_error(send, 401, _UNAUTHORIZED, {"WWW-Authenticate": "Bearer"})

    def _authorised(self, scope: Scope) -> bool:
        header = dict(scope.get("headers", [])).get(b"authorization", b"")
        scheme, _, credentials = header.partition(b" ")
        # Compare even when the scheme is wrong, so that the time taken says nothing about the token.
        matches = secrets.compare_digest(credentials.strip(), self._expected)
        return scheme.lower() == b"bearer" and matches


class BodySizeLimit:
    """ASGI middleware: answer 413 when a request body exceeds ``max_body_bytes``.

    A declared ``Content-Length`` above the limit is refused before anything is read. Every body, declared or
    not (chunked), is then read into memory, counting bytes up to the limit, before the app sees it: the app
    reads whole bodies anyway, and a missing, malformed or lying header cannot get a larger body through.
    """

    def __init__(self, app: ASGIApp, max_body_bytes: int) -> None:
        self.app = app
        self.max_body_bytes = max_body_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = dict(scope.get("headers", [])).get(b"content-length", b"")
        if declared.isdigit() and int(declared) > self.max_body_bytes:
            await self._reject(send)
            return
        buffered: list[Message] = []
        size = 0
        while True:
            message = await receive()
            buffered.append(message)
            if message["type"] != "http.request":
                break
            size += len(message.get("body", b""))
            if size > self.max_body_bytes:
                await self._reject(send)
                return
            if not message.get("more_body", False):
                break

        async def replay() -> Message:
            return buffered.pop(0) if buffered else await receive()

        await self.app(scope, replay, send)

    async def _reject(self, send: Send) -> None:
        body = ErrorResponse(
            error=f"Request body too large (limit {self.max_body_bytes} bytes).", kind="too_large"
        )
        await _send_error(send, 413, body, {})


@dataclass
class _Outcome:
    """What an endpoint tells :class:`RequestLog` about its request (kept in ``request.state``)."""

    usage: CallUsage | None = None
    kind: ErrorKind | None = None
    streamed: bool = False


_OUTCOME_KEY = "erp_ai_outcome"
_KIND_BY_STATUS: dict[int, ErrorKind] = {
    401: "unauthorized",
    404: "not_found",
    405: "method_not_allowed",
    413: "too_large",
    422: "invalid_request",
    500: "internal",
    502: "provider",
}


def _outcome(request: Request) -> _Outcome:
    """The request's :class:`_Outcome`, created on first use."""
    outcome: _Outcome | None = getattr(request.state, _OUTCOME_KEY, None)
    if outcome is None:
        outcome = _Outcome()
        setattr(request.state, _OUTCOME_KEY, outcome)
    return outcome


class RequestLog:
    """ASGI middleware: log each request once, after its response (a stream included) has been sent.

    INFO on ``planner_mode.server`` (DEBUG for ``public_paths``, the liveness probe), fields in
    ``record.erp_ai``: method, path, status, kind, streamed, model calls, tokens, model and wall time. Only
    what the endpoints note (usage, error kind) and the status are read: no body, question or answer.
    """

    def __init__(self, app: ASGIApp, public_paths: frozenset[str] = PUBLIC_PATHS) -> None:
        self.app = app
        self.public_paths = public_paths

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        status = 500  # what the client gets when the app raises before answering

        async def sending(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = int(message["status"])
            await send(message)

        state = scope.setdefault("state", {})
        try:
            await self.app(scope, receive, sending)
        finally:
            self._log(scope, status, state.get(_OUTCOME_KEY) or _Outcome(), started)

    def _log(self, scope: Scope, status: int, outcome: _Outcome, started: float) -> None:
        level = logging.DEBUG if scope["path"] in self.public_paths else logging.INFO
        if not logger.isEnabledFor(level):
            return
        usage = outcome.usage or CallUsage()
        fields: dict[str, Any] = {
            "method": scope.get("method", ""),
            "path": scope["path"],
            "status": status,
            "kind": outcome.kind or (_KIND_BY_STATUS.get(status) if status >= 400 else None),
            "streamed": outcome.streamed,
            "model_calls": usage.model_calls,
            "input_tokens": usage.input_tokens,
            "output_tokens": usage.output_tokens,
            "model_ms": round(usage.model_ms, 1),
            "ms": round((time.perf_counter() - started) * 1000, 1),
        }
        text = " ".join(f"{key}={value}" for key, value in fields.items())
        logger.log(level, "request %s", text, extra={"erp_ai": fields})


# -- strict JSON bodies --------------------------------------------------------------------------------------


def _strict_json(body: bytes) -> Any:
    """Parse a request body as strict JSON, raising ``json.JSONDecodeError`` for anything else.

    ``json.loads`` accepts ``NaN`` and lone surrogate escapes (``"\\ud800"``, a string no UTF-8 text can
    hold: it broke the server later, as a 500); pydantic's parser refuses both, and nesting deeper than 200
    levels, with a message saying where. ``JSONDecodeError`` is what FastAPI turns into a 422.
    """
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise json.JSONDecodeError(f"the body is not valid UTF-8 (byte {exc.start})", "", 0) from None
    try:
        return from_json(text, allow_inf_nan=False)
    except ValueError as exc:
        message = str(exc)
        if "surrogate" in message or "end of hex escape" in message:  # pydantic-core's two wordings
            message = f"a lone UTF-16 surrogate escape (such as \\ud800) is not text ({message})"
        raise json.JSONDecodeError(message, "", 0) from None


_UNPARSED = object()


class _StrictJSONRequest(Request):
    """A request whose ``json()`` is :func:`_strict_json` (FastAPI reads JSON bodies through it)."""

    _parsed: Any = _UNPARSED

    async def json(self) -> Any:
        if self._parsed is _UNPARSED:
            body = await self.body()
            if len(body) > INLINE_PARSE_BYTES:
                self._parsed = await run_in_threadpool(_strict_json, body)
            else:
                self._parsed = _strict_json(body)
        return self._parsed


class _StrictJSONRoute(APIRoute):
    """FastAPI's documented hook for a custom ``Request`` class: every route parses JSON strictly."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()

        async def strict_handler(request: Request) -> Response:
            return await handler(_StrictJSONRequest(request.scope, request.receive))

        return strict_handler


def _field_errors(errors: Sequence[Any]) -> list[FieldError]:
    fields: list[FieldError] = []
    for error in errors[:_MAX_FIELD_ERRORS]:
        loc = [part if isinstance(part, int) else str(part) for part in error.get("loc", ())]
        msg = str(error.get("msg", ""))
        kind = str(error.get("type", ""))
        if kind == "json_invalid":
            loc, msg = ["body"], f"not valid JSON: {error.get('ctx', {}).get('error', msg)}"
        elif loc == ["body"] and kind == "missing":
            msg = "the request has no body: send a JSON object"
        fields.append(FieldError(loc=loc, msg=msg, type=kind))
    return fields


def _summary(fields: list[FieldError], total: int, request: Request) -> str:
    content_type = request.headers.get("content-type", "")
    if any(f.loc == ["body"] and f.type == "model_attributes_type" for f in fields) and "json" not in (
        content_type.lower()
    ):
        return "Invalid request body: send a JSON object with Content-Type: application/json."
    parts = [f"{'.'.join(str(p) for p in f.loc[1:]) + ': ' if len(f.loc) > 1 else ''}{f.msg}" for f in fields]
    more = f" (and {total - 5} more)" if total > 5 else ""
    return f"Invalid request body: {'; '.join(parts[:5])}{more}."


class _ErrorReply(Exception):
    """Turned into a JSON :class:`ErrorResponse` by the app's exception handler."""

    def __init__(self, status_code: int, body: ErrorResponse) -> None:
        self.status_code = status_code
        self.body = body
        super().__init__(body.error)


def _internal_error(exc: BaseException) -> _ErrorReply:
    """Log ``exc`` with its traceback under a fresh reference; the reply names only the reference."""
    reference = secrets.token_hex(4)
    logger.error("Unexpected error in the AI server (ref %s)", reference, exc_info=exc)
    return _ErrorReply(
        500, ErrorResponse(error=f"Internal error in the AI server (ref {reference}).", kind="internal")
    )


@asynccontextmanager
async def serving_gc(_app: object = None) -> AsyncIterator[None]:
    """For the life of a served app (a FastAPI ``lifespan``): freeze the heap built so far out of the cyclic
    collector's scans and collect the youngest generation less often; restore both settings at the end.

    Why: see the module docstring. Process-wide, so :func:`create_app` leaves it off unless asked
    (``tune_gc=True``, which :func:`app_from_env` passes): an application that embeds the app keeps its own
    collector settings.
    """
    previous = gc.get_threshold()
    gc.collect()  # what is garbage now is collected once, not frozen
    gc.freeze()
    gc.set_threshold(SERVING_GC_THRESHOLD, *previous[1:])
    try:
        yield
    finally:
        gc.set_threshold(*previous)
        gc.unfreeze()


def create_app(
    plan_model: BaseChatModel,
    answer_model: BaseChatModel | None = None,
    token: str | None = None,
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
    *,
    tune_gc: bool = False,
) -> FastAPI:
    """Build the AI server around a plan model and (optionally different) answer model.

    ``token`` enables bearer-token auth; ``None`` falls back to ``$ERP_AI_SERVER_TOKEN`` and an empty value
    disables auth. With a token, ``/docs`` and ``/redoc`` are off and ``/openapi.json`` needs the token.
    ``tune_gc`` runs the app under :func:`serving_gc` (from its startup to its shutdown).
    """
    ai_client = InProcessAIClient(PlannerAI(plan_model, answer_model))
    expected = _effective_token(token)

    app = FastAPI(
        title="erp-ai-harness AI server",
        summary="Stateless two-call planner: call 1 plans, call 2 answers. No conversation state is kept.",
        version="0.1.0",
        docs_url=None if expected else "/docs",
        redoc_url=None if expected else "/redoc",
        lifespan=serving_gc if tune_gc else None,
    )
    app.router.route_class = _StrictJSONRoute
    # Starlette runs the middleware added last first: every request is logged, the token is checked before
    # the body size is counted.
    app.add_middleware(BodySizeLimit, max_body_bytes=max_body_bytes)
    if expected is not None:
        app.add_middleware(BearerAuth, token=expected)
    app.add_middleware(RequestLog)
    _document_stream(app)

    @app.exception_handler(_ErrorReply)
    async def _error_reply(request: Request, exc: _ErrorReply) -> JSONResponse:
        outcome = _outcome(request)
        outcome.usage, outcome.kind = exc.body.usage, exc.body.kind
        return JSONResponse(exc.body.model_dump(mode="json"), status_code=exc.status_code)

    @app.exception_handler(RequestValidationError)
    async def _invalid_request(request: Request, exc: RequestValidationError) -> JSONResponse:
        errors = exc.errors()
        fields = _field_errors(errors)
        body = ErrorResponse(
            error=_summary(fields, len(errors), request), kind="invalid_request", detail=fields
        )
        return JSONResponse(body.model_dump(mode="json"), status_code=422)

    @app.exception_handler(StarletteHTTPException)
    async def _http_error(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        body = _http_error_body(exc, request.method)
        _outcome(request).kind = body.kind
        return JSONResponse(body.model_dump(mode="json"), status_code=exc.status_code, headers=exc.headers)

    @app.exception_handler(Exception)
    async def _internal(_request: Request, exc: Exception) -> JSONResponse:
        reply = _internal_error(exc)
        return JSONResponse(reply.body.model_dump(mode="json"), status_code=reply.status_code)

    @app.get("/healthz")
    def healthz() -> dict[str, str]:
        """Liveness probe; needs no token."""
        return {"status": "ok"}

    @app.post("/ai/analyze", response_model=AnalyzeResponse, responses=_ANALYZE_RESPONSES)
    async def analyze(body: AnalyzeRequest, request: Request) -> Response | AnalyzeResponse:
        """Call 1: plan the operations that answer ``message`` given ``context`` and ``catalog``.

        With `Accept: application/x-ndjson` the reply streams as NDJSON like `/ai/respond`'s: a direct
        answer (`respuesta_directa`) in `answer_delta` lines as the model writes it (when the reply starts
        with one), then `{"type": "response", "plan": ..., "usage": ...}`, or `{"type": "error", ...}`.
        """
        if NDJSON in request.headers.get("accept", ""):
            stream = ai_client.astream_analyze(body.message, body.context, body.catalog)
            return await _stream_call(stream, request, AnalyzeLine)
        try:
            analyzed = await ai_client.aanalyze(body.message, body.context, body.catalog)
        except AICallError as exc:
            raise _model_failure(exc) from exc
        except Exception as exc:
            raise _internal_error(exc) from exc
        _outcome(request).usage = analyzed.usage
        return analyzed

    @app.post("/ai/respond", response_model=RespondResponse, responses=_RESPOND_RESPONSES)
    async def respond(body: RespondRequest, request: Request) -> Response | RespondResponse:
        """Call 2: phrase ``results`` as the answer, memory and state for ``question``.

        With `Accept: application/x-ndjson` the reply streams as NDJSON, one JSON object per line:
        `{"type": "answer_delta", "text": ...}` for each piece of the answer as the model writes it, then
        `{"type": "response", "answer": ..., "usage": ...}` (the `RespondResponse`), or, when the model fails
        after the first line, `{"type": "error", ...}` with the `ErrorResponse` fields. Failures found before
        the first line (token, size, invalid body, a model failure before any text) keep their status codes.
        """
        if NDJSON in request.headers.get("accept", ""):
            stream = ai_client.astream_respond(body.question, body.results, body.context)
            return await _stream_call(stream, request, RespondLine)
        try:
            responded = await ai_client.arespond(body.question, body.results, body.context)
        except AICallError as exc:
            raise _model_failure(exc) from exc
        except Exception as exc:
            raise _internal_error(exc) from exc
        _outcome(request).usage = responded.usage
        return responded

    return app


_Final = AnalyzeResponse | RespondResponse
"""The last item of a streamed call: its whole response."""


async def _stream_call(
    stream: AsyncGenerator[str | _Final, None], request: Request, final_line: type[AnalyzeLine | RespondLine]
) -> Response:
    """Start a streamed call; answer with its status once the first line is known (see the module doc).
    ``final_line`` is the line type of the call's response (the ``response`` line)."""
    outcome = _outcome(request)
    outcome.streamed = True
    try:
        first = await anext(stream)
    except AICallError as exc:
        await stream.aclose()
        raise _model_failure(exc) from exc
    except Exception as exc:  # StopAsyncIteration included: the stream promises a last line
        await stream.aclose()
        raise _internal_error(exc) from exc
    return StreamingResponse(_stream_lines(first, stream, outcome, final_line), media_type=NDJSON)


async def _stream_lines(
    first: str | _Final,
    stream: AsyncGenerator[str | _Final, None],
    outcome: _Outcome,
    final_line: type[AnalyzeLine | RespondLine],
) -> AsyncIterator[bytes]:
    """The NDJSON lines of a started stream; a failure becomes the last line (the status is sent already)."""
    async with aclosing(stream):
        item = first
        try:
            while True:
                if not isinstance(item, str):
                    outcome.usage = item.usage
                    yield _line(final_line.model_validate(dict(item)))
                    return
                yield _line(AnswerDeltaLine(text=item))
                item = await anext(stream)
        except AICallError as exc:
            error = _model_failure(exc).body
        except Exception as exc:
            # A bug: logged with its traceback under a reference; the line names only the reference.
            error = _internal_error(exc).body
        outcome.usage, outcome.kind = error.usage, error.kind
        yield _line(ErrorLine(**error.model_dump()))


def _line(line: AnswerDeltaLine | AnalyzeLine | RespondLine | ErrorLine) -> bytes:
    return line.model_dump_json().encode() + b"\n"


def _document_stream(app: FastAPI) -> None:
    """Add the NDJSON line models to the app's OpenAPI components (the 200 of ``/ai/respond`` and of
    ``/ai/analyze`` name them)."""
    build = app.openapi

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            schema = build()
            components = schema.setdefault("components", {}).setdefault("schemas", {})
            for line_schema in (_STREAM_LINE_SCHEMA, _ANALYZE_LINE_SCHEMA):
                for name, definition in line_schema.get("$defs", {}).items():
                    components.setdefault(name, definition)
        return build()

    app.openapi = openapi  # type: ignore[method-assign]  # FastAPI's documented way to extend the schema


_ENDPOINTS = "POST /ai/analyze, POST /ai/respond and GET /healthz"


def _http_error_body(exc: StarletteHTTPException, method: str) -> ErrorResponse:
    """The :class:`ErrorResponse` of a routing error (404, 405) or of another HTTP error FastAPI raises.

    The path is not echoed back: it may hold anything a client percent-encoded into it."""
    if exc.status_code == 404:
        return ErrorResponse(
            error=f"No such path on the AI server; it serves {_ENDPOINTS}.", kind="not_found"
        )
    if exc.status_code == 405:
        allow = (exc.headers or {}).get("Allow")
        return ErrorResponse(
            error=f"Method {method} is not allowed on this path" + (f"; use {allow}." if allow else "."),
            kind="method_not_allowed",
        )
    fallback: ErrorKind = "invalid_request" if exc.status_code < 500 else "internal"
    return ErrorResponse(error=str(exc.detail), kind=_KIND_BY_STATUS.get(exc.status_code, fallback))


def _model_failure(exc: AICallError) -> _ErrorReply:
    """502 with the failure's kind, so the ERP side classifies it as if the model ran in its own process."""
    cause = exc.cause
    kind: ErrorKind = (
        "timeout"
        if isinstance(cause, ProviderTimeoutError)
        else "model_output"
        if isinstance(cause, ModelOutputError)
        else "provider"
    )
    max_tokens = cause.max_tokens if isinstance(cause, OutputLimitError) else None
    body = ErrorResponse(error=str(exc), kind=kind, usage=exc.usage, max_tokens=max_tokens)
    return _ErrorReply(502, body)


def app_from_env() -> FastAPI:
    """Build the app from the environment, for ``uvicorn --factory planner_mode.server:app_from_env``; served,
    it tunes the garbage collector (:func:`serving_gc`).

    ``ERP_AI_PROVIDER`` (default ``offline``), ``ERP_AI_MODEL``, ``ERP_AI_PLAN_MODEL`` and
    ``ERP_AI_ANSWER_MODEL`` (default ``ERP_AI_MODEL``), ``ERP_AI_BASE_URL``, ``ERP_AI_SERVER_TOKEN``,
    ``ERP_AI_MAX_BODY_BYTES``, ``ERP_AI_MAX_TOKENS`` (output cap of each call, default 1024) and
    ``ERP_AI_TIMEOUT`` (seconds per model request, default 120).
    """
    from shared.llm.factory import DEFAULT_MAX_TOKENS, DEFAULT_TIMEOUT_S, build_chat_model

    provider = os.environ.get("ERP_AI_PROVIDER", "offline")
    default_model = os.environ.get("ERP_AI_MODEL") or None
    plan_name = os.environ.get("ERP_AI_PLAN_MODEL") or default_model
    answer_name = os.environ.get("ERP_AI_ANSWER_MODEL") or default_model
    base_url = os.environ.get("ERP_AI_BASE_URL") or None
    limit_text = os.environ.get("ERP_AI_MAX_BODY_BYTES", str(DEFAULT_MAX_BODY_BYTES))
    if not limit_text.isdigit():
        raise ConfigurationError(f"ERP_AI_MAX_BODY_BYTES must be a number of bytes, not {limit_text!r}.")
    limits = {
        "max_tokens": int(_env_number("ERP_AI_MAX_TOKENS", DEFAULT_MAX_TOKENS, integer=True)),
        "timeout": _env_number("ERP_AI_TIMEOUT", DEFAULT_TIMEOUT_S, integer=False),
    }
    plan_model = build_chat_model(provider, model=plan_name, base_url=base_url, **limits)  # type: ignore[arg-type]
    answer_model = (
        plan_model
        if answer_name == plan_name
        else build_chat_model(provider, model=answer_name, base_url=base_url, **limits)  # type: ignore[arg-type]
    )
    return create_app(
        plan_model,
        answer_model,
        token=os.environ.get(TOKEN_ENV) or None,
        max_body_bytes=int(limit_text),
        tune_gc=True,
    )


def _env_number(name: str, default: float, *, integer: bool) -> float:
    """A positive number from the environment, or ``default``; a ``ConfigurationError`` names a bad value."""
    text = os.environ.get(name, "").strip()
    if not text:
        return default
    try:
        value = int(text) if integer else float(text)
    except ValueError:
        value = 0
    if not value > 0:
        kind = "a whole number" if integer else "a number"
        raise ConfigurationError(f"{name} must be {kind} greater than 0, not {text!r}.")
    return value
