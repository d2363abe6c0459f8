"""One bounded retry for a request whose connection failed before the server answered a single byte.

Local OpenAI-compatible servers close idle keep-alive connections; a client that reuses one gets "Server
disconnected" at once, and the model never saw the request. The transports here resend such a request once
on a new connection (:data:`RETRIED_ERRORS`); timeouts and HTTP statuses are never retried. Each retry is
counted on the current :class:`~shared.llm.usage.UsageTracker` and logged on ``shared.llm``.
"""

from __future__ import annotations

import logging
from typing import Any

import httpx2

from shared.llm.loop_pools import LoopBoundPools
from shared.llm.usage import count_connection_retry

logger = logging.getLogger("shared.llm")

RETRIED_ERRORS: tuple[type[Exception], ...] = (
    httpx2.ConnectError,
    httpx2.RemoteProtocolError,
    httpx2.ReadError,
    httpx2.WriteError,
)
"""Transport errors raised before a response header arrived, other than timeouts: the connection failed."""


def _note_retry(request: httpx2.Request, error: Exception) -> None:
    count_connection_retry()
    logger.warning(
        "Retrying %s %s once on a new connection: %s: %s",
        request.method,
        request.url,
        type(error).__name__,
        error,
    )


class RetryingTransport(httpx2.BaseTransport):
    """A synchronous transport that retries a request once when its connection failed (see the module)."""

    def __init__(self, inner: httpx2.BaseTransport | None = None, **transport_options: Any) -> None:
        self._inner = inner or httpx2.HTTPTransport(**transport_options)

    def handle_request(self, request: httpx2.Request) -> httpx2.Response:
        try:
            return self._inner.handle_request(request)
        except RETRIED_ERRORS as error:
            _note_retry(request, error)
            return self._inner.handle_request(request)

    def close(self) -> None:
        self._inner.close()


class AsyncRetryingTransport(httpx2.AsyncBaseTransport):
    """:class:`RetryingTransport` for asynchronous clients. By default its connections are pooled per event
    loop (:class:`~shared.llm.loop_pools.LoopBoundPools`), so the client serves any loop."""

    def __init__(
        self, inner: httpx2.AsyncBaseTransport | LoopBoundPools | None = None, **transport_options: Any
    ) -> None:
        self._inner = inner or LoopBoundPools(lambda: httpx2.AsyncHTTPTransport(**transport_options))

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        try:
            return await self._inner.handle_async_request(request)
        except RETRIED_ERRORS as error:
            _note_retry(request, error)
            return await self._inner.handle_async_request(request)

    async def aclose(self) -> None:
        await self._inner.aclose()
