"""Fixtures for tool-calling tests: a toy ERP handle, the toy registry, and an engine builder."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
from sqlalchemy import create_engine

from shared.erp.database import DEMO_TODAY, Erp
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
def make_engine(toy_erp: Erp, memory_store: Any) -> Callable[..., tuple[Any, FunctionChatModel]]:
    """Build ``(ToolCallingEngine, FunctionChatModel)`` over the toy registry from a model function."""
    from toolcalling_mode import ToolCallingEngine

    def build(fn: ModelFunction, **options: Any) -> tuple[Any, FunctionChatModel]:
        model = FunctionChatModel(fn)
        engine = ToolCallingEngine(toy_registry(), toy_erp, memory_store, model, **options)
        return engine, model

    return build
