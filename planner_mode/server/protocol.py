"""uvicorn's HTTP/1.1 protocol with a read timeout for a request's line and headers (uvicorn has none).

uvicorn only closes a connection left idle *after* a response, so a client that sends its request head slowly
(slowloris) or never holds the connection. :class:`HeadTimeoutH11Protocol` closes a connection whose next
request head is not complete within the read timeout (:data:`~planner_mode.server.limits.READ_TIMEOUT_ENV`),
counted from the connection's start and from the end of each response; the body's time is bounded in the app
(:class:`~planner_mode.server.limits.BodyReadTimeout`). Use: ``uvicorn.run(..., http=HeadTimeoutH11Protocol)``
(``erp-ai serve`` does).
"""

# ruff: noqa: E402  (uvicorn is imported after checking that the [server] extra is installed)
from __future__ import annotations

import asyncio
import logging
from contextlib import suppress
from typing import Any

from shared.extras import require

require("uvicorn", "server", "The AI server's protocol (planner_mode.server.protocol)")

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

from planner_mode.server.limits import read_timeout_from_env

__all__ = ["HeadTimeoutH11Protocol"]

logger = logging.getLogger("planner_mode.server")


class HeadTimeoutH11Protocol(H11Protocol):
    """uvicorn's h11 protocol that closes a connection whose request head is late.

    The timer runs from ``connection_made`` and from the end of each response, and stops when a request
    head has been parsed or the connection is lost. The timeout is read from the environment per connection,
    so every worker of ``erp-ai serve`` uses the value it was started with.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.head_timeout_s = read_timeout_from_env()
        self._head_timer: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._await_head()

    def handle_events(self) -> None:
        cycle = self.cycle
        super().handle_events()
        if self.cycle is not cycle:  # a request's head arrived: its body and answer have their own bounds
            self._stop_head_timer()

    def on_response_complete(self) -> None:
        if not self.transport.is_closing():
            self._await_head()
        super().on_response_complete()

    def connection_lost(self, exc: Exception | None) -> None:
        self._stop_head_timer()
        super().connection_lost(exc)

    def _await_head(self) -> None:
        self._stop_head_timer()
        self._head_timer = self.loop.call_later(self.head_timeout_s, self._head_timed_out)

    def _stop_head_timer(self) -> None:
        if self._head_timer is not None:
            self._head_timer.cancel()
            self._head_timer = None

    def _head_timed_out(self) -> None:
        self._head_timer = None
        if self.transport.is_closing():
            return
        logger.debug("closed a connection whose request head did not arrive within %g s", self.head_timeout_s)
        with suppress(h11.LocalProtocolError):  # as uvicorn closes an idle keep-alive connection
            self.conn.send(h11.ConnectionClosed())
        self.transport.close()
