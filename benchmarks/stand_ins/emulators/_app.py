"""The HTTP side of the emulators: one Starlette app per protocol, served by uvicorn on a loopback socket.

Every request is decoded and logged first (:class:`LoggedRequest`). A model endpoint is a plain function,
run in a worker thread (the backing model is synchronous), from a :class:`Call` to a Starlette response.
The transport faults are responses too: :class:`Stall` never answers; a cut JSON reply or :func:`chunked`
stream raises :class:`ConnectionDropped` once started, and uvicorn then closes the connection, so the
client sees an incomplete body. Accepted sockets get ``TCP_NODELAY``: each streamed chunk leaves at once
(Nagle's algorithm plus delayed ACKs would hold every small write about 40 ms).
"""
# ruff: noqa: E402  (Starlette and uvicorn are imported after checking that the [server] extra is installed)

from __future__ import annotations

import asyncio
import json
import logging
import socket
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, TypeVar
from urllib.parse import parse_qs

from langchain_core.language_models import BaseChatModel
from pydantic import BaseModel, ValidationError

from benchmarks.stand_ins.emulators._backing import (
    STAND_IN_MARKER,
    BackingReply,
    BackingRequest,
    BadRequestError,
    answer,
)
from benchmarks.stand_ins.emulators.faults import EmulatorFaults, FaultDecision, UnknownFaultError
from shared.extras import require_extra

require_extra("server", "The protocol emulators")  # one line naming the extra, not a traceback

import uvicorn
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send
from uvicorn.protocols.http.h11_impl import H11Protocol

T = TypeVar("T")
M = TypeVar("M", bound=BaseModel)
NDJSON = "application/x-ndjson"
SSE = "text/event-stream"


@dataclass
class LoggedRequest:
    """What the server received, for test assertions."""

    method: str
    path: str
    query: dict[str, list[str]]
    headers: dict[str, str]
    """Names in lower case."""
    body: Any
    """The decoded JSON body, ``None`` when empty."""
    fault: str | None = None


class ConnectionDropped(Exception):
    """Raised once a response has started, so that uvicorn drops the connection (``stream_break``)."""


class Reject(Exception):
    """Ends a request early with ``response``."""

    def __init__(self, response: Response) -> None:
        self.response = response


class _QuietDrops(logging.Filter):
    """Keeps uvicorn from logging a deliberate :class:`ConnectionDropped` as an application error."""

    def filter(self, record: logging.LogRecord) -> bool:
        error = record.exc_info[1] if record.exc_info else None
        while isinstance(error, BaseExceptionGroup):
            error = error.exceptions[0]
        return not isinstance(error, ConnectionDropped)


logging.getLogger("uvicorn.error").addFilter(_QuietDrops())


class Stall(Response):
    """The ``stall`` fault: no answer until the client hangs up or the server drops the connection."""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        while (await receive())["type"] != "http.disconnect":
            pass


