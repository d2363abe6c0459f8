"""The steps of a turn that both modes take the same way: admit, time the answer, finish.

:func:`open_turn` checks the input and the caller's access and reads the context, returning a refusal instead
of raising it (``ConversationAccessDenied`` still raises); :class:`AnswerClock` times the answer and
:func:`measured_figures` gives the turn's cost;
:func:`finish_turn` ends the parent run and logs the turn; :func:`run_until_complete` runs an engine's
``aask`` for its blocking ``ask``.
"""

from __future__ import annotations

import asyncio
import bisect
import contextvars
import itertools
import logging
import os
import threading
import time
from collections.abc import Coroutine
from dataclasses import dataclass, field
from datetime import date
from typing import Any, Final, TypeVar

from shared.errors import ConversationAccessDenied, ErpAiError
from shared.events import AnswerDelta
from shared.inputs import check_turn_input
from shared.llm.usage import CallUsage
from shared.logs import log_turn
from shared.memory.context import ConversationContext
from shared.memory.store import MemoryStore
from shared.security import Caller
from shared.tracing import TurnRun
from shared.turn import TurnResult

T = TypeVar("T")


def text_of(value: object) -> str:
    """``value`` if it is text; a refused non-text input (``None``, bytes) is recorded by its ``repr``."""
    return value if isinstance(value, str) else repr(value)


_KEPT_ANCHOR_CHARS: Final = 40
"""Characters of the kept answer's beginning looked for in the text a reader was shown."""


@dataclass
class AnswerClock:
    """The turn's clock: started when the turn starts, it notes when each piece of answer a reader is shown
    arrives, so that the first piece of the answer the user keeps can be timed once the turn knows it."""

    reading: bool = True
    started: float = field(default_factory=time.perf_counter)
    """``time.perf_counter()`` at the start of the turn."""
    _pieces: list[str] = field(default_factory=list)
    _stamps: list[float] = field(default_factory=list)

    def elapsed_ms(self) -> float:
        """Milliseconds since the turn started."""
        return (time.perf_counter() - self.started) * 1000

    def delta(self, text: str) -> AnswerDelta:
        """The next piece of the answer a reader is shown, noted with its time."""
        if self.reading:
            self._pieces.append(text)
            self._stamps.append(self.elapsed_ms())
        return AnswerDelta(text=text)

    def first_answer_ms(self, answer: str, total_ms: float) -> float | None:
        """Milliseconds from the start to the first piece of ``answer``, the text the turn's result keeps:
        the piece where the last copy of its beginning in the shown text starts. Text shown and then
        replaced (a preamble before the answer, a refused or failed answer) is not a first answer: when the
        reader was never shown ``answer``, it reached them with the result, at ``total_ms``. ``None``
        without a reader (``ask``)."""
        if not self.reading:
            return None
        shown = "".join(self._pieces)
        beginning = answer.strip()[:_KEPT_ANCHOR_CHARS]
        at = shown.rfind(beginning) if beginning else -1
        if at < 0:
            return total_ms
        starts = list(itertools.accumulate((len(piece) for piece in self._pieces), initial=0))
        return self._stamps[bisect.bisect_right(starts, at) - 1]


def measured_figures(usage: CallUsage, clock: AnswerClock, answer: str) -> dict[str, Any]:
    """A turn's measured cost for its :class:`TurnResult`, whose kept text is ``answer``: the model calls'
    usage and the turn's times (the harness's share is the total less the model's)."""
    total_ms = clock.elapsed_ms()
    return {
        "model_calls": usage.model_calls,
        "input_tokens": usage.input_tokens,
        "output_tokens": usage.output_tokens,
        "cached_input_tokens": usage.cached_input_tokens,
        "usage_reported": usage.unreported_calls == 0,
        "connection_retries": usage.connection_retries,
        "model_ms": usage.model_ms,
        "calls": usage.calls,
        "first_answer_ms": clock.first_answer_ms(answer, total_ms),
        "harness_ms": max(0.0, total_ms - usage.model_ms),
        "total_ms": total_ms,
    }


def admit_turn(store: MemoryStore, conversation_id: str, question: str, caller: Caller) -> None:
    """Check the turn's input and that ``caller`` may use the conversation (before any model call)."""
    check_turn_input(conversation_id, question)
    store.check_access(conversation_id, caller.user_id)


def read_context(
    store: MemoryStore, conversation_id: str, today: date, *, memory_limit: int = 5, exchanges: int = 1
) -> ConversationContext:
    """The conversation's bounded context for the next model call (no write: a turn's recording creates an
    unknown conversation in its own transaction, so a failed first turn leaves nothing behind)."""
    return store.build_context(conversation_id, today, memory_limit=memory_limit, exchanges=exchanges)


def open_turn(
    store: MemoryStore,
    conversation_id: str,
    question: str,
    caller: Caller,
    today: date,
    *,
    memory_limit: int = 5,
    exchanges: int = 1,
) -> ConversationContext | ErpAiError:
    """:func:`admit_turn` then :func:`read_context`: the context, or the input or storage error that refused
    the turn (to end it unrecorded). Blocking (storage): async drivers call it in a thread."""
    try:
        admit_turn(store, conversation_id, question, caller)
        return read_context(store, conversation_id, today, memory_limit=memory_limit, exchanges=exchanges)
    except ConversationAccessDenied:
        raise
    except ErpAiError as exc:  # InputError or StorageError: refused before any model call
        return exc


def finish_turn(
    run: TurnRun, logger: logging.Logger, result: TurnResult, user_id: str, **outputs: Any
) -> TurnResult:
    """End a turn, whichever mode ran it: the answer and the failure kind (and any further ``outputs``) as
    the parent run's outputs, and the turn's log record. Returns ``result``."""
    run.outputs.update(answer=result.answer, failure=result.failure, **outputs)
    log_turn(logger, result, user_id)
    return result


def run_until_complete(coroutine: Coroutine[Any, Any, T]) -> T:
    """Run ``coroutine`` to its end and return its result, blocking the calling thread (pydantic-ai's
    ``run_sync``); interrupting the wait (Ctrl-C) cancels it."""
    context = contextvars.copy_context()
    future = asyncio.run_coroutine_threadsafe(_in_context(coroutine, context), _blocking_loop())
    try:
        return future.result()
    except BaseException:
        future.cancel()
        raise


_loop: asyncio.AbstractEventLoop | None = None
_loop_lock = threading.Lock()


def _blocking_loop() -> asyncio.AbstractEventLoop:
    global _loop
    with _loop_lock:
        if _loop is None:
            _loop = asyncio.new_event_loop()
            threading.Thread(target=_loop.run_forever, name="erp-ai-blocking-turns", daemon=True).start()
        return _loop


async def _in_context(coroutine: Coroutine[Any, Any, T], context: contextvars.Context) -> T:
    for variable, value in context.items():  # the task runs in a copy of the loop thread's context
        variable.set(value)
    return await coroutine


def _forget_loop() -> None:
    global _loop, _loop_lock
    _loop, _loop_lock = None, threading.Lock()  # a forked child has no loop thread: it starts its own


os.register_at_fork(after_in_child=_forget_loop)
