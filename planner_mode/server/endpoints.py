"""The AI server's two endpoints: each call answered whole, or streamed in NDJSON (see ``server``).

Both endpoints run the client's streaming call; without ``Accept: application/x-ndjson`` the stream is
drained and its last item, the whole response, is the JSON body. Request bodies are read as strict JSON
(:func:`~planner_mode.server.limits.strict_json`); model failures become 502 with their kind and usage,
anything unexpected a 500 that names only a reference (the traceback goes to the log).
"""

# ruff: noqa: E402  (FastAPI is imported after checking that the [server] extra is installed)
from __future__ import annotations

import logging
import secrets
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Coroutine
from contextlib import aclosing
from typing import Any, TypeVar

from shared.extras import require

require("fastapi", "server", "The AI server (planner_mode.server)")

from fastapi import FastAPI, Request, Response
from fastapi.responses import StreamingResponse
from fastapi.routing import APIRoute
from pydantic import TypeAdapter
from starlette.concurrency import run_in_threadpool

from planner_mode.client import AICallError, AIClient, AnswerReply, PlanReply, closing_iter, last_item
from planner_mode.server.limits import INLINE_PARSE_BYTES, Outcome, outcome_of, strict_json
from planner_mode.server.wire import (
    NDJSON,
    AnalyzeLine,
    AnalyzeRequest,
    AnalyzeResponse,
    AnalyzeStreamLine,
    AnswerDeltaLine,
    ErrorKind,
    ErrorLine,
    ErrorResponse,
    RespondLine,
    RespondRequest,
    RespondResponse,
    RespondStreamLine,
)
from shared.errors import ModelOutputError, OutputLimitError, ProviderTimeoutError

__all__ = ["ErrorReply", "StrictJSONRoute", "add_endpoints", "document_stream", "internal_error"]

logger = logging.getLogger("planner_mode.server")

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


def add_endpoints(app: FastAPI, ai_client: AIClient) -> None:
    """``POST /ai/analyze`` (call 1) and ``POST /ai/respond`` (call 2) on ``app``, served by ``ai_client``."""

    @app.post("/ai/analyze", response_model=AnalyzeResponse, responses=_ANALYZE_RESPONSES)
    async def analyze(body: AnalyzeRequest, request: Request) -> Response | AnalyzeResponse:
        """Call 1: plan the operations that answer ``message`` given ``context`` and ``catalog``.

        With `Accept: application/x-ndjson` the reply streams as NDJSON like `/ai/respond`'s: a direct
        answer (`respuesta_directa`) in `answer_delta` lines as the model writes it (when the reply starts
        with one), then `{"type": "response", "plan": ..., "usage": ...}`, or `{"type": "error", ...}`.
        """
        streamed = _streamed(request)
        stream = ai_client.plan(body.message, body.context, body.catalog, stream=streamed)
        return await _reply(stream, request, _analyze_response, AnalyzeLine, streamed)

    @app.post("/ai/respond", response_model=RespondResponse, responses=_RESPOND_RESPONSES)
    async def respond(body: RespondRequest, request: Request) -> Response | RespondResponse:
        """Call 2: phrase ``results`` as the answer, memory and state for ``question``.

        With `Accept: application/x-ndjson` the reply streams as NDJSON, one JSON object per line:
        `{"type": "answer_delta", "text": ...}` for each piece of the answer as the model writes it, then
        `{"type": "response", "answer": ..., "usage": ...}` (the `RespondResponse`), or, when the model fails
        after the first line, `{"type": "error", ...}` with the `ErrorResponse` fields. Failures found before
        the first line (token, size, invalid body, a model failure before any text) keep their status codes.
        """
        streamed = _streamed(request)
        stream = ai_client.answer(body.question, body.results, body.context, body.catalog, stream=streamed)
        return await _reply(stream, request, _respond_response, RespondLine, streamed)


_Reply = TypeVar("_Reply", PlanReply, AnswerReply)
"""The last item of a call's stream: the engine's reply."""
_Final = TypeVar("_Final", AnalyzeResponse, RespondResponse)
"""Its body on the wire: the whole response."""


def _analyze_response(reply: PlanReply) -> AnalyzeResponse:
    return AnalyzeResponse(plan=reply.plan, usage=reply.usage)


