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

from collections.abc import Callable, Iterator
from typing import Any

import pytest
from sqlalchemy import create_engine

from shared.erp.database import DEMO_TODAY, Erp
from tests.engine_backends import backend, erp, fresh_db_url, memory_store  # noqa: F401  (fixtures)
from tests.fakes import FunctionChatModel, ModelFunction
from tests.toolcalling_mode.toolcalling_fakes import toy_registry


@pytest.fixture
def toy_erp() -> Iterator[Erp]:
    """An ERP handle over an empty in-memory database (the toy operations never query it), fixed at the
    demo's date so prompts are reproducible."""
    engine = create_engine("sqlite://")
    yield Erp(engine, today=DEMO_TODAY)
    engine.dispose()


@pytest.fixture
def make_engine(toy_erp: Erp, memory_store: Any) -> Callable[..., tuple[Any, FunctionChatModel]]:  # noqa: F811
    """Build ``(ToolCallingEngine, FunctionChatModel)`` over the toy registry from a model function."""
    from toolcalling_mode import ToolCallingEngine

    def build(fn: ModelFunction, **options: Any) -> tuple[Any, FunctionChatModel]:
        model = FunctionChatModel(fn)
        engine = ToolCallingEngine(toy_registry(), toy_erp, memory_store, model, **options)
        return engine, model

    return build
