"""The benchmark run: every scenario, in a fresh conversation per target, mode and repetition, scored as it
goes.

One seeded ERP database (read only) is shared by every target and mode. Each target (a model of the matrix,
:mod:`benchmarks.targets`; one implicit target without ``--target``) gets its own model, built by the factory,
and its own memory store in the output directory (``memory.sqlite3`` for the implicit target,
``memory-NAME.sqlite3`` per named one), so targets never see each other's conversations; within a target every
mode shares the model and the store, so the modes differ only in their architecture. Turns are scored against
the ERP as they finish and streamed to ``results.jsonl``, each row naming its target; a turn that raises, or
whose provider fails, is recorded as failed and the run goes on. ``resume`` keeps the units (target, mode,
scenario, repetition) of this run that are complete in an existing results file, drops everything else (a
half-finished unit is redone from its first turn, never counted twice), and runs only the rest; it refuses a
file written with another latency profile, prefix-cache setting, or another provider, model or base URL under
a target name this run also uses.

**Every turn is streamed.** The runner drives each turn through the engine's ``astream`` and reads every
event to the last, so each row carries the time to the first answer token the engine measured
(``first_answer_ms``) beside the same ``TurnResult`` that ``ask`` returns; under a latency profile the
runner also records the turn's model calls itself and computes the simulated model time and time to the
first answer token from them (:mod:`benchmarks.simulated_timing`). The whole run is one ``asyncio`` event
loop in the calling thread:
``concurrency`` workers take units from one queue, each with its own engine per mode, and scoring (which
reads the ERP) runs in the loop's thread pool so it never holds up another worker's stream. One loop, not
one per thread, because the provider SDKs' async HTTP clients (shared by every worker through the one
model) are bound to the loop that opened their connections.
"""

from __future__ import annotations

import asyncio
import functools
import time
from collections.abc import Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
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

from benchmarks.modes import build_engine, produces_state
from benchmarks.provenance import Provenance, collect_provenance
from benchmarks.results import (
    ResultsWriter,
    RunMeta,
    TurnRow,
    describe_host,
    read_results,
)
from benchmarks.scenario import Scenario
from benchmarks.scoring.turn import TurnScorer
from benchmarks.targets import BenchTarget
from shared.errors import ConfigurationError
from shared.security import Caller

if TYPE_CHECKING:
    from langchain_core.language_models import BaseChatModel

from benchmarks.run_plan import (
    RunConfig,
    Unit,
    UnitKey,
    completed_units,
    plan_units,
    resumable_rows,
    warmup_units,
)
from benchmarks.run_turns import (
    CallerResolver,
    EngineCache,
    EngineFactories,
    EngineFactory,
    arun_unit,
    demo_callers,
    stream_turn,
)

__all__ = [
    "CallerResolver",
    "EngineFactories",
    "EngineFactory",
    "RunConfig",
    "RunOutcome",
    "SuitePieces",
    "Unit",
    "UnitKey",
    "arun_unit",
    "build_target_model",
    "completed_units",
    "demo_callers",
    "open_suite",
    "plan_units",
    "run_benchmark",
    "run_suite",
    "stream_turn",
    "warmup_units",
]


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
    "prompt_cache", "latency_profile", "structured", "tool_call_recovery", "max_tokens", "timeout", "modes",
    "repeat", "concurrency", "scenario_paths", "tags", "warmup",
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

    ``engine_factory`` is one factory per target name (:func:`open_suite` gives them), or one factory for
    every target. ``provenance`` is recorded in the run line (see :mod:`benchmarks.provenance`). With
    ``config.warmup``, that many turns per target and mode run first (sequentially) and are recorded as
    warm-up rows.
    """
    started = time.perf_counter()
    writer = ResultsWriter(config.results_path)
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
    done = {row.unit for row in kept}
    first = targets[0]
    settings = config.model_dump(include=_RUN_SETTINGS)  # model_dump copies the lists
    meta = RunMeta(
        **settings,
        host=describe_host(),
        provider=first.provider,
        model=first.model,
        base_url=first.base_url,
        targets=list(config.targets),
        scenarios=len(scenarios),
        turns=sum(len(s.turns) for s in scenarios),
        provenance=provenance,
    )
    writer.rewrite([meta, *kept])
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

        async def run_one(unit: Unit, engines: EngineCache, warmup: bool = False) -> None:
            stateful = produces_state(unit.mode, structured=config.structured)
            await arun_unit(
                unit, engines, scorer, advance, score_state=stateful, callers=callers, warmup=warmup
            )

        async def worker(queue: list[Unit]) -> None:
            engines = EngineCache(engine_factory)
            while queue:
                await run_one(queue.pop(0), engines)

        async def run_all() -> None:
            # Engines' storage and tool handlers, and the scorer, run in this pool: room for every worker.
            asyncio.get_running_loop().set_default_executor(
                ThreadPoolExecutor(max_workers=config.concurrency + 4, thread_name_prefix="bench")
            )
            warm_engines = EngineCache(engine_factory)
            for unit in warm:  # before any measurement, one at a time: caches, connections, a loaded model
                await run_one(unit, warm_engines, warmup=True)
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


@dataclass(frozen=True)
class SuitePieces:
    """What :func:`open_suite` opened for a run: engines per target over one ERP, and how to score."""

    engine_factories: dict[str, EngineFactory]
    """Target name → the factory of its engines (its own model and memory store)."""
    scorer: TurnScorer
    callers: CallerResolver
    provenance: Provenance

    @property
    def engine_factory(self) -> EngineFactory:
        """The factory of the run's first target (the only one without ``--target``)."""
        return next(iter(self.engine_factories.values()))


