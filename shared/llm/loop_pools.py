"""An async HTTP transport that keeps one connection pool per event loop, so one chat model serves any loop.

A provider's async client (``ChatOpenAI``'s OpenAI SDK client, ``ChatOllama``'s ``ollama.AsyncClient``)
keeps a pool of connections whose locks and sockets belong to the event loop that opened them. The same model
used from a second loop fails: after a blocking ``engine.ask`` (which runs on the engine's own loop) an
``asyncio.run(engine.aask(...))`` raises ``... is bound to a different event loop``, and a second
``asyncio.run`` raises ``Event loop is closed``. :class:`LoopBoundPools` sits where the client's transport
goes and opens a pool for each running loop the first time that loop sends a request; a pool is forgotten
with its loop (weakly referenced), so a finished ``asyncio.run`` leaves nothing behind that a later loop
could trip on.

It has the interface ``httpx`` and ``httpx2`` clients call on a transport (``handle_async_request``,
``aclose`` and the async context manager), so it serves both: ``open_pool`` is the library's own
``AsyncHTTPTransport`` (or a factory of one).
"""

from __future__ import annotations

import asyncio
import threading
import weakref
from collections.abc import Callable
from types import TracebackType
from typing import Any

__all__ = ["LoopBoundPools"]


class LoopBoundPools:
    """An async transport that delegates each request to the connection pool of the running event loop."""

    def __init__(self, open_pool: Callable[[], Any]) -> None:
        self._open_pool = open_pool
        self._pools: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, Any] = weakref.WeakKeyDictionary()
        self._lock = threading.Lock()

    def _pool(self) -> Any:
        loop = asyncio.get_running_loop()
        with self._lock:
            pool = self._pools.get(loop)
            if pool is None:
                pool = self._pools[loop] = self._open_pool()
            return pool

    async def handle_async_request(self, request: Any) -> Any:
        return await self._pool().handle_async_request(request)

    async def aclose(self) -> None:
        """Close the running loop's pool; the pools of other loops are dropped (their loops close them)."""
        loop = asyncio.get_running_loop()
        with self._lock:
            pool = self._pools.pop(loop, None)
            self._pools.clear()
        if pool is not None:
            await pool.aclose()

    async def __aenter__(self) -> LoopBoundPools:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc_value: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        await self.aclose()
