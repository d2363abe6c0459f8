"""Fixtures of the planner tests; the fakes themselves live in ``planner_fakes.py``."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from shared.erp.database import Erp, make_engine
from shared.operations.registry import OperationRegistry
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
