"""Specification of ``shared/memory/tables.py``: schema, constraints, and indexes that keep context cheap."""

from __future__ import annotations

from datetime import date
from typing import Any

import pytest
from sqlalchemy import insert, inspect
from sqlalchemy.exc import IntegrityError

from shared.memory.store import MemoryStore, MessageIn, TurnRecord
from shared.memory.tables import MemoryRecord, Message
from tests.shared.memory.conftest import statements_run


def test_message_metadata_is_stored_in_a_column_named_metadata(memory_store: MemoryStore) -> None:
    columns = {column["name"] for column in inspect(memory_store.engine).get_columns("messages")}
    assert columns == {"id", "conversation_id", "role", "content", "created_at", "metadata"}


def test_core_inserts_name_the_metadata_column_meta_like_the_orm_attribute(memory_store: MemoryStore) -> None:
    # Bulk inserts pass plain dicts; a key the table does not know would be dropped without a word.
    cid = memory_store.create_conversation()
    with memory_store.engine.begin() as connection:
        connection.execute(
            insert(Message),
            [{"conversation_id": cid, "role": "assistant", "content": "", "meta": {"tool_calls": [1]}}],
        )

    assert memory_store.history(cid)[0].metadata == {"tool_calls": [1]}


REFUSED_ROWS = {
    "a message with an unknown role": (Message, {"role": "robot", "content": "x", "meta": {}}),
    "a message of a missing conversation": (
        Message,
        {"conversation_id": "nope", "role": "user", "content": "x", "meta": {}},
    ),
    "a memory importance below 0": (MemoryRecord, {"content": "x", "content_key": "k", "importance": -0.1}),
    "a memory importance above 1": (MemoryRecord, {"content": "x", "content_key": "k", "importance": 1.5}),
}


@pytest.mark.parametrize(("table", "values"), REFUSED_ROWS.values(), ids=REFUSED_ROWS.keys())
def test_the_database_refuses(memory_store: MemoryStore, table: Any, values: dict[str, Any]) -> None:
    cid = memory_store.create_conversation()
    with pytest.raises(IntegrityError), memory_store.engine.begin() as connection:
        connection.execute(insert(table).values({"conversation_id": cid} | values))


def test_build_context_queries_search_indexes_without_scans_or_sorts(memory_store: MemoryStore) -> None:
    cid = memory_store.create_conversation()
    memory_store.record_turn(cid, TurnRecord(messages=[MessageIn(role="user", content="hola")]))
    with statements_run(memory_store.engine) as captured:
        memory_store.build_context(cid, date(2026, 11, 30))

    assert len(captured) == 3
    if memory_store.engine.dialect.name == "sqlite":
        plans = _sqlite_plans(memory_store, captured)
        for plan in plans:
            assert plan.startswith("SEARCH"), plan
            assert "SCAN" not in plan and "TEMP B-TREE" not in plan, plan
    else:
        plans = _postgres_plans(memory_store, captured)
        for plan in plans:
            assert "Index" in plan, plan
            assert "Seq Scan" not in plan and "Sort" not in plan, plan
    assert any("ix_messages_conversation_order" in plan for plan in plans)
    assert any("ix_memory_items_rank" in plan for plan in plans)


def _sqlite_plans(store: MemoryStore, captured: list[tuple[str, Any]]) -> list[str]:
    with store.engine.connect() as connection:
        return [
            " | ".join(
                str(row[-1]) for row in connection.exec_driver_sql(f"EXPLAIN QUERY PLAN {sql}", params)
            )
            for sql, params in captured
        ]


def _postgres_plans(store: MemoryStore, captured: list[tuple[str, Any]]) -> list[str]:
    """Plans with sequential scans priced out: on tables this small PostgreSQL would rightly prefer them,
    so this pins that an index serves each query in its order, not the planner's choice at this size."""
    with store.engine.connect() as connection:
        connection.exec_driver_sql("SET enable_seqscan = off")
        return [
            " | ".join(str(row[0]) for row in connection.exec_driver_sql(f"EXPLAIN {sql}", params))
            for sql, params in captured
        ]
