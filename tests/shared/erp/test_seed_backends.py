"""Processes opening one empty database at once (SQLite and PostgreSQL): the demo is seeded exactly once."""

from __future__ import annotations

from typing import Any

from sqlalchemy import func, inspect, select

from shared.erp.database import open_demo_erp
from shared.erp.models import Customer, ErpSetting, ErpUser, Invoice, InvoiceLine, Product
from shared.erp.seed import generate_rows, seed_erp
from shared.erp.storage import make_engine
from shared.memory.store import MemoryStore, open_memory_store
from shared.memory.tables import MemoryBase
from tests.postgres import run_processes

PROCESSES = 8


def _open_fresh(index: int, url: str, start: Any) -> bool:
    """Child: seed the demo and open the memory store, in an order that depends on ``index``, then open both
    as an application does; return whether this process seeded."""
    engine = make_engine(url)
    try:
        start.wait(timeout=60)
        if index % 2:
            open_memory_store(url).close()
            seeded = seed_erp(engine)
        else:
            seeded = seed_erp(engine)
            MemoryStore(engine).close()
        open_demo_erp(url).engine.dispose()
        return seeded
    finally:
        engine.dispose()


def test_processes_opening_one_empty_database_at_once_seed_it_exactly_once(db_url: str) -> None:
    seeded = run_processes(_open_fresh, [(db_url,)] * PROCESSES)

    assert sorted(seeded) == [False] * (PROCESSES - 1) + [True]
    expected = {model: len(rows) for model, rows in generate_rows().items()}
    erp = open_demo_erp(db_url)
    try:
        with erp.session() as session:
            for model in (ErpUser, Customer, Product, Invoice, InvoiceLine, ErpSetting):
                assert session.scalar(select(func.count()).select_from(model)) == expected[model], model
        assert set(MemoryBase.metadata.tables) <= set(inspect(erp.engine).get_table_names())
    finally:
        erp.engine.dispose()
