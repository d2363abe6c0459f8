"""Fixtures for tool-calling tests: the backends, a toy ERP handle, and an engine builder.

Every test here that takes ``erp`` or ``memory_store`` (and so every ``make_engine`` test) runs once with
both on SQLite and once with both on a real PostgreSQL (:mod:`tests.postgres`), driven by one session-wide
``backend`` parameter, so the engine cannot come to depend on one dialect; the default-suite equivalence of
``aask`` and ``astream`` runs on SQLite alone (``SQLITE_ONLY``). A test that needs several fresh stores takes
``fresh_db_url``. The toy registry's ERP stays an in-memory SQLite handle: the toy operations
never query it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
from sqlalchemy import create_engine

from shared.erp.database import DEMO_TODAY, Erp
from shared.errors import ProviderError
from tests.engine_backends import backend, erp, fresh_db_url, memory_store  # noqa: F401  (fixtures)
from tests.fakes import FunctionChatModel, ModelFunction, StreamingChatModel
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
    """Build ``(ToolCallingEngine, model)`` over the toy registry (or ``registry``) from a model function;
    ``streaming=True`` (or ``break_after=n``) makes it a word-by-word :class:`StreamingChatModel`."""
    from toolcalling_mode import ToolCallingEngine

    def build(
        fn: ModelFunction,
        *,
        streaming: bool = False,
        break_after: int | None = None,
        registry: Any = None,
        **options: Any,
    ) -> tuple[Any, FunctionChatModel]:
        if streaming or break_after is not None:
            model: FunctionChatModel = StreamingChatModel(fn, break_after=break_after, failure=ProviderError)
        else:
            model = FunctionChatModel(fn)
        engine = ToolCallingEngine(registry or toy_registry(), toy_erp, memory_store, model, **options)
        return engine, model

    return build


@pytest.fixture
def demo_engine(registry: Any, erp: Erp, memory_store: Any) -> Callable[..., Any]:  # noqa: F811
    """``demo_engine(model, **options)``: a ``ToolCallingEngine`` over the demo ERP and the test's store."""
    from toolcalling_mode import ToolCallingEngine

    return lambda model, **options: ToolCallingEngine(registry, erp, memory_store, model, **options)
