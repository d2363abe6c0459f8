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

from collections.abc import Iterator

import pytest

from shared.erp.database import Erp, make_engine
from shared.operations.registry import OperationRegistry
from tests.engine_backends import backend, erp, fresh_db_url, memory_store  # noqa: F401  (fixtures)
from tests.planner_mode.planner_fakes import Toy, toy_operations


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
