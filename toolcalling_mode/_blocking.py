"""The blocking ``ask`` over the async turn: every blocking call runs on one event loop, kept in a daemon
thread for the life of the process, with the caller's context variables.

One loop, not one per call (``asyncio.run``): a provider's async client (``ChatOllama``, ``ChatOpenAI``) keeps
its HTTP connections bound to the loop that opened them, so a second ``ask`` on a fresh loop would fail
(``Event loop is closed``), as would turns from several threads sharing connections across loops. A calling
thread that runs an event loop itself (a notebook, sync code inside async code) never re-enters it.
"""

from __future__ import annotations

import asyncio
import contextvars
import os
import threading
from collections.abc import Coroutine
from typing import Any, TypeVar

T = TypeVar("T")

_loop: asyncio.AbstractEventLoop | None = None
_lock = threading.Lock()


def run_blocking(coroutine: Coroutine[Any, Any, T]) -> T:
    """Run ``coroutine`` on the blocking calls' loop and return its result; interrupting the wait (Ctrl-C)
    cancels it."""
    context = contextvars.copy_context()
    future = asyncio.run_coroutine_threadsafe(_in_context(coroutine, context), _blocking_loop())
    try:
        return future.result()
    except BaseException:
        future.cancel()
        raise


def _blocking_loop() -> asyncio.AbstractEventLoop:
    global _loop
    with _lock:
        if _loop is None:
            _loop = asyncio.new_event_loop()
            threading.Thread(target=_loop.run_forever, name="toolcalling-ask", daemon=True).start()
        return _loop


async def _in_context(coroutine: Coroutine[Any, Any, T], context: contextvars.Context) -> T:
    for variable, value in context.items():  # the task runs in its own copy of the loop thread's context
        variable.set(value)
    return await coroutine


def _forget_loop() -> None:
    global _loop, _lock
    _loop, _lock = None, threading.Lock()  # a forked child has no loop thread: it starts its own


os.register_at_fork(after_in_child=_forget_loop)
