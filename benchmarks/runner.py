"""The benchmark run: every scenario, in a fresh conversation per target, mode and repetition, scored as it
goes.

What a run runs, and what ``resume`` keeps, is :mod:`benchmarks.run_plan`; the ERP, models and memory stores
it runs over are opened by :mod:`benchmarks.suite`. Turns are scored as they finish and streamed to
``results.jsonl``; a turn that raises is recorded as failed and the run goes on.

The whole run is one ``asyncio`` event loop: ``concurrency`` workers take units from one queue, each with
its own engine per mode, and scoring (which reads the ERP) runs in the loop's thread pool. One loop, not one
per thread, because the provider SDKs' async HTTP clients (shared through the one model) are bound to the
loop that opened their connections.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

from benchmarks.provenance import Provenance, describe_host
from benchmarks.results import ResultsWriter, RunMeta, TurnRow, read_results
from benchmarks.run_plan import RunConfig, Unit, plan_units, resumable_rows, warmup_units
from benchmarks.run_turns import CallerResolver, EngineCache, EngineFactories, arun_unit, demo_callers
from benchmarks.scenario import Scenario
from benchmarks.scoring.turn import TurnScorer
from benchmarks.scoring.version import scorer_version
from benchmarks.suite import open_suite
from benchmarks.transcripts import TRANSCRIPTS_FILE
from shared.errors import ConfigurationError

if TYPE_CHECKING:
    from langchain_core.language_models import BaseChatModel

__all__ = ["RunConfig", "RunOutcome", "open_suite", "plan_units", "run_benchmark", "run_suite"]


@dataclass(frozen=True)
class RunOutcome:
    """What a run produced."""

    results_path: Path
    meta: RunMeta
    rows: list[TurnRow]
    """Every turn in the results file, including units kept by ``resume``."""
    units_run: int
    units_skipped: int
    elapsed_s: float


_RUN_SETTINGS = {
    "prompt_cache", "latency_profile", "structured", "plan_schema", "tool_call_recovery", "max_tokens",
    "timeout", "modes", "repeat", "concurrency", "scenario_paths", "tags", "warmup",
}  # fmt: skip
"""The settings of the run line taken from :class:`RunConfig` as they are."""


def run_benchmark(
    scenarios: Sequence[Scenario],
    config: RunConfig,
    *,
    engine_factory: EngineFactories,
    scorer: TurnScorer,
    callers: CallerResolver = demo_callers,
    console: Console | None = None,
    show_progress: bool = True,
    provenance: Provenance | None = None,
) -> RunOutcome:
    """Run ``scenarios`` for every target in every mode of ``config`` and stream scored turns to
    ``results.jsonl``.

    ``engine_factory`` is one factory per target name (:func:`open_suite` gives them), or one for every
    target. With ``config.warmup``, that many turns per target and mode run first, one at a time, and are
    recorded as warm-up rows.
    """
    started = time.perf_counter()
    writer = ResultsWriter(config.results_path)
    transcripts = ResultsWriter(config.results_path.parent / TRANSCRIPTS_FILE)
    targets = config.run_targets
    names = [target.name for target in targets]
    units = plan_units(scenarios, config.modes, config.repeat, names)
    kept: list[TurnRow] = []
    if config.resume and config.results_path.exists():
        try:
            previous = read_results(config.results_path)
        except ValueError as exc:
            raise ConfigurationError(f"Cannot resume: {exc}") from None
        kept = resumable_rows(previous, config, units)
    first = targets[0]
    meta = RunMeta(
        **config.model_dump(include=_RUN_SETTINGS),
        host=describe_host(),
        provider=first.provider,
        model=first.model,
        base_url=first.base_url,
        targets=list(config.targets),
        scenarios=len(scenarios),
        turns=sum(len(s.turns) for s in scenarios),
        provenance=provenance,
        scorer_version=scorer_version(),
    )
    writer.rewrite([meta, *kept])
    done = {row.unit for row in kept}
    todo = [unit for unit in units if unit.key not in done]
    warm = warmup_units(scenarios, config.modes, config.warmup, names) if todo else []
    progress = Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("turns"),
        TimeElapsedColumn(),
        TextColumn("ETA"),
        TimeRemainingColumn(),
        console=console,
        disable=not show_progress,
    )
    with progress:
        task = progress.add_task("benchmark", total=sum(len(unit.scenario.turns) for unit in [*warm, *todo]))

        def advance(row: TurnRow) -> None:
            writer.write(row)
            where = f"{row.target} · {row.mode}" if config.targets else row.mode
            progress.update(task, advance=1, description=f"{where} · {row.scenario}")

        async def worker(queue: list[Unit]) -> None:
            engines = EngineCache(engine_factory)
            while queue:
                await arun_unit(
                    queue.pop(0), engines, scorer, advance, callers=callers, transcripts=transcripts.write
                )

        async def run_all() -> None:
            # Engines' storage and tool handlers, and the scorer, run in this pool: room for every worker.
            asyncio.get_running_loop().set_default_executor(
                ThreadPoolExecutor(max_workers=config.concurrency + 4, thread_name_prefix="bench")
            )
            warm_engines = EngineCache(engine_factory)
            for unit in warm:  # before any measurement, one at a time: caches, connections, a loaded model
                await arun_unit(
                    unit,
                    warm_engines,
                    scorer,
                    advance,
                    callers=callers,
                    warmup=True,
                    transcripts=transcripts.write,
                )
            queue = list(todo)
            await asyncio.gather(*(worker(queue) for _ in range(min(config.concurrency, len(todo)) or 1)))

        asyncio.run(run_all())
    final = read_results(config.results_path)
    return RunOutcome(
        results_path=config.results_path,
        meta=final.meta,
        rows=final.rows,
        units_run=len(todo),
        units_skipped=len(units) - len(todo),
        elapsed_s=time.perf_counter() - started,
    )


def run_suite(
    scenarios: Sequence[Scenario],
    config: RunConfig,
    *,
    db_url: str | None = None,
    model: BaseChatModel | Mapping[str, BaseChatModel] | None = None,
    console: Console | None = None,
    show_progress: bool = True,
) -> RunOutcome:
    """Open the shared pieces (:func:`open_suite`) and run ``scenarios`` over them."""
    with open_suite(config, db_url=db_url, model=model) as suite:
        return run_benchmark(
            scenarios,
            config,
            engine_factory=suite.engine_factories,
            scorer=suite.scorer,
            callers=suite.callers,
            console=console,
            show_progress=show_progress,
            provenance=suite.provenance,
        )
