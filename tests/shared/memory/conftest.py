"""Every memory store test runs on each backend: SQLite and a real PostgreSQL (see :mod:`tests.postgres`)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from sqlalchemy import Engine, event

from shared.answer import MemoryItem
from shared.memory.store import MemoryStore, MessageIn, TurnRecord


@pytest.fixture
def memory_store(db_url: str) -> Iterator[MemoryStore]:
    """A fresh conversation memory store, once on a SQLite file and once on a PostgreSQL database."""
    store = MemoryStore(db_url)
    yield store
    store.close()


@contextmanager
def statements_run(engine: Engine) -> Iterator[list[tuple[str, Any]]]:
    """The SQL statements (and their parameters) ``engine`` runs inside the block, in order."""
    run: list[tuple[str, Any]] = []

    def record(_conn: Any, _cursor: Any, statement: str, parameters: Any, *_rest: Any) -> None:
        run.append((statement, parameters))

    event.listen(engine, "before_cursor_execute", record)
    try:
        yield run
    finally:
        event.remove(engine, "before_cursor_execute", record)


def turn(
    user: str,
    assistant: str,
    *,
    memories: list[tuple[str, float]] | None = None,
    state: dict[str, Any] | None = None,
    tool_steps: int = 0,
) -> TurnRecord:
    """A turn: the user message, ``tool_steps`` tool-calling round trips, then the final answer."""
    messages = [MessageIn(role="user", content=user)]
    for step in range(tool_steps):
        call = {"id": f"call{step}", "name": "ventas_anuales", "args": {"anio": 2025}}
        messages.append(MessageIn(role="assistant", content="", metadata={"tool_calls": [call]}))
        messages.append(
            MessageIn(role="tool", content='{"total": 1}', metadata={"tool_call_id": f"call{step}"})
        )
    messages.append(MessageIn(role="assistant", content=assistant))
    return TurnRecord(
        messages=messages,
        memories=[MemoryItem(contenido=c, importancia=i) for c, i in (memories or [])],
        state=state or {},
    )
