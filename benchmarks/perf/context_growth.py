"""Show that ``MemoryStore.build_context`` costs the same at 10, 1,000 and 10,000 stored messages.

``python -m benchmarks.perf.context_growth [--repeats N] [--sizes 10 1000 10000]`` fills one conversation of
a fresh SQLite memory with tool-calling turns, a memory item per turn and a state, then times
``build_context`` and counts its SQL statements. Flat milliseconds and a constant query count are the point.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table
from sqlalchemy import event, insert

from shared.memory.store import MemoryStore
from shared.memory.tables import MemoryRecord, Message

SIZES = (10, 1_000, 10_000)
TODAY = date(2026, 11, 30)
_TURN_SHAPE = 4
"""Messages per stored turn: question, tool call, tool result, answer."""


@dataclass(frozen=True)
class GrowthRow:
    """The cost of one ``build_context`` at one history length."""

    messages: int
    ms_per_call: float
    """Mean wall time of ``build_context``."""
    queries_per_call: float


def populate(store: MemoryStore, conversation_id: str, messages: int) -> None:
    """Bulk-insert ``messages`` messages of tool-calling turns, one memory per turn, and a state."""
    rows: list[dict[str, Any]] = []
    memories: list[dict[str, Any]] = []
    for i in range(messages):
        turn, step = divmod(i, _TURN_SHAPE)
        if step == 0:
            rows.append({"role": "user", "content": f"¿Cuánto vendimos en {2023 + turn % 4}?", "meta": {}})
        elif step == 1:
            call = {"id": f"c{turn}", "name": "ventas_anuales", "args": {"anio": 2023 + turn % 4}}
            rows.append({"role": "assistant", "content": "", "meta": {"tool_calls": [call]}})
        elif step == 2:
            rows.append(
                {"role": "tool", "content": '{"total": 850000000}', "meta": {"tool_call_id": f"c{turn}"}}
            )
        else:
            rows.append({"role": "assistant", "content": f"Respuesta {turn}.", "meta": {}})
            memories.append(
                {
                    "content": f"Hecho del turno {turn}.",
                    "content_key": f"t{turn}",
                    "importance": (turn % 10) / 10,
                }
            )
    with store.engine.begin() as connection:
        connection.execute(insert(Message), [{"conversation_id": conversation_id, **row} for row in rows])
        if memories:
            connection.execute(
                insert(MemoryRecord), [{"conversation_id": conversation_id, **item} for item in memories]
            )
    store.merge_state(conversation_id, {"tema": "ventas", "anio": 2025, "cliente_actual": "Empresa ABC"})


def measure(store: MemoryStore, conversation_id: str, repeats: int) -> tuple[float, float]:
    """Mean milliseconds and SQL statements per ``build_context`` over ``repeats`` calls (after a warm-up)."""
    store.build_context(conversation_id, TODAY)
    statements = 0

    def count(*_args: Any) -> None:
        nonlocal statements
        statements += 1

    event.listen(store.engine, "before_cursor_execute", count)
    try:
        started = time.perf_counter()
        for _ in range(repeats):
            store.build_context(conversation_id, TODAY)
        elapsed = time.perf_counter() - started
    finally:
        event.remove(store.engine, "before_cursor_execute", count)
    return elapsed * 1000 / repeats, statements / repeats


def run(sizes: Sequence[int] = SIZES, repeats: int = 200, directory: Path | None = None) -> list[GrowthRow]:
    """Measure every size, each in its own conversation of one memory database."""
    with tempfile.TemporaryDirectory(dir=directory) as tmp:
        store = MemoryStore(f"sqlite:///{Path(tmp) / 'memory.sqlite3'}")
        try:
            results = []
            for size in sizes:
                conversation_id = store.create_conversation()
                populate(store, conversation_id, size)
                ms, queries = measure(store, conversation_id, repeats)
                results.append(GrowthRow(messages=size, ms_per_call=ms, queries_per_call=queries))
            return results
        finally:
            store.close()


def render(rows: Sequence[GrowthRow]) -> Table:
    table = Table(title="build_context cost vs. stored messages")
    table.add_column("messages", justify="right")
    table.add_column("ms / build_context", justify="right")
    table.add_column("queries / build_context", justify="right")
    for row in rows:
        table.add_row(f"{row.messages:,}", f"{row.ms_per_call:.3f}", f"{row.queries_per_call:g}")
    return table


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--repeats", type=int, default=200, help="build_context calls per size")
    parser.add_argument("--sizes", type=int, nargs="+", default=list(SIZES), help="messages per conversation")
    args = parser.parse_args(argv)
    Console().print(render(run(args.sizes, args.repeats)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
