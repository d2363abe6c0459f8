"""Engine fixtures on both database backends, shared by the planner and tool-calling test directories.

Their conftests import these fixtures, so every engine test that takes ``erp`` (the seeded demo ERP) or
``memory_store`` runs once on SQLite and once on a real PostgreSQL (:mod:`tests.postgres`). One
session-wide ``backend`` parameter drives both, so a test never mixes a SQLite ERP with a PostgreSQL store.
The directories' conftests say what the PostgreSQL variants cost.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from shared.erp.database import Erp, open_demo_erp
from shared.memory.store import MemoryStore
from tests.postgres import BACKENDS, demo_erp_url, fresh_url

__all__ = ["backend", "erp", "fresh_db_url", "memory_store"]


@pytest.fixture(scope="session", params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    """The database backend of a test's demo ERP and memory store: ``sqlite``, then ``postgresql`` (whose
    server is started here, so a missing PostgreSQL skips, or in CI fails, the test at setup)."""
    backend: str = request.param
    if backend == "postgresql":
        request.getfixturevalue("postgres_server")
    return backend


@pytest.fixture(scope="session")
def erp(request: pytest.FixtureRequest, backend: str) -> Iterator[Erp]:
    """The seeded demo ERP (read-only) on the test's backend: overrides the root ``erp``."""
    handle = open_demo_erp(demo_erp_url(request, backend))
    yield handle
    handle.engine.dispose()


@pytest.fixture
def fresh_db_url(request: pytest.FixtureRequest, backend: str, tmp_path: Path) -> Callable[[], str]:
    """A maker of fresh, empty databases on the test's backend, as many as the test asks for."""
    numbers = itertools.count(1)

    def make() -> str:
        directory = tmp_path / f"db{next(numbers)}"
        directory.mkdir()
        return fresh_url(request, backend, directory)

    return make


@pytest.fixture
def memory_store(fresh_db_url: Callable[[], str]) -> Iterator[MemoryStore]:
    """A fresh conversation memory store on the test's backend: overrides the root ``memory_store``."""
    store = MemoryStore(fresh_db_url())
    yield store
    store.close()
