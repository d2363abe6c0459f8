"""What every AI-server request meets around its endpoint: the token, the body's size and read time, the
request log, strict JSON; plain ASGI, no FastAPI at import time (:mod:`planner_mode.server` documents them).
"""

from __future__ import annotations

import asyncio
import ipaddress
import json
import logging
import os
import secrets
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pydantic_core import from_json

from planner_mode.server.wire import CallUsage, ErrorKind, ErrorResponse
from shared.errors import ConfigurationError

if TYPE_CHECKING:
    from starlette.requests import Request
    from starlette.types import ASGIApp, Message, Receive, Scope, Send

__all__ = [
    "DEFAULT_MAX_BODY_BYTES",
    "DEFAULT_READ_TIMEOUT_S",
    "INLINE_PARSE_BYTES",
    "PUBLIC_PATHS",
    "READ_TIMEOUT_ENV",
    "TOKEN_ENV",
    "BearerAuth",
    "BodyReadTimeout",
    "BodySizeLimit",
    "Outcome",
    "RequestLog",
    "bind_warning",
    "effective_token",
    "env_number",
    "outcome_of",
    "read_timeout_from_env",
    "send_error",
    "strict_json",
]

logger = logging.getLogger("planner_mode.server")

DEFAULT_MAX_BODY_BYTES = 1_000_000
"""Default request body limit: far above any real context + catalog, far below a memory problem."""

INLINE_PARSE_BYTES = 64_000
"""Bodies up to this size are parsed on the event loop (well under a millisecond); larger ones in a thread."""

DEFAULT_READ_TIMEOUT_S = 30.0
"""How long a client has to send a request's head (from the connection's start or its previous response),
and then its body: far above what a bounded request needs, far below holding a connection forever."""

READ_TIMEOUT_ENV = "ERP_AI_READ_TIMEOUT"
"""The variable that sets the read timeout, in seconds (``erp-ai serve --read-timeout``)."""

TOKEN_ENV = "ERP_AI_SERVER_TOKEN"
PUBLIC_PATHS = frozenset({"/healthz"})
"""Paths served without the token."""


def effective_token(token: str | None) -> str | None:
    """``token``, or ``$ERP_AI_SERVER_TOKEN`` when it is ``None``; an empty value means no token."""
    return (token if token is not None else os.environ.get(TOKEN_ENV)) or None


def env_number(name: str, default: float, *, integer: bool = False) -> float:
    """A positive number from the environment, or ``default``; a ``ConfigurationError`` names a bad value."""
    text = os.environ.get(name, "").strip()
    if not text:
        return default
    try:
        value = int(text) if integer else float(text)
    except ValueError:
        value = 0
    if not 0 < value < float("inf"):
        kind = "a whole number" if integer else "a number"
        raise ConfigurationError(f"{name} must be {kind} greater than 0, not {text!r}.")
    return value


def read_timeout_from_env() -> float:
    """The read timeout in seconds: ``$ERP_AI_READ_TIMEOUT``, or :data:`DEFAULT_READ_TIMEOUT_S`."""
    return env_number(READ_TIMEOUT_ENV, DEFAULT_READ_TIMEOUT_S)


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
    """A warning when the server would listen beyond loopback (``localhost``, ``127.0.0.0/8``, ``::1``)
    without a token (read as :func:`effective_token` reads it), else ``None``."""
    if effective_token(token) is not None or _is_loopback(host):
        return None
    where = host or "all interfaces"
    return (
        f"The AI server will listen on {where}, which is not a loopback address, without a bearer token: "
        "anyone who can reach it can use your model. Set a token (--token or ERP_AI_SERVER_TOKEN) or bind "
        "127.0.0.1."
    )


async def send_error(send: Send, status_code: int, body: ErrorResponse, headers: dict[str, str]) -> None:
    """Answer with ``body`` as JSON (what an endpoint's error handler would send), from a middleware."""
    content = body.model_dump_json().encode()
    raw = [(b"content-length", str(len(content)).encode()), (b"content-type", b"application/json")]
    raw += [(name.lower().encode(), value.encode()) for name, value in headers.items()]
    await send({"type": "http.response.start", "status": status_code, "headers": raw})
    await send({"type": "http.response.body", "body": content})


_UNAUTHORIZED = ErrorResponse(error="Missing or wrong bearer token.", kind="unauthorized")