def _respond_response(reply: AnswerReply) -> RespondResponse:
    return RespondResponse(answer=reply.answer, usage=reply.usage)


def _streamed(request: Request) -> bool:
    """The request accepts the NDJSON stream."""
    return NDJSON in request.headers.get("accept", "")


async def _reply(
    stream: AsyncIterator[str | _Reply],
    request: Request,
    body: Callable[[_Reply], _Final],
    final_line: type[AnalyzeLine | RespondLine],
    streamed: bool,
) -> Response | _Final:
    """The call's NDJSON stream when the request accepts one, else its whole response (the stream drained).

    A stream answers with its status once its first line is known: what fails before it keeps its status
    code; ``body`` turns the call's reply into its response, ``final_line`` is that response's line type.
    """
    outcome = outcome_of(request)
    outcome.streamed = streamed
    items = closing_iter(stream)
    try:
        if not streamed:
            response = body(await last_item(items))
            outcome.usage = response.usage
            return response
        first = await anext(items)
    except AICallError as exc:
        await items.aclose()
        raise _model_failure(exc) from exc
    except Exception as exc:  # StopAsyncIteration included: the stream promises a last line
        await items.aclose()
        raise internal_error(exc) from exc
    lines = _stream_lines(first, items, outcome, body, final_line)
    return StreamingResponse(lines, media_type=NDJSON)


async def _stream_lines(
    first: str | _Reply,
    stream: AsyncGenerator[str | _Reply, None],
    outcome: Outcome,
    body: Callable[[_Reply], _Final],
    final_line: type[AnalyzeLine | RespondLine],
) -> AsyncIterator[bytes]:
    """The NDJSON lines of a started stream; a failure becomes the last line (the status is sent already)."""
    async with aclosing(stream):
        item = first
        try:
            while True:
                if not isinstance(item, str):
                    outcome.usage = item.usage
                    yield _line(final_line.model_validate(dict(body(item))))
                    return
                yield _line(AnswerDeltaLine(text=item))
                item = await anext(stream)
        except AICallError as exc:
            error = _model_failure(exc).body
        except Exception as exc:
            # A bug: logged with its traceback under a reference; the line names only the reference.
            error = internal_error(exc).body
        outcome.usage, outcome.kind = error.usage, error.kind
        yield _line(ErrorLine(**error.model_dump()))


def _line(line: AnswerDeltaLine | AnalyzeLine | RespondLine | ErrorLine) -> bytes:
    return line.model_dump_json().encode() + b"\n"


def document_stream(app: FastAPI) -> None:
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


class ErrorReply(Exception):
    """Turned into a JSON :class:`ErrorResponse` by the app's exception handler."""

    def __init__(self, status_code: int, body: ErrorResponse) -> None:
        self.status_code = status_code
        self.body = body
        super().__init__(body.error)


def internal_error(exc: BaseException) -> ErrorReply:
    """Log ``exc`` with its traceback under a fresh reference; the reply names only the reference."""
    reference = secrets.token_hex(4)
    logger.error("Unexpected error in the AI server (ref %s)", reference, exc_info=exc)
    return ErrorReply(
        500, ErrorResponse(error=f"Internal error in the AI server (ref {reference}).", kind="internal")
    )


def _model_failure(exc: AICallError) -> ErrorReply:
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
    return ErrorReply(502, body)


_UNPARSED = object()


class _StrictJSONRequest(Request):
    """A request whose ``json()`` is :func:`strict_json` (FastAPI reads JSON bodies through it)."""

    _parsed: Any = _UNPARSED

    async def json(self) -> Any:
        if self._parsed is _UNPARSED:
            body = await self.body()
            if len(body) > INLINE_PARSE_BYTES:
                self._parsed = await run_in_threadpool(strict_json, body)
            else:
                self._parsed = strict_json(body)
        return self._parsed


class StrictJSONRoute(APIRoute):
    """FastAPI's documented hook for a custom ``Request`` class: every route parses JSON strictly."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()

        async def strict_handler(request: Request) -> Response:
            return await handler(_StrictJSONRequest(request.scope, request.receive))

        return strict_handler
