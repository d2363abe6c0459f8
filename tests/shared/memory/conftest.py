"""Every memory store test runs on each backend: SQLite and a real PostgreSQL (see :mod:`tests.postgres`)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from shared.memory.store import MemoryStore
from tests.postgres import db_url, postgres_server, postgres_url

__all__ = ["db_url", "memory_store", "postgres_server", "postgres_url"]


@pytest.fixture
def memory_store(db_url: str) -> Iterator[MemoryStore]:
    """A fresh conversation memory store, once on a SQLite file and once on a PostgreSQL database."""
    store = MemoryStore(db_url)
    yield store
    store.close()
