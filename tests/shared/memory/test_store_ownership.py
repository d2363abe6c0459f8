"""Conversations belong to the user who started them (shared/memory/store.py)."""

from __future__ import annotations

import pytest

from shared.errors import ConversationAccessDenied
from shared.memory.store import MemoryStore, MessageIn, TurnRecord


def turn(text: str) -> TurnRecord:
    return TurnRecord(
        messages=[
            MessageIn(role="user", content=text, metadata={}),
            MessageIn(role="assistant", content="ok", metadata={}),
        ],
        memories=[],
        state={"tema": text},
    )


def test_the_first_turn_makes_its_user_the_owner(memory_store: MemoryStore) -> None:
    memory_store.record_turn("c1", turn("hola"), user_id="ana")

    info = memory_store.get_conversation("c1")
    assert info is not None and info.user_id == "ana"
    memory_store.check_access("c1", "ana")  # the owner passes


def test_another_user_is_refused_before_reading_and_cannot_write(memory_store: MemoryStore) -> None:
    memory_store.record_turn("c1", turn("hola"), user_id="ana")

    with pytest.raises(ConversationAccessDenied) as denied:
        memory_store.check_access("c1", "bruno")
    assert denied.value.conversation_id == "c1"
    with pytest.raises(ConversationAccessDenied):
        memory_store.record_turn("c1", turn("intruso"), user_id="bruno")
    assert [m.content for m in memory_store.history("c1")] == ["hola", "ok"]
    assert memory_store.get_state("c1") == {"tema": "hola"}


def test_an_unknown_conversation_is_open_and_an_ownerless_one_is_nobodys(memory_store: MemoryStore) -> None:
    memory_store.check_access("nueva", "bruno")  # the turn will create it for bruno
    memory_store.record_turn("legacy", turn("Empresa ABC compró 120.000.000"))  # no owner, as before users

    for user in ("bruno", "gerente"):  # its context could hold anyone's data
        with pytest.raises(ConversationAccessDenied):
            memory_store.check_access("legacy", user)
        with pytest.raises(ConversationAccessDenied):
            memory_store.record_turn("legacy", turn("sigue"), user_id=user)
    assert len(memory_store.history("legacy")) == 2