class BearerAuth:
    """ASGI middleware: 401 unless ``Authorization: Bearer <token>`` matches, from the headers alone (so
    whatever the body is); ``public_paths`` pass."""

    def __init__(self, app: ASGIApp, token: str, public_paths: frozenset[str] = PUBLIC_PATHS) -> None:
        self.app = app
        self._expected = token.encode()
        self.public_paths = public_paths

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"] in self.public_paths or self._authorised(scope):
            await self.app(scope, receive, send)
            return
        await send_error(send, 401, _UNAUTHORIZED, {"WWW-Authenticate": "Bearer"})

    def _authorised(self, scope: Scope) -> bool:
        header = dict(scope.get("headers", [])).get(b"authorization", b"")
        scheme, _, credentials = header.partition(b" ")
        # Compare even when the scheme is wrong, so that the time taken says nothing about the token.
        matches = secrets.compare_digest(credentials.strip(), self._expected)
        return scheme.lower() == b"bearer" and matches


class BodySizeLimit:
    """ASGI middleware: 413 when a request body exceeds ``max_body_bytes``.

    A declared ``Content-Length`` above the limit is refused before reading; every body is then read and
    counted before the app sees it, so a missing or lying header cannot get a larger body through.
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
        await send_error(send, 413, body, {})


class _BodyTimedOut(Exception):
    """Raised from a bounded ``receive`` inside the app; :class:`BodyReadTimeout` turns it into the 408."""


class BodyReadTimeout:
    """ASGI middleware: 408 and ``Connection: close`` when a request's body has not all arrived within
    ``timeout_s`` of its head (every ``receive`` until the body's last part shares one deadline; the head is
    bounded by :mod:`planner_mode.server.protocol`)."""

    def __init__(self, app: ASGIApp, timeout_s: float) -> None:
        self.app = app
        self.timeout_s = timeout_s

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        deadline = asyncio.get_running_loop().time() + self.timeout_s
        body_done = answered = False

        async def bounded() -> Message:
            nonlocal body_done
            if body_done:
                return await receive()
            try:
                async with asyncio.timeout_at(deadline):
                    message = await receive()
            except TimeoutError:
                raise _BodyTimedOut from None
            body_done = message["type"] != "http.request" or not message.get("more_body", False)
            return message

        async def sending(message: Message) -> None:
            nonlocal answered
            answered = answered or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, bounded, sending)
        except _BodyTimedOut:
            if answered:  # cannot happen with the body read before the endpoint runs; never send twice
                raise
            body = ErrorResponse(
                error=f"The request body did not arrive within {self.timeout_s:g} s.", kind="request_timeout"
            )
            await send_error(send, 408, body, {"Connection": "close"})


@dataclass
class Outcome:
    """What an endpoint tells :class:`RequestLog` about its request (kept in ``request.state``)."""

    usage: CallUsage | None = None
    kind: ErrorKind | None = None
    streamed: bool = False


OUTCOME_KEY = "erp_ai_outcome"
KIND_BY_STATUS: dict[int, ErrorKind] = {
    401: "unauthorized",
    404: "not_found",
    405: "method_not_allowed",
    408: "request_timeout",
    413: "too_large",
    422: "invalid_request",
    500: "internal",
    502: "provider",
}


def outcome_of(request: Request) -> Outcome:
    """The request's :class:`Outcome`, created on first use."""
    outcome: Outcome | None = getattr(request.state, OUTCOME_KEY, None)
    if outcome is None:
        outcome = Outcome()
        setattr(request.state, OUTCOME_KEY, outcome)
    return outcome


class RequestLog:
    """ASGI middleware: log each request once its response has been sent, INFO on ``planner_mode.server``
    (DEBUG for ``public_paths``), fields in ``record.erp_ai``; no body, question or answer is read."""

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
            self._log(scope, status, state.get(OUTCOME_KEY) or Outcome(), started)

    def _log(self, scope: Scope, status: int, outcome: Outcome, started: float) -> None:
        level = logging.DEBUG if scope["path"] in self.public_paths else logging.INFO
        if not logger.isEnabledFor(level):
            return
        usage = outcome.usage or CallUsage()
        fields: dict[str, Any] = {
            "method": scope.get("method", ""),
            "path": scope["path"],
            "status": status,
            "kind": outcome.kind or (KIND_BY_STATUS.get(status) if status >= 400 else None),
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


def strict_json(body: bytes) -> Any:
    """Parse a request body as strict JSON (no ``NaN``, no lone surrogate escape, nesting up to 200), else
    ``json.JSONDecodeError``, which FastAPI turns into a 422."""
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
