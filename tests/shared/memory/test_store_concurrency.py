"""The memory store's concurrency rules, on SQLite and on a real PostgreSQL (``shared/memory/store.py``).

First turns racing on one id make one conversation (a second user is refused); writers sharing a conversation
lose, duplicate or interleave no message, merge the state per key (last writer wins) and a turn planned on an
outdated version is flagged ``stale``. Writers are threads and processes; barriers make the races happen.
"""

from __future__ import annotations

import threading
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from datetime import date
from typing import Any, NamedTuple

import pytest
from sqlalchemy import func, select, text

from shared.answer import MemoryItem
from shared.errors import ConversationAccessDenied
from shared.memory.store import MemoryStore, MessageIn, TurnRecord, VersionedState
from shared.memory.tables import Conversation
from tests.postgres import run_processes

TODAY = date(2026, 11, 30)
SHARED = "compartida"
"""The conversation every writer of the shared-conversation tests writes to."""
WRITERS = 8
MESSAGES_PER_TURN = 4
WAIT_SECONDS = 60
"""How long a barrier waits for the other writers (a bound for a hung test, never reached)."""


# -- turns and what they leave behind ------------------------------------------------------------------------


def writer_turn(writer: int, number: int) -> TurnRecord:
    """Turn ``number`` of ``writer``: four messages (question, tool call, tool result, answer), one memory,
    and two state keys: the writer's own and ``last``, which every writer overwrites."""
    label = f"w{writer}-t{number}"
    call = {"id": f"call-{label}", "name": "ventas_anuales", "args": {"anio": 2025}}
    return TurnRecord(
        messages=[
            MessageIn(role="user", content=label),
            MessageIn(role="assistant", content="", metadata={"tool_calls": [call]}),
            MessageIn(role="tool", content=f"resultado {label}", metadata={"tool_call_id": call["id"]}),
            MessageIn(role="assistant", content=f"respuesta {label}"),
        ],
        memories=[MemoryItem(contenido=f"hecho {label}", importancia=0.5)],
        state={f"w{writer}": number, "last": label},
    )


class Recorded(NamedTuple):
    """What one ``record_turn`` of a writer returned."""

    writer: int
    number: int
    expected_version: int
    version: int
    stale: bool


def write_turns(store: MemoryStore, writer: int, turns: int, start: Any) -> list[Recorded]:
    """Record ``turns`` turns as a turn does: read the context, then record against its version."""
    recorded: list[Recorded] = []
    for number in range(turns):
        context = store.build_context(SHARED, TODAY)
        if number == 0:
            start.wait(timeout=WAIT_SECONDS)
        state = store.record_turn(
            SHARED, writer_turn(writer, number), user_id="ana", expected_version=context.version
        )
        recorded.append(Recorded(writer, number, context.version, state.version, state.stale))
    return recorded


