"""The load test's audit: each kind of damage to a conversation's memory counts, a clean run counts none."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import insert, update

from benchmarks.loadtest_audit import TurnOutcome, audit_memory
from shared.memory.store import MemoryStore, MessageIn, TurnRecord
from shared.memory.tables import ConversationState, Message, utc_now

QUESTIONS = ("uno?", "dos?", "tres?")


@pytest.fixture
def store(tmp_path: Path) -> Iterator[MemoryStore]:
    with MemoryStore(f"sqlite:///{tmp_path / 'memory.sqlite3'}") as opened:
        yield opened


def record(store: MemoryStore, conversation: str, question: str, state: dict[str, Any]) -> dict[str, Any]:
    turn = TurnRecord(
        messages=[MessageIn(role="user", content=question), MessageIn(role="assistant", content="ok")],
        state=state,
    )
    return dict(store.record_turn(conversation, turn, user_id="gerente"))


def outcome(
    conversation: str, index: int, *, recorded: bool = True, state: dict[str, Any] | None = None, **extra: Any
) -> TurnOutcome:
    return TurnOutcome(
        conversation_id=conversation,
        index=index,
        question=QUESTIONS[index],
        recorded=recorded,
        state=state or {},
        **extra,
    )


def add_message(store: MemoryStore, conversation: str, role: str, content: str) -> None:
    with store.engine.begin() as connection:
        connection.execute(
            insert(Message).values(
                conversation_id=conversation, role=role, content=content, meta={}, created_at=utc_now()
            )
        )


def test_a_clean_run_counts_no_damage(store: MemoryStore) -> None:
    outcomes = []
    for index in range(3):
        state = record(store, "c1", QUESTIONS[index], {"paso": index})
        outcomes.append(outcome("c1", index, state=state))
    audit = audit_memory(store.engine, outcomes)
    assert audit.clean
    assert (audit.attempted, audit.recorded, audit.messages_expected, audit.messages_found) == (3, 3, 6, 6)
    assert audit.model_dump(include={"lost", "duplicated", "out_of_order", "half_recorded", "phantom"}) == {
        "lost": 0,
        "duplicated": 0,
        "out_of_order": 0,
        "half_recorded": 0,
        "phantom": 0,
    }


def test_failed_turns_are_counted_by_kind_and_a_failed_first_turn_leaves_nothing(store: MemoryStore) -> None:
    state = record(store, "c1", QUESTIONS[1], {"a": 1})
    outcomes = [
        outcome("c1", 0, recorded=False, failure="provider"),
        outcome("c1", 1, state=state),
        outcome("c2", 0, recorded=False, failure="provider"),
        outcome("c2", 1, recorded=False, failure="timeout", stale_state=True),
    ]
    audit = audit_memory(store.engine, outcomes)
    assert audit.clean
    assert audit.failed_by_kind == {"provider": 2, "timeout": 1}
    assert (audit.failed, audit.recorded, audit.stale_turns) == (3, 1, 1)


def lost(store: MemoryStore) -> list[TurnOutcome]:
    state = record(store, "c1", QUESTIONS[0], {})
    return [outcome("c1", 0, state=state), outcome("c1", 1, state=state)]  # turn 1 was never stored


def duplicated(store: MemoryStore) -> list[TurnOutcome]:
    record(store, "c1", QUESTIONS[0], {})
    return [outcome("c1", 0, state=record(store, "c1", QUESTIONS[0], {}))]


def half_recorded(store: MemoryStore) -> list[TurnOutcome]:
    state = record(store, "c1", QUESTIONS[0], {})
    add_message(store, "c1", "user", QUESTIONS[1])  # a question without its answer
    return [outcome("c1", 0, state=state), outcome("c1", 1, recorded=False, failure="provider")]


def phantom(store: MemoryStore) -> list[TurnOutcome]:
    state = record(store, "c1", QUESTIONS[0], {})
    record(store, "c1", QUESTIONS[1], {})  # stored, although reported failed
    return [outcome("c1", 0, state=state), outcome("c1", 1, recorded=False, failure="provider")]


def out_of_order(store: MemoryStore) -> list[TurnOutcome]:
    record(store, "c1", QUESTIONS[1], {})
    state = record(store, "c1", QUESTIONS[0], {})
    return [outcome("c1", 0, state=state), outcome("c1", 1, state=state)]


@pytest.mark.parametrize(
    ("damage", "count"), [(lost, 2), (duplicated, 1), (half_recorded, 1), (phantom, 1), (out_of_order, 1)]
)
def test_each_kind_of_damage_is_counted_alone_and_fails_the_audit(
    damage: Callable[[MemoryStore], list[TurnOutcome]], count: int, store: MemoryStore
) -> None:
    audit = audit_memory(store.engine, damage(store))

    kinds = ("lost", "duplicated", "half_recorded", "phantom", "out_of_order")
    assert audit.model_dump(include=set(kinds)) == {
        kind: count if kind == damage.__name__ else 0 for kind in kinds
    }
    assert not audit.clean


@pytest.mark.parametrize("damage", ["version", "state"])
def test_a_state_row_that_disagrees_with_the_turns_is_inconsistent(store: MemoryStore, damage: str) -> None:
    state = record(store, "c1", QUESTIONS[0], {"cliente": "ABC"})
    change = {"version": 7} if damage == "version" else {"state": {"cliente": "otro"}}
    with store.engine.begin() as connection:
        connection.execute(update(ConversationState).values(**change))
    audit = audit_memory(store.engine, [outcome("c1", 0, state=state)])
    assert audit.inconsistent_conversations == 1
    assert not audit.clean


def test_rows_of_a_conversation_whose_every_turn_failed_are_inconsistent(store: MemoryStore) -> None:
    store.ensure_conversation("c1", "gerente")
    audit = audit_memory(store.engine, [outcome("c1", 0, recorded=False, failure="provider")])
    assert audit.inconsistent_conversations == 1
