"""Many processes opening one fresh database at once: all succeed, and the demo data is seeded exactly once.

Each process is a fresh process (``forkserver``: forked from a clean, single-threaded server that has already
imported the project, so twelve start in well under a second; ``spawn`` where there is no forkserver), waits
at a barrier, then opens the ERP and the memory store on the same SQLite file. Half of them open the memory
store first, so table creation races with seeding too.
"""

from __future__ import annotations

import multiprocessing
import traceback
from pathlib import Path
from typing import Any

from sqlalchemy import func, inspect, select

from shared.erp.database import open_demo_erp
from shared.erp.models import Customer, ErpSetting, Invoice, InvoiceLine, Product
from shared.erp.seed import generate_rows
from shared.memory.store import open_memory_store
from shared.memory.tables import MemoryBase

PROCESSES = 12


def _open_both(url: str, memory_first: bool, barrier: Any, results: Any) -> None:
    """Child process: open the ERP and the memory store at the same moment as the others."""
    try:
        barrier.wait(timeout=60)
        if memory_first:
            open_memory_store(url).close()
            open_demo_erp(url).engine.dispose()
        else:
            open_demo_erp(url).engine.dispose()
            open_memory_store(url).close()
        results.put("ok")
    except BaseException:
        results.put(traceback.format_exc())


def test_twelve_processes_open_one_fresh_database_at_once(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'fresh.sqlite3'}"
    if "forkserver" in multiprocessing.get_all_start_methods():
        context: Any = multiprocessing.get_context("forkserver")
        context.set_forkserver_preload([__name__])
    else:  # pragma: no cover - Windows
        context = multiprocessing.get_context("spawn")
    barrier = context.Barrier(PROCESSES)
    results = context.Queue()
    processes = [
        context.Process(target=_open_both, args=(url, n % 2 == 0, barrier, results)) for n in range(PROCESSES)
    ]
    for process in processes:
        process.start()
    outcomes = [results.get(timeout=110) for _ in processes]
    for process in processes:
        process.join(timeout=30)

    assert [outcome for outcome in outcomes if outcome != "ok"] == []
    assert all(process.exitcode == 0 for process in processes)

    expected = {model: len(rows) for model, rows in generate_rows().items()}
    erp = open_demo_erp(url)
    try:
        with erp.session() as session:
            for model in (Customer, Product, Invoice, InvoiceLine, ErpSetting):
                assert session.scalar(select(func.count()).select_from(model)) == expected[model], model
        assert set(MemoryBase.metadata.tables) <= set(inspect(erp.engine).get_table_names())
    finally:
        erp.engine.dispose()