def assert_shared_conversation_is_consistent(
    store: MemoryStore, recorded: list[Recorded], turns: int
) -> None:
    """The rules of the module docstring, checked on what the writers got back and what the store holds."""
    total = WRITERS * turns
    assert sorted((r.writer, r.number) for r in recorded) == [
        (w, n) for w in range(WRITERS) for n in range(turns)
    ]

    # Versions: each turn got its own, 1..total, in commit order; stale exactly when planned on an older one.
    assert sorted(r.version for r in recorded) == list(range(1, total + 1))
    assert [r for r in recorded if r.stale != (r.expected_version != r.version - 1)] == []
    first_turns = [r for r in recorded if r.number == 0]
    assert [r.expected_version for r in first_turns] == [0] * WRITERS
    assert (
        sum(not r.stale for r in first_turns) == 1
    )  # the first commit; the seven others planned on version 0

    # Messages: blocks of four, each exactly one turn's messages in order, blocks in version order.
    history = store.history(SHARED)
    assert len(history) == total * MESSAGES_PER_TURN
    blocks = [history[i : i + MESSAGES_PER_TURN] for i in range(0, len(history), MESSAGES_PER_TURN)]
    by_version = sorted(recorded, key=lambda r: r.version)
    for block, turn in zip(blocks, by_version, strict=True):
        expected = writer_turn(turn.writer, turn.number).messages
        assert [(m.role, m.content, m.metadata) for m in block] == [
            (m.role, m.content, m.metadata) for m in expected
        ]
    labels = Counter(block[0].content for block in blocks)
    assert [label for label, count in labels.items() if count != 1] == []
    for writer in range(WRITERS):  # a writer's own turns stay in its order
        own = [block[0].content for block in blocks if block[0].content.startswith(f"w{writer}-")]
        assert own == [f"w{writer}-t{n}" for n in range(turns)]
    assert [m.id for m in history] == sorted(m.id for m in history)

    # State: per key, the last writer wins; nothing lost.
    state = store.get_state(SHARED)
    assert state.version == total
    last = by_version[-1]
    assert state == {**{f"w{w}": turns - 1 for w in range(WRITERS)}, "last": f"w{last.writer}-t{last.number}"}
    assert len(store.memories(SHARED)) == total
    with store.engine.connect() as connection:
        assert connection.scalar(select(func.count()).select_from(Conversation)) == 1


# -- processes -----------------------------------------------------------------------------------------------


def _first_turns_process(index: int, url: str, user: str, ids: list[str], start: Any) -> dict[str, str]:
    """Child: record a first turn on each of ``ids`` as ``user``, at the same moment as the other child."""
    with MemoryStore(url) as store:
        start.wait(timeout=WAIT_SECONDS)
        outcome: dict[str, str] = {}
        for cid in ids:
            try:
                store.record_turn(cid, writer_turn(index, 0), user_id=user)
                outcome[cid] = "recorded"
            except ConversationAccessDenied:
                outcome[cid] = "denied"
    return outcome


def _writer_process(index: int, url: str, turns: int, start: Any) -> list[Recorded]:
    """Child: writer ``index`` of the shared conversation, with its own store."""
    with MemoryStore(url) as store:
        return write_turns(store, index, turns, start)


# -- new conversations ---------------------------------------------------------------------------------------

RACED_IDS = [f"nueva-{n}" for n in range(12)]


@pytest.mark.parametrize("users", [("ana", "ana"), ("ana", "bruno")], ids=["one user", "two users"])
def test_processes_racing_to_create_the_same_conversations_make_one_row_each_owned_by_the_first(
    memory_store: MemoryStore, db_url: str, users: tuple[str, str]
) -> None:
    outcomes = run_processes(_first_turns_process, [(db_url, user, RACED_IDS) for user in users])

    for cid in RACED_IDS:
        recorded = [user for user, outcome in zip(users, outcomes, strict=True) if outcome[cid] == "recorded"]
        assert len(recorded) == (2 if users[0] == users[1] else 1), cid  # the other user is refused
        info = memory_store.get_conversation(cid)
        assert info is not None and info.user_id == recorded[0]
        assert len(memory_store.history(cid)) == len(recorded) * MESSAGES_PER_TURN  # a refusal wrote nothing
        assert memory_store.get_state(cid).version == len(recorded)
    with memory_store.engine.connect() as connection:
        assert connection.scalar(select(func.count()).select_from(Conversation)) == len(RACED_IDS)


def test_threads_racing_to_create_one_conversation_make_one_row_without_error(
    memory_store: MemoryStore,
) -> None:
    start = threading.Barrier(WRITERS)

    def first_turn(writer: int) -> None:
        start.wait(timeout=WAIT_SECONDS)
        memory_store.ensure_conversation("hilos", user_id="ana")
        memory_store.record_turn("hilos", writer_turn(writer, 0), user_id="ana")

    with ThreadPoolExecutor(WRITERS) as pool:
        list(pool.map(first_turn, range(WRITERS)))  # re-raises what a thread raised

    assert len(memory_store.history("hilos")) == WRITERS * MESSAGES_PER_TURN
    assert memory_store.get_state("hilos").version == WRITERS


