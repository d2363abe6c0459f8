"""The memory store under hostile conditions: broken databases, concurrent threads, walls of stored text."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import date
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import insert, text, update
from sqlalchemy.exc import SQLAlchemyError

from shared.bounds import (
    CONTEXT_MAX_CHARS,
    MAX_CONTEXT_EXCHANGES,
    MAX_CONTEXT_MEMORIES,
    MAX_EXCHANGE_CHARS,
    MAX_MEMORY_CHARS,
    MAX_STATE_KEYS,
    MAX_STATE_VALUE_CHARS,
    TRUNCATION_MARK,
    json_size,
)
from shared.erp.storage import SharedConnectionPool
from shared.errors import StorageError
from shared.memory.context import render_context
from shared.memory.store import MemoryStore, MessageIn, TurnRecord
from shared.memory.tables import ConversationState, MemoryRecord, Message
from tests.shared.erp.test_storage import assert_one_clear_line
from tests.shared.memory.conftest import turn

TODAY = date(2026, 11, 30)
MEGABYTE = 1_000_000


def wall(seed: str) -> str:
    """A megabyte of text full of what JSON escapes: quotes, backslashes, newlines, control characters."""
    return (seed + ' "comillas" \\ barra\n\tnueva línea \x01\x1f ñandú ') * (MEGABYTE // (len(seed) + 45))


# -- opening -------------------------------------------------------------------------------------------------


def test_a_read_only_database_is_refused_when_opened_not_when_a_turn_is_recorded(tmp_path: Path) -> None:
    path = tmp_path / "memory.sqlite3"
    MemoryStore(f"sqlite:///{path}").close()  # tables exist: only a write can tell
    with pytest.raises(StorageError) as caught:
        MemoryStore(f"sqlite:///file:{path}?mode=ro&uri=true")
    assert_one_clear_line(caught.value, "is read-only", "writable")


# -- reading and writing -------------------------------------------------------------------------------------


@pytest.fixture
def locked_store(tmp_path: Path, quick_busy_timeout: None) -> Iterator[MemoryStore]:
    """A store whose database another process holds the write lock of."""
    path = tmp_path / "memory.sqlite3"
    store = MemoryStore(f"sqlite:///{path}")
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    yield store
    holder.execute("ROLLBACK")
    holder.close()
    store.close()


def test_a_write_locked_past_the_busy_timeout_is_a_storage_error_and_writes_nothing(
    locked_store: MemoryStore,
) -> None:
    record = TurnRecord(messages=[MessageIn(role="user", content="hola")], state={"anio": 2025})
    for write in (
        lambda: locked_store.record_turn("c1", record),
        lambda: locked_store.merge_state("c1", {"anio": 2025}),
        lambda: locked_store.ensure_conversation("c1"),
        lambda: locked_store.create_conversation(),
    ):
        with pytest.raises(StorageError) as caught:
            write()
        assert_one_clear_line(caught.value, "Cannot write the conversation memory", "stayed locked")
        assert isinstance(caught.value.__cause__, SQLAlchemyError)
    assert locked_store.get_state("c1") == {}  # reads still work under WAL


def test_a_failing_read_is_a_storage_error(memory_store: MemoryStore) -> None:
    memory_store.record_turn("c1", TurnRecord(messages=[MessageIn(role="user", content="hola")]))
    with memory_store.engine.begin() as connection:
        connection.execute(text("DROP TABLE messages"))
    for read in (lambda: memory_store.history("c1"), lambda: memory_store.build_context("c1", TODAY)):
        with pytest.raises(StorageError) as caught:
            read()
        # The database's own one-line reason names the missing table: "no such table: messages" (SQLite),
        # 'relation "messages" does not exist' (PostgreSQL).
        assert_one_clear_line(caught.value, "Cannot read the conversation memory", "messages")


def test_text_that_is_not_valid_unicode_is_stored_with_replacement_characters(
    memory_store: MemoryStore,
) -> None:
    """A model may emit a lone-surrogate JSON escape; storing its answer must not crash after the turn."""
    memory_store.record_turn(
        "c1",
        turn("hola", "mal \ud800", memories=[("hecho \udfff", 0.5)], state={"tema\ud800": "ventas \ud800"}),
    )
    assert memory_store.history("c1")[-1].content == "mal \ufffd"
    assert memory_store.memories("c1")[0].content == "hecho \ufffd"
    assert memory_store.get_state("c1") == {"tema\ufffd": "ventas \ufffd"}


# -- in-memory SQLite and threads ----------------------------------------------------------------------------


@pytest.mark.parametrize("url", ["sqlite://", "sqlite:///:memory:"])
def test_an_in_memory_store_is_shared_by_worker_threads(url: str) -> None:
    def worker(n: int) -> None:
        for i in range(10):
            messages = [MessageIn(role="user", content=f"u{n}.{i}"), MessageIn(role="assistant", content="a")]
            store.record_turn("compartida", TurnRecord(messages=messages, state={f"t{n}": i}))
            store.build_context("compartida", TODAY)

    with MemoryStore(url) as store:
        assert isinstance(store.engine.pool, SharedConnectionPool)  # one in-memory database for all threads
        with ThreadPoolExecutor(6) as pool:
            list(pool.map(worker, range(6)))  # re-raises what a thread raised
        assert len(store.history("compartida")) == 6 * 10 * 2
        assert store.get_state("compartida") == {f"t{n}": 9 for n in range(6)}


# -- bounds --------------------------------------------------------------------------------------------------


def test_walls_of_text_recorded_through_the_store_are_bounded_on_write(memory_store: MemoryStore) -> None:
    memories = [(wall(f"hecho {i}"), i / 20) for i in range(20)]
    memories += [(wall("hecho 19"), 1.0)] * 100  # a model repeating itself
    state = {f"clave {i} " + "k" * 1000: wall(f"valor {i}") for i in range(100)}
    question, answer = wall("pregunta"), wall("respuesta")

    for number in range(3):
        changes = {f"{number} {key}": value for key, value in state.items()}
        memory_store.record_turn("c1", turn(question, answer, memories=memories, state=changes))

    stored_memories = memory_store.memories("c1")
    assert len(stored_memories) <= 5 * 3
    assert all(len(item.content) <= MAX_MEMORY_CHARS for item in stored_memories)
    assert all(item.content.endswith(TRUNCATION_MARK) for item in stored_memories)
    stored_state = memory_store.get_state("c1")
    assert len(stored_state) == MAX_STATE_KEYS
    assert all(json_size(value) <= MAX_STATE_VALUE_CHARS for value in stored_state.values())
    assert all(key.startswith("2 ") for key in stored_state)  # the newest update's keys win
    assert memory_store.history("c1")[-1].content == answer  # messages are the history: kept whole

    assert_context_is_bounded(memory_store, "c1")


def test_walls_of_text_written_behind_the_stores_back_still_give_a_bounded_context(
    memory_store: MemoryStore,
) -> None:
    """Data from an older version or another writer: the context is bounded on read too."""
    memory_store.ensure_conversation("c1")
    with memory_store.engine.begin() as connection:
        connection.execute(
            insert(MemoryRecord),
            [
                {"conversation_id": "c1", "content": wall(f"m{i}"), "content_key": f"k{i}", "importance": 0.5}
                for i in range(30)
            ],
        )
        connection.execute(
            insert(Message),
            [
                {
                    "conversation_id": "c1",
                    "role": "user" if i % 2 == 0 else "assistant",
                    "content": wall(f"x{i}"),
                }
                for i in range(20)
            ],
        )
        connection.execute(
            update(ConversationState)
            .where(ConversationState.conversation_id == "c1")
            .values(
                state={
                    f"clave {i}" * 500: {
                        "lista": ["v" * 1000] * 50,
                        "n": i,
                        "texto": wall("t") if i < 3 else "",
                    }
                    for i in range(200)
                }
            )
        )

    context = assert_context_is_bounded(memory_store, "c1")
    assert len(context.memories) == MAX_CONTEXT_MEMORIES
    assert len(context.recent_exchanges) == MAX_CONTEXT_EXCHANGES
    assert len(context.state) == MAX_STATE_KEYS
    assert all(len(m) <= MAX_MEMORY_CHARS and m.endswith(TRUNCATION_MARK) for m in context.memories)
    for exchange in context.recent_exchanges:
        assert len(exchange.user) <= MAX_EXCHANGE_CHARS and exchange.user.endswith(TRUNCATION_MARK)
        assert "\x01" not in exchange.assistant


def assert_context_is_bounded(store: MemoryStore, conversation_id: str) -> Any:
    context = store.build_context(conversation_id, TODAY, memory_limit=1000, exchanges=1000)
    as_json = context.model_dump_json()
    assert len(as_json) <= CONTEXT_MAX_CHARS
    assert len(render_context(context)) <= CONTEXT_MAX_CHARS
    assert len(as_json.encode("utf-8")) < 4 * CONTEXT_MAX_CHARS
    return context