def build_target_model(target: BenchTarget, config: RunConfig) -> BaseChatModel:
    """The model of ``target``, built by the factory with the run's cap and timeout; offline targets also get
    the latency profile, and no modelled prefix cache (``prompt_cache_size=0``) when ``config.prompt_cache``
    is off."""
    from shared.llm.factory import build_chat_model

    offline = target.offline
    return build_chat_model(
        target.provider,
        model=target.model,
        base_url=target.base_url,
        latency_profile=config.latency_profile if offline else None,
        max_tokens=config.max_tokens,
        timeout=config.timeout,
        prompt_cache_size=0 if offline and not config.prompt_cache else None,
    )


def _check_offline_only(config: RunConfig) -> None:
    """Offline-only settings need an offline target: say so rather than ignore them."""
    if any(target.offline for target in config.run_targets):
        return
    providers = ", ".join(sorted({target.provider for target in config.run_targets}))
    if config.latency_profile is not None:
        raise ConfigurationError(
            f"Latency profiles only apply to the offline provider, not {providers}: drop --latency-profile."
        )
    if not config.prompt_cache:
        raise ConfigurationError(
            "--no-prompt-cache only applies to the offline provider's modelled prefix cache, not "
            f"{providers}: drop it (a real provider caches on its own)."
        )


def _memory_file(config: RunConfig, target: BenchTarget) -> Path:
    """``memory.sqlite3`` for the implicit target, ``memory-NAME.sqlite3`` for a named one."""
    return config.out_dir / ("memory.sqlite3" if not config.targets else f"memory-{target.name}.sqlite3")


def _record_prompt_cache(provenance: Provenance, models: Mapping[str, BaseChatModel], first: str) -> None:
    """Note each offline model's prefix-cache size in its identity (what actually ran)."""
    for name, model in models.items():
        size = getattr(model, "prompt_cache_size", None)
        if not isinstance(size, int):
            continue
        identities = [provenance.models.get(name)]
        if name == first:
            identities.append(provenance.model)
        for identity in identities:
            if identity is not None:
                identity.details["prompt_cache_size"] = size


@contextmanager
def open_suite(
    config: RunConfig,
    *,
    db_url: str | None = None,
    model: BaseChatModel | Mapping[str, BaseChatModel] | None = None,
) -> Iterator[SuitePieces]:
    """Open the shared pieces of a run (seeded ERP, registry) and each target's own (model, fresh memory
    store in ``out_dir``), and close them when the block ends.

    ``model`` overrides the providers in ``config`` (tests pass a fake): one model for every target, or one
    per target name; otherwise each target's model is built by :func:`build_target_model`.
    """
    from shared.erp.database import open_demo_erp
    from shared.erp.users import DEFAULT_USER, caller_for
    from shared.memory.store import MemoryStore
    from shared.operations.sales import sales_registry

    _check_offline_only(config)
    config.out_dir.mkdir(parents=True, exist_ok=True)
    targets = config.run_targets
    models: dict[str, BaseChatModel] = {}
    for target in targets:
        given = model.get(target.name) if isinstance(model, Mapping) else model
        models[target.name] = given if given is not None else build_target_model(target, config)
    erp = open_demo_erp(db_url)
    registry = sales_registry()
    first = targets[0]
    provenance = collect_provenance(
        first.provider, first.model, first.base_url, registry=registry, targets=config.targets
    )
    _record_prompt_cache(provenance, models, first.name)
    stores: list[MemoryStore] = []
    try:
        factories: dict[str, EngineFactory] = {}
        for target in targets:
            store = MemoryStore(f"sqlite:///{_memory_file(config, target)}")
            stores.append(store)
            factories[target.name] = functools.partial(
                build_engine,
                registry=registry,
                erp=erp,
                store=store,
                model=models[target.name],
                structured=config.structured,
                tool_call_recovery=config.tool_call_recovery,
            )

        @functools.cache
        def callers(name: str | None) -> Caller:  # one ERP read per user and run
            return caller_for(erp, name or DEFAULT_USER)

        yield SuitePieces(
            engine_factories=factories,
            scorer=TurnScorer(registry, erp),
            callers=callers,
            provenance=provenance,
        )
    finally:
        for store in stores:
            store.close()
        erp.engine.dispose()


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