# -- one conversation, eight writers -------------------------------------------------------------------------


@pytest.mark.parametrize("writers", ["threads", "processes"])
def test_eight_writers_sharing_one_conversation_lose_duplicate_and_interleave_nothing(
    memory_store: MemoryStore, db_url: str, writers: str
) -> None:
    turns = 3
    if writers == "threads":  # the threads share one store
        start = threading.Barrier(WRITERS)
        with ThreadPoolExecutor(WRITERS) as pool:
            outcomes = list(
                pool.map(lambda writer: write_turns(memory_store, writer, turns, start), range(WRITERS))
            )
    else:
        outcomes = run_processes(_writer_process, [(db_url, turns)] * WRITERS)

    assert_shared_conversation_is_consistent(
        memory_store, [r for outcome in outcomes for r in outcome], turns
    )


# -- versions, one writer at a time --------------------------------------------------------------------------


def test_every_write_bumps_the_version_and_a_turn_on_an_older_version_is_recorded_but_stale(
    memory_store: MemoryStore,
) -> None:
    assert memory_store.get_state("c1").version == 0  # unknown: never written
    context = memory_store.build_context("c1", TODAY)
    assert context.version == 0

    first = memory_store.record_turn("c1", writer_turn(0, 0), expected_version=context.version)
    assert (first.version, first.stale) == (1, False)
    second = memory_store.record_turn("c1", writer_turn(1, 0), expected_version=context.version)
    assert (second.version, second.stale) == (2, True)  # planned on version 0, written over version 1
    # Recorded all the same, merged per key: the stale turn does not hide the first writer's key.
    assert second == {"w0": 0, "w1": 0, "last": "w1-t0"}

    merged = memory_store.merge_state("c1", {"tema": "ventas"})
    assert merged.version == 3
    unchecked = memory_store.record_turn("c1", writer_turn(0, 1))  # no expected version: never stale
    assert (unchecked.version, unchecked.stale) == (4, False)
    assert memory_store.build_context("c1", TODAY).version == memory_store.get_state("c1").version == 4


def test_the_version_is_for_the_erp_and_never_reaches_a_model(memory_store: MemoryStore) -> None:
    memory_store.record_turn("c1", writer_turn(0, 0))
    context = memory_store.build_context("c1", TODAY)

    assert context.version == 1
    assert "version" not in context.model_dump()
    assert "version" not in context.model_dump_json()


def test_a_versioned_state_is_a_plain_dict_to_code_that_wants_only_the_state() -> None:
    state = VersionedState({"tema": "ventas"}, version=3, stale=True)

    assert state == {"tema": "ventas"} and isinstance(state, dict)
    assert type(dict(state)) is dict and dict(state) == {"tema": "ventas"}
    assert repr(state) == "VersionedState({'tema': 'ventas'}, version=3, stale=True)"
    assert VersionedState().version == 0 and not VersionedState().stale


def test_a_database_made_before_versions_keeps_opening_and_starts_counting_at_zero(db_url: str) -> None:
    with MemoryStore(db_url) as store:
        store.record_turn("vieja", writer_turn(0, 0), user_id="ana")
        with store.engine.begin() as connection:  # the previous schema had no version column
            connection.execute(text("ALTER TABLE conversation_state DROP COLUMN version"))

    with MemoryStore(db_url) as store:
        assert store.get_state("vieja") == {"w0": 0, "last": "w0-t0"}
        assert store.get_state("vieja").version == 0
        assert store.record_turn("vieja", writer_turn(0, 1), user_id="ana", expected_version=0).version == 1
        assert [m.content for m in store.history("vieja")][::MESSAGES_PER_TURN] == ["w0-t0", "w0-t1"]