class _CutJSON(JSONResponse):
    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await send({"type": "http.response.start", "status": self.status_code, "headers": self.raw_headers})
        half = bytes(self.body[: len(self.body) // 2])
        await send({"type": "http.response.body", "body": half, "more_body": True})
        raise ConnectionDropped


def json_reply(body: Any, *, cut: bool = False) -> JSONResponse:
    """A 200 JSON reply; ``cut`` sends the full ``Content-Length``, half the body, then drops the line."""
    return _CutJSON(body) if cut else JSONResponse(body)


def chunked(chunks: Iterable[bytes], content_type: str, *, cut: bool = False) -> StreamingResponse:
    """A chunked reply, one HTTP chunk per item; ``cut`` drops the connection after the last one."""

    async def body() -> AsyncIterator[bytes]:  # not a sync iterator: starlette runs each step in a thread
        for chunk in chunks:
            yield chunk
        if cut:
            raise ConnectionDropped

    return StreamingResponse(body(), headers={"content-type": content_type})


def encode(record: Any, prefix: bytes = b"", end: bytes = b"\n") -> bytes:
    """One stream record: compact JSON between ``prefix`` and ``end`` (NDJSON by default)."""
    return prefix + json.dumps(record, ensure_ascii=False).encode() + end


def before_break(pieces: Sequence[T]) -> list[T]:
    """What a ``stream_error`` or ``stream_break`` lets through: the first half (at least one, if any)."""
    return list(pieces[: max(1, len(pieces) // 2)])


@dataclass
class Call:
    """One request as a model endpoint sees it."""

    log: LoggedRequest
    params: dict[str, str]
    """The path parameters."""
    server: EmulatorServer

    @property
    def fields(self) -> dict[str, Any]:
        """The body when it is a JSON object, else ``{}``."""
        return self.log.body if isinstance(self.log.body, dict) else {}


class Protocol:
    """A provider wire protocol: its routes, its error body and its API key check."""

    name: ClassVar[str]
    models: ClassVar[tuple[str, ...]]
    """The model names the protocol's listing shows (a request may name any)."""
    internal_error: ClassVar[str]
    """The message of the provider's HTTP 500."""
    stream_broken: ClassVar[str | None] = None
    """The message of a ``stream_error`` (default: ``internal_error``)."""

    def __init__(self, model: BaseChatModel, api_key: str | None = None) -> None:
        """With ``api_key`` (Gemini and OpenAI) only that key is accepted."""
        self.model, self.api_key = model, api_key

    @property
    def stand_in(self) -> str:
        """The model identity the protocol reports: ``erp-ai emulator: OfflineSalesModel answers, …``."""
        return f"{STAND_IN_MARKER}: {type(self.model).__name__} answers, not the model named"

    def routes(self) -> list[Route]:
        raise NotImplementedError

    def error_body(self, status: int, message: str) -> Any:
        """The provider's error body (also a stream's error event)."""
        raise NotImplementedError

    def error(self, status: int, message: str) -> JSONResponse:
        return JSONResponse(self.error_body(status, message), status)

    def invalid(self, exc: ValidationError) -> Response:
        """The reply to a body that does not validate."""
        return self.error(400, str(exc))

    def not_found(self, request: Request) -> Response:
        return self.error(404, f"Not found: {request.method} {request.url.path}")

    def guard(self, request: Request) -> Response | None:
        """A refusal of a request without a valid key (before routing), or ``None``."""
        return None

    def parse(self, call: Call, model: type[M]) -> M:
        """The body as ``model``; an invalid one ends the request with the protocol's 400."""
        try:
            return model.model_validate(call.fields)
        except ValidationError as exc:
            raise Reject(self.invalid(exc)) from exc

    def respond(
        self, call: Call, request: BackingRequest, *, stream: bool, cap: int | None
    ) -> tuple[FaultDecision, BackingReply]:
        """Choose the call's fault, then let the backing model answer. ``stall``, ``http_500`` and an
        unstreamed ``stream_error`` end the request here; ``slow`` waits first."""
        try:
            decision = call.server.decide(call.log.headers)
        except UnknownFaultError as exc:
            raise Reject(self.error(400, str(exc))) from exc
        call.log.fault = decision.mode
        if decision.mode == "stall":
            raise Reject(Stall())
        time.sleep(decision.delay_seconds)
        if decision.mode == "http_500":
            raise Reject(self.error(500, self.internal_error))
        if decision.mode == "stream_error" and not stream:
            raise Reject(self.error(500, self.stream_broken or self.internal_error))
        return decision, answer(self.model, request, decision, cap)

    def cut_short(self, mode: str | None, text: list[Any], whole: list[Any]) -> list[Any]:
        """A stream's records: ``whole``, or the first half of its ``text`` records for a ``stream_break``,
        then the error event for a ``stream_error``."""
        if mode == "stream_error":
            return [*before_break(text), self.error_body(500, self.stream_broken or self.internal_error)]
        return before_break(text) if mode == "stream_break" else whole

    def route(self, path: str, handler: Callable[[Call], Response], method: str = "POST") -> Route:
        """``handler`` at ``path``, in a worker thread; a failure becomes the provider's error reply."""

        async def endpoint(request: Request) -> Response:
            call = Call(request.state.log, request.path_params, request.state.server)
            try:
                return await run_in_threadpool(handler, call)
            except Reject as exc:
                return exc.response
            except BadRequestError as exc:
                return self.error(400, str(exc))
            except Exception as exc:  # a backing-model failure is the provider's 500, as a real server's
                return self.error(500, f"{type(exc).__name__}: {exc}")

        return Route(path, endpoint, methods=[method])


class _Front:
    """Decodes and logs every request before routing, then lets the protocol check its key."""

    def __init__(self, app: ASGIApp, server: EmulatorServer) -> None:
        self.app, self.server = app, server

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        request, protocol = Request(scope, receive), self.server.protocol
        raw = await request.body()
        try:
            body = json.loads(raw) if raw.strip() else None
        except ValueError as exc:  # JSONDecodeError and UnicodeDecodeError alike
            return await protocol.error(400, f"invalid JSON body: {exc}")(scope, receive, send)
        log = LoggedRequest(
            request.method, request.url.path, parse_qs(request.url.query), dict(request.headers), body
        )
        self.server._requests.append(log)
        scope.setdefault("state", {}).update(log=log, server=self.server)
        await (protocol.guard(request) or self.app)(scope, receive, send)


class _NoDelay(H11Protocol):
    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        transport.get_extra_info("socket").setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        super().connection_made(transport)


class _Uvicorn(uvicorn.Server):
    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        # A stalled request never ends on its own: drop the open connections instead of waiting for them.
        for connection in list(self.server_state.connections):
            connection.transport.close()  # type: ignore[union-attr]
        await super().shutdown(sockets)


class EmulatorServer:
    """A protocol emulator bound to ``host:port`` (port 0: a free one), served by uvicorn.

    A context manager (``with EmulatorServer(protocol) as server: server.base_url``), or :meth:`start` /
    :meth:`stop`, or :meth:`serve_forever` in the foreground. ``requests`` logs every request received;
    ``faults`` is the live server-wide fault configuration (it may be changed or replaced while serving).
    """

    def __init__(
        self,
        protocol: Protocol,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        faults: EmulatorFaults | None = None,
    ) -> None:
        self.protocol = protocol
        self.faults = faults or EmulatorFaults()
        self._lock = threading.Lock()
        self._model_requests = 0
        self._requests: list[LoggedRequest] = []  # appended by the event loop's thread only
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        self._socket = socket.create_server((host, port), family=family)
        app = Starlette(
            routes=protocol.routes(),
            middleware=[Middleware(_Front, server=self)],
            exception_handlers={status: lambda r, _: protocol.not_found(r) for status in (404, 405)},
        )
        self._uvicorn = _Uvicorn(
            uvicorn.Config(app, http=_NoDelay, log_level="warning", lifespan="off", access_log=False)
        )
        self._thread: threading.Thread | None = None

    def decide(self, headers: dict[str, str]) -> FaultDecision:
        """The next model request's fault (its header, else ``faults``), numbered among this server's."""
        with self._lock:
            index, self._model_requests = self._model_requests, self._model_requests + 1
            return self.faults.decide(headers, index)

    @property
    def host(self) -> str:
        return str(self._socket.getsockname()[0])

    @property
    def port(self) -> int:
        """The bound port (the real one when created with port 0)."""
        return int(self._socket.getsockname()[1])

    @property
    def base_url(self) -> str:
        """``http://host:port`` without a trailing slash."""
        return f"http://{f'[{self.host}]' if ':' in self.host else self.host}:{self.port}"

    @property
    def requests(self) -> list[LoggedRequest]:
        """Every request received so far, oldest first (a snapshot)."""
        return list(self._requests)

    def clear_requests(self) -> None:
        self._requests.clear()

    def start(self) -> EmulatorServer:
        """Serve in a daemon thread, once uvicorn is up; returns ``self``."""
        if self._thread is None:
            self._thread = threading.Thread(
                target=self.serve_forever, name=f"{self.protocol.name}-emulator", daemon=True
            )
            self._thread.start()
            deadline = time.monotonic() + 30
            while not self._uvicorn.started:
                if not self._thread.is_alive() or time.monotonic() > deadline:
                    raise RuntimeError(f"The {self.protocol.name} emulator did not start.")
                time.sleep(0.01)
        return self

    def serve_forever(self) -> None:
        """Serve in the calling thread until :meth:`stop` (or, in the main thread, Ctrl-C)."""
        try:
            self._uvicorn.run(sockets=[self._socket])
        finally:
            self._socket.close()

    def stop(self) -> None:
        """Stop serving and close the socket (stalled requests are dropped, never waited for)."""
        self._uvicorn.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout=10)
            self._thread = None
        elif not self._uvicorn.started:
            self._socket.close()

    def __enter__(self) -> EmulatorServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
