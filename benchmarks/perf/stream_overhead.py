"""What streaming every benchmark turn costs: the suite driven through ``astream`` against ``ask``.

``python -m benchmarks.perf.stream_overhead [--rounds N] [--tags TAG ...]`` runs the default suite offline,
alternately as the benchmark runs it (every turn through ``astream``) and with :class:`AskDriven` engines
whose ``astream`` just calls the blocking ``ask``, and prints per mode and driving the median ``total_ms``
and ``harness_ms`` of a turn, and whether both drivings recorded the same answers, calls and tokens.
Absolute milliseconds depend on the machine; compare on the same one.
"""

from __future__ import annotations

import argparse
import tempfile
from collections import defaultdict
from collections.abc import AsyncGenerator, Sequence
from pathlib import Path
from typing import Any, Literal

from rich.console import Console
from rich.table import Table

from benchmarks.modes import ALL_MODES
from benchmarks.results import TurnRow
from benchmarks.runner import RunConfig, open_suite, run_benchmark
from benchmarks.scenario import Scenario, load_scenarios
from benchmarks.stats import median
from shared.engine import AssistantEngine
from shared.events import TurnDone, TurnEvent
from shared.security import Caller
from shared.turn import TurnResult

Driving = Literal["astream", "ask"]


class AskDriven:
    """``engine`` with an ``astream`` that runs its blocking ``ask`` and yields only ``TurnDone``."""

    def __init__(self, engine: AssistantEngine) -> None:
        self.engine = engine
        self.mode = engine.mode

    def ask(self, conversation_id: str, message: str, caller: Caller, **options: Any) -> TurnResult:
        return self.engine.ask(conversation_id, message, caller, **options)

    async def aask(self, conversation_id: str, message: str, caller: Caller, **options: Any) -> TurnResult:
        return self.ask(conversation_id, message, caller, **options)

    async def astream(
        self, conversation_id: str, message: str, caller: Caller, **options: Any
    ) -> AsyncGenerator[TurnEvent, None]:
        yield TurnDone(result=self.ask(conversation_id, message, caller, **options))


def run_once(scenarios: Sequence[Scenario], driving: Driving, out_dir: Path, db_url: str) -> list[TurnRow]:
    """One offline run of ``scenarios`` in every mode, driven as ``driving`` says."""
    config = RunConfig(modes=list(ALL_MODES), out_dir=out_dir)
    with open_suite(config, db_url=db_url) as suite:
        factory = suite.engine_factory

        def engines(mode: str) -> AssistantEngine:
            return factory(mode) if driving == "astream" else AskDriven(factory(mode))

        outcome = run_benchmark(
            scenarios,
            config,
            engine_factory=engines,
            scorer=suite.scorer,
            callers=suite.callers,
            show_progress=False,
        )
    return outcome.rows


def same_records(a: Sequence[TurnRow], b: Sequence[TurnRow]) -> bool:
    """Whether two runs recorded the same answers, calls, tokens, operations, state and scores per turn."""

    def key(row: TurnRow) -> tuple[Any, ...]:
        return (row.mode, row.scenario, row.repetition, row.turn)

    def figures(row: TurnRow) -> tuple[Any, ...]:
        ops = [(op.funcion, op.parametros, op.error) for op in row.operations]
        return (row.answer, row.model_calls, row.input_tokens, row.output_tokens, ops, row.state, row.passed)

    left = {key(r): figures(r) for r in a}
    right = {key(r): figures(r) for r in b}
    return left == right


def measure(scenarios: Sequence[Scenario], rounds: int) -> tuple[Table, bool]:
    """Alternate the drivings ``rounds`` times; the table of medians and whether records matched."""
    totals: dict[tuple[str, Driving], list[float]] = defaultdict(list)
    harness: dict[tuple[str, Driving], list[float]] = defaultdict(list)
    first: dict[str, list[float]] = defaultdict(list)
    matched = True
    with tempfile.TemporaryDirectory() as tmp:
        db_url = f"sqlite:///{Path(tmp) / 'erp.sqlite3'}"
        for index in range(rounds):
            runs: dict[Driving, list[TurnRow]] = {}
            order: tuple[Driving, Driving] = ("ask", "astream") if index % 2 == 0 else ("astream", "ask")
            for driving in order:
                runs[driving] = run_once(scenarios, driving, Path(tmp) / f"{index}-{driving}", db_url)
                for row in runs[driving]:
                    if row.failed:
                        continue
                    totals[(row.mode, driving)].append(row.total_ms)
                    harness[(row.mode, driving)].append(row.harness_ms)
                    if driving == "astream" and row.first_answer_ms is not None:
                        first[row.mode].append(row.first_answer_ms)
            matched = matched and same_records(runs["ask"], runs["astream"])
    table = Table(title=f"ask vs astream, median ms per turn over {rounds} round(s) of the offline suite")
    for column in ("mode", "total ask", "total astream", "harness ask", "harness astream", "first answer"):
        table.add_column(column, justify="left" if column == "mode" else "right")
    drivings: tuple[Driving, Driving] = ("ask", "astream")
    for mode in ALL_MODES:
        cells = [
            f"{median(values[(mode, d)]):.2f}" if values.get((mode, d)) else "–"
            for values in (totals, harness)
            for d in drivings
        ]
        cells.append(f"{median(first[mode]):.2f}" if first.get(mode) else "–")
        table.add_row(mode, *cells)
    return table, matched


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=2, help="Runs per driving (alternating).")
    parser.add_argument("--tags", nargs="*", default=None, help="Keep scenarios with these tags.")
    args = parser.parse_args(argv)
    table, matched = measure(load_scenarios(tags=args.tags), args.rounds)
    console = Console(width=120)
    console.print(table)
    console.print(f"same answers, calls, tokens, operations, state and scores both ways: {matched}")
    return 0 if matched else 1


if __name__ == "__main__":
    raise SystemExit(main())
