"""The stateless AI server (article §13–14): ``POST /ai/analyze``, ``POST /ai/respond``, ``GET /healthz``.

Every request carries everything needed; the server keeps no conversation state, so any number of instances
can serve any turn. Every error is a JSON :class:`~planner_mode.server.wire.ErrorResponse`, never a stack
trace. In the order a request meets them:

- **Bearer token** (``token=`` or ``ERP_AI_SERVER_TOKEN``), before the body is read, on every path but
  ``/healthz``: 401. With a token, ``/openapi.json`` needs it and ``/docs``/``/redoc`` are off. Without one,
  bind a loopback address (:func:`bind_warning`).
- **Body size** over ``max_body_bytes``: 413. **Body read time** over ``read_timeout_s``: 408
  (``request_timeout``, ``Connection: close``).
- **Unknown path or method**: 404 ``not_found``; 405 ``method_not_allowed`` with an ``Allow`` header.
- **Invalid body**: 422 ``invalid_request``, ``detail`` naming the fields: not UTF-8, not strict JSON
  (``NaN``, a lone surrogate escape, nesting over 200), not ``application/json``, or failing the request
  models (:mod:`planner_mode.server.wire`, which the HTTP client builds too: both sides refuse the same
  requests).
- **Model or provider failures**: 502 with the failed call's ``usage``.
- **Unexpected errors**: 500 naming a reference; the traceback is logged under it, never sent.

**Streaming.** With ``Accept: application/x-ndjson`` both calls answer 200 in NDJSON
(:data:`~planner_mode.server.wire.RespondStreamLine`, :data:`~planner_mode.server.wire.AnalyzeStreamLine`):
``answer_delta`` lines, then one ``response`` or ``error`` line. What fails before the first line keeps its
status code.

**Logging.** One record per request on ``planner_mode.server`` once its response is sent (INFO; DEBUG for
``/healthz``), fields in ``record.erp_ai``; no question, result or answer text.

**Slow clients.** A request's head must arrive within the read timeout (the uvicorn protocol
:class:`~planner_mode.server.protocol.HeadTimeoutH11Protocol`, which ``erp-ai serve`` uses) and its body
within it once the head has arrived (:class:`BodyReadTimeout`). Bodies over :data:`INLINE_PARSE_BYTES` are
parsed in a thread.

**Garbage collection.** Served by :func:`app_from_env`, the app runs under :func:`serving_gc`: the startup
heap is frozen out of the collector's scans and the youngest generation collected every
:data:`SERVING_GC_THRESHOLD` allocations, since with Python's defaults full collections rescanned that heap
several times per request.

Run it with ``uvicorn --factory planner_mode.server:app_from_env`` (configuration from the environment).
"""

# ruff: noqa: E402  (FastAPI is imported after checking that the [server] extra is installed)
from __future__ import annotations

import gc
import os
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
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
from planner_mode.server.endpoints import (
    ErrorReply,
    StrictJSONRoute,
    add_endpoints,
    document_stream,
    internal_error,
)
from planner_mode.server.limits import (
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
from planner_mode.server.wire import ErrorKind, ErrorResponse, FieldError
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
        outcome_of(request).usage = exc.body.usage
        return _json(request, exc.body, exc.status_code)

    @app.exception_handler(RequestValidationError)
    async def _invalid_request(request: Request, exc: RequestValidationError) -> JSONResponse:
        errors = exc.errors()
        fields = _field_errors(errors)
        summary = _summary(fields, len(errors), request)
        return _json(request, ErrorResponse(error=summary, kind="invalid_request", detail=fields), 422)

    @app.exception_handler(StarletteHTTPException)
    async def _http_error(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        return _json(request, _http_error_body(exc, request.method), exc.status_code, exc.headers)

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


def _json(
    request: Request, body: ErrorResponse, status_code: int, headers: Mapping[str, str] | None = None
) -> JSONResponse:
    """``body`` as the response, its kind noted for the request log."""
    outcome_of(request).kind = body.kind
    return JSONResponse(body.model_dump(mode="json"), status_code=status_code, headers=headers)


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


def app_from_env(
    build_model: Callable[..., BaseChatModel] | None = None, *, default_provider: str | None = None
) -> FastAPI:
    """Build the app from the environment, for ``uvicorn --factory planner_mode.server:app_from_env``; served,
    it tunes the garbage collector (:func:`serving_gc`).

    ``build_model(provider, model=…, base_url=…, max_tokens=…, timeout=…)`` builds each model (default:
    :func:`shared.llm.build_chat_model`, the network providers); an application that serves its own models
    (a stand-in, say) passes its builder, and ``default_provider`` for when ``ERP_AI_PROVIDER`` is unset.

    ``ERP_AI_PROVIDER`` (required unless ``default_provider`` is given), ``ERP_AI_MODEL``,
    ``ERP_AI_PLAN_MODEL`` and ``ERP_AI_ANSWER_MODEL`` (default ``ERP_AI_MODEL``), ``ERP_AI_BASE_URL``,
    ``ERP_AI_SERVER_TOKEN``, ``ERP_AI_MAX_BODY_BYTES``, ``ERP_AI_READ_TIMEOUT`` (seconds a request's body may
    take to arrive, default 30; the same bound on its head is the protocol's, see the module docstring),
    ``ERP_AI_MAX_TOKENS`` (output cap of each call, default 1024) and ``ERP_AI_TIMEOUT`` (seconds per model
    request, default 120).
    """
    from shared.llm.factory import DEFAULT_MAX_TOKENS, DEFAULT_TIMEOUT_S, PROVIDERS, build_chat_model

    provider = os.environ.get("ERP_AI_PROVIDER") or default_provider
    default_model = os.environ.get("ERP_AI_MODEL") or None
    plan_name = os.environ.get("ERP_AI_PLAN_MODEL") or default_model
    answer_name = os.environ.get("ERP_AI_ANSWER_MODEL") or default_model
    base_url = os.environ.get("ERP_AI_BASE_URL") or None
    limit_text = os.environ.get("ERP_AI_MAX_BODY_BYTES", str(DEFAULT_MAX_BODY_BYTES))
    if not limit_text.isdigit():
        raise ConfigurationError(f"ERP_AI_MAX_BODY_BYTES must be a number of bytes, not {limit_text!r}.")
    max_tokens = int(env_number("ERP_AI_MAX_TOKENS", DEFAULT_MAX_TOKENS, integer=True))
    timeout = env_number("ERP_AI_TIMEOUT", DEFAULT_TIMEOUT_S)
    read_timeout_s = read_timeout_from_env()
    if provider is None:
        raise ConfigurationError(
            f"Set ERP_AI_PROVIDER to the model provider to serve ({', '.join(PROVIDERS)}), with "
            "ERP_AI_MODEL and ERP_AI_BASE_URL as it needs."
        )
    build = build_model or build_chat_model

    def model(name: str | None) -> BaseChatModel:
        return build(provider, model=name, base_url=base_url, max_tokens=max_tokens, timeout=timeout)

    plan_model = model(plan_name)
    return create_app(
        plan_model,
        plan_model if answer_name == plan_name else model(answer_name),
        token=os.environ.get(TOKEN_ENV) or None,
        max_body_bytes=int(limit_text),
        read_timeout_s=read_timeout_s,
        tune_gc=True,
    )
