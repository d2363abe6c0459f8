"""The stateless AI server (article §13–14): ``POST /ai/analyze``, ``POST /ai/respond``, ``GET /healthz``.

Every request carries everything needed; the server keeps no conversation state in memory or on disk, so any
number of instances (``uvicorn --workers N``, several hosts) can serve any turn of any conversation.

- Optional bearer token (``token=`` or ``ERP_AI_SERVER_TOKEN``): without it, 401.
- Request bodies larger than ``max_body_bytes``: 413. Invalid bodies: FastAPI's 422, naming the field.
- Model or provider failures: 502 with ``{"error", "kind", "usage"}``; unexpected errors: 500 with
  ``{"error", "kind"}``. Never a stack trace.

Run it with ``uvicorn --factory planner_mode.server:app_from_env`` (configuration from the environment).
"""

from __future__ import annotations

import os
import secrets
from typing import Any

from fastapi import Depends, FastAPI, Request
from fastapi.responses import JSONResponse
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from langchain_core.language_models import BaseChatModel
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from planner_mode.ai import PlannerAI
from planner_mode.client import AICallError, InProcessAIClient
from planner_mode.wire import AnalyzeRequest, AnalyzeResponse, ErrorResponse, RespondRequest, RespondResponse
from shared.errors import ConfigurationError, ModelOutputError

__all__ = ["DEFAULT_MAX_BODY_BYTES", "app_from_env", "create_app"]

DEFAULT_MAX_BODY_BYTES = 1_000_000
"""Default request body limit: far above any real context + catalog, far below a memory problem."""

TOKEN_ENV = "ERP_AI_SERVER_TOKEN"

_ERROR_RESPONSES: dict[int | str, dict[str, Any]] = {
    401: {"model": ErrorResponse, "description": "Missing or wrong bearer token."},
    413: {"model": ErrorResponse, "description": "Request body too large."},
    502: {"model": ErrorResponse, "description": "The model or its provider failed."},
}


class _ErrorReply(Exception):
    """Turned into a JSON :class:`ErrorResponse` by the app's exception handler."""

    def __init__(self, status_code: int, body: ErrorResponse) -> None:
        self.status_code = status_code
        self.body = body
        super().__init__(body.error)


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
        response = JSONResponse(status_code=413, content=body.model_dump(mode="json"))
        await response({"type": "http"}, _no_receive, send)


async def _no_receive() -> Message:  # pragma: no cover - JSONResponse never reads the request
    return {"type": "http.disconnect"}


def create_app(
    plan_model: BaseChatModel,
    answer_model: BaseChatModel | None = None,
    token: str | None = None,
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
) -> FastAPI:
    """Build the AI server around a plan model and (optionally different) answer model.

    ``token`` enables bearer-token auth; ``None`` falls back to ``$ERP_AI_SERVER_TOKEN`` and an empty value
    disables auth.
    """
    ai_client = InProcessAIClient(PlannerAI(plan_model, answer_model))
    expected = (token if token is not None else os.environ.get(TOKEN_ENV)) or None
    bearer = HTTPBearer(auto_error=False)

    def require_token(credentials: HTTPAuthorizationCredentials | None = Depends(bearer)) -> None:
        if expected is None:
            return
        given = credentials.credentials if credentials is not None else ""
        if not secrets.compare_digest(given.encode(), expected.encode()):
            raise _ErrorReply(401, ErrorResponse(error="Missing or wrong bearer token.", kind="unauthorized"))

    app = FastAPI(
        title="erp-ai-harness AI server",
        summary="Stateless two-call planner: call 1 plans, call 2 answers. No conversation state is kept.",
        version="0.1.0",
    )
    app.add_middleware(BodySizeLimit, max_body_bytes=max_body_bytes)

    @app.exception_handler(_ErrorReply)
    async def _error_reply(_request: Request, exc: _ErrorReply) -> JSONResponse:
        headers = {"WWW-Authenticate": "Bearer"} if exc.status_code == 401 else None
        return JSONResponse(exc.body.model_dump(mode="json"), status_code=exc.status_code, headers=headers)

    @app.exception_handler(Exception)
    async def _internal(_request: Request, _exc: Exception) -> JSONResponse:
        body = ErrorResponse(error="Internal error in the AI server.", kind="internal")
        return JSONResponse(body.model_dump(mode="json"), status_code=500)

    @app.get("/healthz")
    def healthz() -> dict[str, str]:
        """Liveness probe; needs no token."""
        return {"status": "ok"}

    @app.post(
        "/ai/analyze",
        response_model=AnalyzeResponse,
        responses=_ERROR_RESPONSES,
        dependencies=[Depends(require_token)],
    )
    def analyze(request: AnalyzeRequest) -> AnalyzeResponse:
        """Call 1: plan the operations that answer ``message`` given ``context`` and ``catalog``."""
        try:
            return ai_client.analyze(request.message, request.context, request.catalog)
        except AICallError as exc:
            raise _model_failure(exc) from exc

    @app.post(
        "/ai/respond",
        response_model=RespondResponse,
        responses=_ERROR_RESPONSES,
        dependencies=[Depends(require_token)],
    )
    def respond(request: RespondRequest) -> RespondResponse:
        """Call 2: phrase ``results`` as the answer, memory and state for ``question``."""
        try:
            return ai_client.respond(request.question, request.results, request.context)
        except AICallError as exc:
            raise _model_failure(exc) from exc

    return app


def _model_failure(exc: AICallError) -> _ErrorReply:
    kind = "model_output" if isinstance(exc.cause, ModelOutputError) else "provider"
    return _ErrorReply(502, ErrorResponse(error=str(exc), kind=kind, usage=exc.usage))


def app_from_env() -> FastAPI:
    """Build the app from the environment, for ``uvicorn --factory planner_mode.server:app_from_env``.

    ``ERP_AI_PROVIDER`` (default ``offline``), ``ERP_AI_MODEL``, ``ERP_AI_PLAN_MODEL`` and
    ``ERP_AI_ANSWER_MODEL`` (default ``ERP_AI_MODEL``), ``ERP_AI_BASE_URL``, ``ERP_AI_SERVER_TOKEN``,
    ``ERP_AI_MAX_BODY_BYTES``, ``ERP_AI_LATENCY_PROFILE`` (offline model only).
    """
    from shared.llm.factory import build_chat_model

    provider = os.environ.get("ERP_AI_PROVIDER", "offline")
    default_model = os.environ.get("ERP_AI_MODEL") or None
    plan_name = os.environ.get("ERP_AI_PLAN_MODEL") or default_model
    answer_name = os.environ.get("ERP_AI_ANSWER_MODEL") or default_model
    base_url = os.environ.get("ERP_AI_BASE_URL") or None
    limit_text = os.environ.get("ERP_AI_MAX_BODY_BYTES", str(DEFAULT_MAX_BODY_BYTES))
    if not limit_text.isdigit():
        raise ConfigurationError(f"ERP_AI_MAX_BODY_BYTES must be a number of bytes, not {limit_text!r}.")
    plan_model = build_chat_model(provider, model=plan_name, base_url=base_url)
    answer_model = (
        plan_model
        if answer_name == plan_name
        else build_chat_model(provider, model=answer_name, base_url=base_url)
    )
    return create_app(
        plan_model, answer_model, token=os.environ.get(TOKEN_ENV) or None, max_body_bytes=int(limit_text)
    )
