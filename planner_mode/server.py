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
- **Body read time**: a body not all received within ``read_timeout_s`` of the request's head: 408, kind
  ``request_timeout``, and the connection is closed (``Connection: close``).
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

**Slow clients.** A client that sends its request slowly, or stops halfway, does not hold a connection for
longer than the read timeout (default :data:`DEFAULT_READ_TIMEOUT_S` s; ``erp-ai serve --read-timeout`` or
``ERP_AI_READ_TIMEOUT``): the request's line and headers must be complete within it, counted from the
connection's start and again from the end of each response (or the connection is closed without an answer:
:class:`~planner_mode.server_protocol.HeadTimeoutH11Protocol`, uvicorn's h11 protocol with the timer that
uvicorn lacks), and its body within it once the head has arrived (or 408, above: :class:`BodyReadTimeout`).
``erp-ai serve`` runs uvicorn with that protocol, and with uvicorn's own bounds: an idle keep-alive
connection closed after 5 s, a head buffered up to 8 KiB, at most 1,024 connections and requests per worker
(more are answered 503). Served another way, the protocol must be named, or only the body is bounded: from
Python ``uvicorn.run(..., http=HeadTimeoutH11Protocol)``; on uvicorn's command line (a version whose
``--http`` takes an import path) ``--http planner_mode.server_protocol:HeadTimeoutH11Protocol``.

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
import os
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from typing import Any

from shared.extras import require

# Without the [server] extra: one line naming it, not a ModuleNotFoundError traceback.
require("fastapi", "server", "The AI server (planner_mode.server)")

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from langchain_core.language_models import BaseChatModel
from starlette.exceptions import HTTPException as StarletteHTTPException

from planner_mode.ai import PlannerAI
from planner_mode.client import InProcessAIClient
from planner_mode.server_endpoints import (
    ErrorReply,
    StrictJSONRoute,
    add_endpoints,
    document_stream,
    internal_error,
)
from planner_mode.server_limits import (
    DEFAULT_MAX_BODY_BYTES,
    DEFAULT_READ_TIMEOUT_S,
    INLINE_PARSE_BYTES,
    KIND_BY_STATUS,
    TOKEN_ENV,
    BearerAuth,
    BodyReadTimeout,
    BodySizeLimit,
    RequestLog,
    bind_warning,
    effective_token,
    env_number,
    outcome_of,
    read_timeout_from_env,
)
from planner_mode.wire import ErrorKind, ErrorResponse, FieldError
from shared.errors import ConfigurationError

__all__ = [
    "DEFAULT_MAX_BODY_BYTES",
    "DEFAULT_READ_TIMEOUT_S",
    "INLINE_PARSE_BYTES",
    "SERVING_GC_THRESHOLD",
    "BearerAuth",
    "BodyReadTimeout",
    "BodySizeLimit",
    "RequestLog",
    "app_from_env",
    "bind_warning",
    "create_app",
    "serving_gc",
]

SERVING_GC_THRESHOLD = 10_000
"""Net container allocations between two young-generation collections while serving (Python: 700)."""

_MAX_FIELD_ERRORS = 20


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
    read_timeout_s: float = DEFAULT_READ_TIMEOUT_S,
    tune_gc: bool = False,
) -> FastAPI:
    """Build the AI server around a plan model and (optionally different) answer model.

    ``token`` enables bearer-token auth; ``None`` falls back to ``$ERP_AI_SERVER_TOKEN`` and an empty value
    disables auth. With a token, ``/docs`` and ``/redoc`` are off and ``/openapi.json`` needs the token.
    ``read_timeout_s`` bounds the time a request's body may take to arrive (408 after it).
    ``tune_gc`` runs the app under :func:`serving_gc` (from its startup to its shutdown).
    """
    expected = effective_token(token)

    app = FastAPI(
        title="erp-ai-harness AI server",
        summary="Stateless two-call planner: call 1 plans, call 2 answers. No conversation state is kept.",
        version="0.1.0",
        docs_url=None if expected else "/docs",
        redoc_url=None if expected else "/redoc",
        lifespan=serving_gc if tune_gc else None,
    )
    app.router.route_class = StrictJSONRoute
    # Starlette runs the middleware added last first: every request is logged, the token is checked before
    # the body is read, and the body is read against the clock and counted.
    app.add_middleware(BodySizeLimit, max_body_bytes=max_body_bytes)
    app.add_middleware(BodyReadTimeout, timeout_s=read_timeout_s)
    if expected is not None:
        app.add_middleware(BearerAuth, token=expected)
    app.add_middleware(RequestLog)
    document_stream(app)

    @app.exception_handler(ErrorReply)
    async def _error_reply(request: Request, exc: ErrorReply) -> JSONResponse:
        outcome = outcome_of(request)
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
        outcome_of(request).kind = body.kind
        return JSONResponse(body.model_dump(mode="json"), status_code=exc.status_code, headers=exc.headers)

    @app.exception_handler(Exception)
    async def _internal(_request: Request, exc: Exception) -> JSONResponse:
        reply = internal_error(exc)
        return JSONResponse(reply.body.model_dump(mode="json"), status_code=reply.status_code)

    @app.get("/healthz")
    def healthz() -> dict[str, str]:
        """Liveness probe; needs no token."""
        return {"status": "ok"}

    add_endpoints(app, InProcessAIClient(PlannerAI(plan_model, answer_model)))
    return app


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
    return ErrorResponse(error=str(exc.detail), kind=KIND_BY_STATUS.get(exc.status_code, fallback))


def app_from_env() -> FastAPI:
    """Build the app from the environment, for ``uvicorn --factory planner_mode.server:app_from_env``; served,
    it tunes the garbage collector (:func:`serving_gc`).

    ``ERP_AI_PROVIDER`` (default ``offline``), ``ERP_AI_MODEL``, ``ERP_AI_PLAN_MODEL`` and
    ``ERP_AI_ANSWER_MODEL`` (default ``ERP_AI_MODEL``), ``ERP_AI_BASE_URL``, ``ERP_AI_SERVER_TOKEN``,
    ``ERP_AI_MAX_BODY_BYTES``, ``ERP_AI_READ_TIMEOUT`` (seconds a request's body may take to arrive,
    default 30; the same bound on its head is the protocol's, see the module docstring), ``ERP_AI_MAX_TOKENS``
    (output cap of each call, default 1024) and ``ERP_AI_TIMEOUT`` (seconds per model request, default 120).
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
        "max_tokens": int(env_number("ERP_AI_MAX_TOKENS", DEFAULT_MAX_TOKENS, integer=True)),
        "timeout": env_number("ERP_AI_TIMEOUT", DEFAULT_TIMEOUT_S),
    }
    read_timeout_s = read_timeout_from_env()
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
        read_timeout_s=read_timeout_s,
        tune_gc=True,
    )
