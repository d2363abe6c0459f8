"""An async HTTP transport that keeps one connection pool per event loop, so one chat model serves any loop.

A provider's async client pool belongs to the loop that opened it; reused from another loop it fails ("bound
to a different event loop", "Event loop is closed"). :class:`LoopBoundPools` opens a pool per running loop
and forgets it with its loop (weakly referenced).
"""

from __future__ import annotations

import asyncio
import threading
import weakref
from collections.abc import Callable
from types import TracebackType
from typing import Any


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
