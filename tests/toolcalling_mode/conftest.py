"""Fixtures for tool-calling tests: the backends, a toy ERP handle, the toy registry, and an engine builder.

Every test here that takes ``erp`` (the seeded demo ERP) or ``memory_store`` (and so every ``make_engine``
test) runs twice: once with both on SQLite and once with both on a real PostgreSQL (:mod:`tests.postgres`),
so the engine cannot come to depend on one dialect. One session-wide ``backend`` parameter drives both, so a
test runs once per backend (never on a SQLite ERP with a PostgreSQL store). The whole directory is covered,
not a subset: the doubled tests are the engine tests (toy registry and offline model, the default suite
through ``ask``/``aask``/``astream`` in ``test_drivers_on_the_suite.py``) and the Ollama emulator's turns. A
test that needs several fresh stores (one per driver) takes ``fresh_db_url``.

Cost. A PostgreSQL variant costs about 1.7 times its SQLite twin in CPU time (client and server), mostly
for its fresh PostgreSQL store (about 0.1 s against 0.01 s for a SQLite file). Measured on 2 shared cores,
the PostgreSQL variants of this directory, of ``tests/planner_mode`` and of the default-suite facts add
about 70 s of CPU time to a suite of about 330 s, well inside the CI budget (8 minutes on 2 cores), so no
test was cut down to a subset. Were one needed, the default-suite equivalence tests are the ones to cut
(about half of that time; the ERP operations their turns expect are evaluated on both backends by
``tests/benchmarks/test_default_suite.py`` anyway).

The toy registry's ERP stays an in-memory SQLite handle: the toy operations never query it.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import create_engine

from shared.erp.database import DEMO_TODAY, Erp, open_demo_erp
from shared.memory.store import MemoryStore
from tests.fakes import FunctionChatModel, ModelFunction
from tests.postgres import BACKENDS, demo_erp_url, fresh_url
from tests.toolcalling_mode.toolcalling_fakes import toy_registry


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
def toy_erp() -> Iterator[Erp]:
    """An ERP handle over an empty in-memory database (the toy operations never query it), fixed at the
    demo's date so prompts are reproducible."""
    engine = create_engine("sqlite://")
    yield Erp(engine, today=DEMO_TODAY)
    engine.dispose()


@pytest.fixture
def make_engine(toy_erp: Erp, memory_store: Any) -> Callable[..., tuple[Any, FunctionChatModel]]:
    """Build ``(ToolCallingEngine, FunctionChatModel)`` over the toy registry from a model function."""
    from toolcalling_mode import ToolCallingEngine

    def build(fn: ModelFunction, **options: Any) -> tuple[Any, FunctionChatModel]:
        model = FunctionChatModel(fn)
        engine = ToolCallingEngine(toy_registry(), toy_erp, memory_store, model, **options)
        return engine, model

    return build
