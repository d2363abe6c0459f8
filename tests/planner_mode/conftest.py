"""Fixtures of the planner tests; the fakes themselves live in ``planner_fakes.py``.

Every test here that takes ``erp`` (the seeded demo ERP) or ``memory_store`` runs once with both on SQLite and
once with both on a real PostgreSQL (:mod:`tests.postgres`, one session-wide ``backend`` parameter), so the
engine cannot come to depend on one dialect; a test that needs several fresh stores takes ``fresh_db_url``.
The PostgreSQL variants cost about 1.7 times their SQLite twins, so the default-suite equivalence of the
entry points runs on SQLite alone (``SQLITE_ONLY``; ``tests/benchmarks/test_default_suite.py`` covers both
backends).
The toy registry's tests keep an in-memory SQLite ``toy_erp``: the toy handlers never touch the database.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from shared.erp.database import Erp, make_engine
from shared.operations.registry import OperationRegistry, OperationSpec
from shared.security import DEMO_CALLER
from tests.engine_backends import backend, erp, fresh_db_url, memory_store  # noqa: F401  (fixtures)
from tests.planner_mode.planner_fakes import Toy


@pytest.fixture
def toy() -> Toy:
    """Handlers of the toy registry, with their call log."""
    return Toy()


@pytest.fixture
def toy_registry(toy: Toy) -> OperationRegistry:
    """``ventas_anuales``, ``mejor_cliente`` and ``compras_cliente`` with fixed results."""
    return toy.registry()


@pytest.fixture
def toy_erp() -> Iterator[Erp]:
    """An empty in-memory ERP: the toy handlers never touch the database."""
    engine = make_engine("sqlite://")
    yield Erp(engine)
    engine.dispose()


@pytest.fixture
def toy_catalog(toy_registry: OperationRegistry) -> list[OperationSpec]:
    """What the demo caller may run of the toy registry: all three operations."""
    return toy_registry.catalog(DEMO_CALLER)
