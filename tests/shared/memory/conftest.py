"""Every memory store test runs on each backend: SQLite and a real PostgreSQL (see :mod:`tests.postgres`)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from sqlalchemy import Engine, event

from shared.memory.store import MemoryStore
from tests.postgres import db_url, postgres_server, postgres_url

__all__ = ["db_url", "memory_store", "postgres_server", "postgres_url", "statements_run"]


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
