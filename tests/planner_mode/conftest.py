"""Fixtures of the planner tests; the fakes themselves live in ``planner_fakes.py``.

Every test here that takes ``erp`` (the seeded demo ERP) or ``memory_store`` runs twice: once with both on
SQLite and once with both on a real PostgreSQL (:mod:`tests.postgres`), so the engine cannot come to depend on
one dialect. One session-wide ``backend`` parameter drives both, so a test runs once per backend (never on a
SQLite ERP with a PostgreSQL store). The whole directory is covered, not a subset: the doubled tests are the
engine tests (``test_engine*.py``, including the default suite through ``ask``/``aask``/``astream``) and the
few end-to-end tests over HTTP and of the state. A test that needs several fresh stores (one per entry point)
takes ``fresh_db_url``.

Cost. A PostgreSQL variant costs about 1.7 times its SQLite twin in CPU time (client and server), mostly
for its fresh PostgreSQL store (about 0.1 s against 0.01 s for a SQLite file). Measured on 2 shared cores,
the PostgreSQL variants of this directory, of ``tests/toolcalling_mode`` and of the default-suite facts add
about 70 s of CPU time to a suite of about 330 s, well inside the CI budget (8 minutes on 2 cores), so no
test was cut down to a subset. Were one needed, the default-suite equivalence tests are the ones to cut
(about half of that time; the ERP operations their turns expect are evaluated on both backends by
``tests/benchmarks/test_default_suite.py`` anyway).

The toy registry's tests keep an in-memory SQLite ``toy_erp``: the toy handlers never touch the database.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from shared.erp.database import Erp, make_engine, open_demo_erp
from shared.memory.store import MemoryStore
from shared.operations.registry import OperationRegistry
from tests.planner_mode.planner_fakes import Toy, toy_operations
from tests.postgres import BACKENDS, demo_erp_url, fresh_url


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


@pytest.fixture
def toy() -> Toy:
    """Handlers of the toy registry, with their call log."""
    return Toy()


@pytest.fixture
def toy_registry(toy: Toy) -> OperationRegistry:
    """``ventas_anuales``, ``mejor_cliente`` and ``compras_cliente`` with fixed results."""
    return OperationRegistry(toy_operations(toy))


@pytest.fixture
def toy_erp() -> Iterator[Erp]:
    """An empty in-memory ERP: the toy handlers never touch the database."""
    engine = make_engine("sqlite://")
    yield Erp(engine)
    engine.dispose()
