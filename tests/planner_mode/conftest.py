"""Fixtures of the planner tests; the fakes themselves live in ``planner_fakes.py``.

This directory is put on ``sys.path`` so that the tests can ``import planner_fakes`` / ``server_threads``
whatever pytest's import mode (prepend, importlib, or test packages with ``__init__.py``).
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from planner_fakes import Toy, toy_operations

from shared.erp.database import Erp, make_engine
from shared.operations.registry import OperationRegistry


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
