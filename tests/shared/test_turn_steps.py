"""The steps both modes share: admission, the bounded context, the answer clock, the end, run_sync."""

from __future__ import annotations

import asyncio
import contextvars
import datetime
import logging
import threading
from typing import Any

import pytest

from shared.errors import ConversationAccessDenied, InputError, StorageError
from shared.memory.store import MemoryStore, MessageIn, TurnRecord
from shared.security import Caller
from shared.tracing import aturn_run
from shared.turn import TurnResult
from shared.turn_steps import AnswerClock, finish_turn, open_turn, run_until_complete, text_of

TODAY = datetime.date(2026, 11, 30)
ANA = Caller(user_id="ana")
BETO = Caller(user_id="beto")


def test_text_of_keeps_text_and_records_anything_else_by_its_repr() -> None:
    assert text_of("hola") == "hola"
    assert text_of(None) == "None"
    assert text_of(b"x") == "b'x'"


def _record(store: MemoryStore, conversation_id: str, user_id: str) -> None:
    turn = TurnRecord(
        messages=[
            MessageIn(role="user", content="¿ventas?", metadata={}),
            MessageIn(role="assistant", content="Muchas.", metadata={}),
        ],
        memories=[],
        state={"anio": 2025},
    )
    store.record_turn(conversation_id, turn, user_id=user_id)


def test_open_turn_reads_the_bounded_context_of_a_conversation(memory_store: MemoryStore) -> None:
    _record(memory_store, "c1", "ana")
    context = open_turn(memory_store, "c1", "¿y en 2024?", ANA, TODAY, exchanges=1)
    assert not isinstance(context, Exception)
    assert context.today == TODAY and context.state == {"anio": 2025}
    assert [exchange.user for exchange in context.recent_exchanges] == ["¿ventas?"]


def test_open_turn_returns_an_input_refusal_and_raises_for_another_users_conversation(
    memory_store: MemoryStore,
) -> None:
    assert isinstance(open_turn(memory_store, "c1", "   ", ANA, TODAY), InputError)
    _record(memory_store, "c1", "ana")
    with pytest.raises(ConversationAccessDenied):
        open_turn(memory_store, "c1", "hola", BETO, TODAY)


def test_open_turn_returns_a_storage_refusal(
    memory_store: MemoryStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    def down(*_args: Any, **_kwargs: Any) -> None:
        raise StorageError("the store is down")

    monkeypatch.setattr(memory_store, "build_context", down)
    assert isinstance(open_turn(memory_store, "c1", "hola", ANA, TODAY), StorageError)


class TickingClock(AnswerClock):
    """An answer clock whose time moves only when told (``now``, in milliseconds)."""

    now: float = 0.0

    def elapsed_ms(self) -> float:
        return self.now


def shown(clock: TickingClock, *pieces: tuple[float, str]) -> None:
    """``clock`` shows each ``(ms, text)`` piece at its time."""
    for ms, text in pieces:
        clock.now = ms
        assert clock.delta(text).text == text


def test_the_first_answer_is_the_first_piece_of_the_text_kept() -> None:
    clock = TickingClock()
    shown(clock, (100, "Vendimos "), (150, "₲850.000.000."))
    assert clock.first_answer_ms("Vendimos ₲850.000.000.", total_ms=200) == 100


def test_a_preamble_before_the_kept_answer_is_not_its_first_piece() -> None:
    clock = TickingClock()
    shown(clock, (100, "Voy a consultar."), (900, "\n\nVendimos "), (950, "₲850.000.000."))
    assert clock.first_answer_ms("Vendimos ₲850.000.000.", total_ms=1000) == 900


def test_text_shown_and_then_replaced_is_no_first_answer() -> None:
    """A refused answer, or one a failed call cut: the kept text reached the reader with the result."""
    clock = TickingClock()
    shown(clock, (100, "Vendimos ₲999."))
    assert (
        clock.first_answer_ms("Lo siento, no puedo confirmar con los datos del ERP…", total_ms=1000) == 1000
    )
    assert TickingClock().first_answer_ms("Lo siento.", total_ms=5) == 5  # nothing was shown


def test_without_a_reader_nothing_is_timed() -> None:
    unread = AnswerClock(reading=False)
    assert unread.delta("Hola").text == "Hola"
    assert unread.first_answer_ms("Hola", total_ms=10) is None


async def test_finish_turn_sets_the_run_outputs_and_logs_once(caplog: pytest.LogCaptureFixture) -> None:
    result = TurnResult(mode="planner", conversation_id="c1", question="q", answer="a", failure="provider")
    logger = logging.getLogger("shared.test_turn_steps")
    async with aturn_run(None, mode="planner", inputs={}) as run:
        with caplog.at_level(logging.INFO, logger=logger.name):
            assert finish_turn(run, logger, result, "ana", recorded=False) is result
    assert run.outputs == {"answer": "a", "failure": "provider", "recorded": False}
    assert [record.levelno for record in caplog.records] == [logging.WARNING]


REQUEST: contextvars.ContextVar[str] = contextvars.ContextVar("request", default="none")


async def _where() -> tuple[str, str]:
    await asyncio.sleep(0)
    return threading.current_thread().name, REQUEST.get()


def test_run_until_complete_runs_every_call_on_one_loop_so_loop_bound_clients_survive() -> None:
    async def loop_id() -> int:
        return id(asyncio.get_running_loop())

    first, second = run_until_complete(loop_id()), run_until_complete(loop_id())
    assert first == second


async def test_run_until_complete_never_reenters_a_running_loop_and_keeps_context_variables() -> None:
    REQUEST.set("r-1")
    thread, request = run_until_complete(_where())
    assert thread != threading.current_thread().name and request == "r-1"


def test_run_until_complete_raises_what_the_coroutine_raises() -> None:
    async def fail() -> Any:
        raise ValueError("boom")

    with pytest.raises(ValueError, match="boom"):
        run_until_complete(fail())
