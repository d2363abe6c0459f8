"""The benchmark run: every scenario, in a fresh conversation per target, mode and repetition, scored as it
goes.

One seeded ERP database (read only) serves every target and mode. Each target (:mod:`benchmarks.targets`)
gets its own model and its own memory store in the output directory, so targets never see each other's
conversations; within a target the modes share the model and the store, so they differ only in their
architecture. Turns are scored as they finish and streamed to ``results.jsonl``; a turn that raises is
recorded as failed and the run goes on. ``resume`` keeps the complete units (target, mode, scenario,
repetition) of an existing results file and runs only the rest; it refuses a file written with settings
that would mix figures.

The whole run is one ``asyncio`` event loop: ``concurrency`` workers take units from one queue, each with
its own engine per mode, and scoring (which reads the ERP) runs in the loop's thread pool. One loop, not one
per thread, because the provider SDKs' async HTTP clients (shared through the one model) are bound to the
loop that opened their connections.
"""

from __future__ import annotations

import asyncio
import functools
import time
from collections import defaultdict
from collections.abc import Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Self

from pydantic import BaseModel, ConfigDict, Field, model_validator
from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

from benchmarks.modes import build_engine
from benchmarks.provenance import Provenance, collect_provenance
from benchmarks.results import (
    RESULTS_FILE,
    ResultsWriter,
    RunMeta,
    RunResults,
    TurnRow,
    describe_host,
    read_results,
)
from benchmarks.run_turns import (
    CallerResolver,
    EngineCache,
    EngineFactories,
    EngineFactory,
    arun_unit,
    demo_callers,
)
from benchmarks.scenario import Scenario
from benchmarks.scoring.turn import TurnScorer
from benchmarks.targets import DEFAULT_TARGET, BenchTarget, implicit_target
from shared.errors import ConfigurationError
from shared.llm.factory import DEFAULT_MAX_TOKENS, DEFAULT_TIMEOUT_S
from shared.security import Caller

if TYPE_CHECKING:
    from langchain_core.language_models import BaseChatModel


class RunConfig(BaseModel):
    """What to run and where to write it (the settings are those of :class:`~benchmarks.results.RunMeta`)."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    modes: list[str] = Field(min_length=1)
    out_dir: Path
    repeat: int = Field(default=1, ge=1)
    concurrency: int = Field(default=1, ge=1)
    resume: bool = False
    provider: str = "offline"
    model: str | None = None
    base_url: str | None = None
    latency_profile: str | None = None
    structured: bool = False
    tool_call_recovery: bool = True
    max_tokens: int | None = Field(default=DEFAULT_MAX_TOKENS, ge=1)
    timeout: float | None = Field(default=DEFAULT_TIMEOUT_S, gt=0)
    scenario_paths: list[str] = Field(default_factory=list)
    tags: list[str] = Field(default_factory=list)
    warmup: int = Field(default=0, ge=0)
    """Warm-up turns per target and mode, run first and recorded as repetition 0, left out of every figure."""
    targets: list[BenchTarget] = Field(default_factory=list)
    """The models of the matrix; empty: one implicit target from ``provider``, ``model`` and ``base_url``."""
    prompt_cache: bool = True
    """Offline targets model a prefix cache; ``False`` builds them with ``prompt_cache_size=0``."""

    @model_validator(mode="after")
    def _unique_targets(self) -> Self:
        names = [target.name for target in self.targets]
        if len(set(names)) != len(names):
            raise ValueError(f"target names must be unique, got {names}")
        return self

    @property
    def run_targets(self) -> list[BenchTarget]:
        """``targets``, or the one implicit target."""
        return list(self.targets) or [implicit_target(self.provider, self.model, self.base_url)]

    @property
    def results_path(self) -> Path:
        return self.out_dir / RESULTS_FILE


UnitKey = tuple[str, str, str, int]
"""(target, mode, scenario id, repetition)."""


@dataclass(frozen=True)
class Unit:
    """One scenario run by one target in one mode and repetition: a fresh conversation."""

    mode: str
    scenario: Scenario
    repetition: int
    target: str = DEFAULT_TARGET

    @property
    def key(self) -> UnitKey:
        return (self.target, self.mode, self.scenario.id, self.repetition)


def plan_units(
    scenarios: Sequence[Scenario],
    modes: Sequence[str],
    repeat: int,
    targets: Sequence[str] = (DEFAULT_TARGET,),
) -> list[Unit]:
    """Every (target, mode, scenario, repetition), repetition-major so partial runs cover every scenario
    early, and the targets side by side within a scenario."""
    return [
        Unit(mode=mode, scenario=scenario, repetition=rep, target=target)
        for rep in range(1, repeat + 1)
        for scenario in scenarios
        for target in targets
        for mode in modes
    ]


def warmup_units(
    scenarios: Sequence[Scenario], modes: Sequence[str], turns: int, targets: Sequence[str]
) -> list[Unit]:
    """The first ``turns`` turns of the suite per target and mode (the last scenario cut short), as
    repetition 0."""
    units = []
    for target in targets:
        for mode in modes:
            left = turns
            for scenario in scenarios:
                if left <= 0:
                    break
                head = scenario.model_copy(update={"turns": scenario.turns[:left]})
                units.append(Unit(mode=mode, scenario=head, repetition=0, target=target))
                left -= len(head.turns)
    return units


_RESUME_SETTINGS = ("latency_profile", "structured", "tool_call_recovery")
"""Run settings that change the figures: a resumed run must keep them."""
_TARGET_SETTINGS = ("provider", "model", "base_url")
"""What a target name stands for: a resumed run must keep it for every target name both runs use."""


def _changed_settings(previous: RunMeta, config: RunConfig) -> list[str]:
    """The settings ``config`` changes from ``previous`` that would mix figures (empty: safe to resume)."""
    changed = [
        f"{name} {getattr(previous, name)!r} → {getattr(config, name)!r}"
        for name in _RESUME_SETTINGS
        if getattr(previous, name) != getattr(config, name)
    ]
    if previous.prompt_cache is not None and previous.prompt_cache != config.prompt_cache:
        changed.append(f"prompt_cache {previous.prompt_cache!r} → {config.prompt_cache!r}")
    before = {target.name: target for target in previous.run_targets}
    for target in config.run_targets:
        old = before.get(target.name)
        if old is None:
            continue
        prefix = "" if target.name == DEFAULT_TARGET else f"target {target.name}: "
        changed += [
            f"{prefix}{name} {getattr(old, name)!r} → {getattr(target, name)!r}"
            for name in _TARGET_SETTINGS
            if getattr(old, name) != getattr(target, name)
        ]
    return changed


def resumable_rows(previous: RunResults, config: RunConfig, units: Sequence[Unit]) -> list[TurnRow]:
    """The rows of ``previous`` to keep: the last record of each turn of this run's complete units.

    Raises :class:`ConfigurationError` when ``previous`` was written with settings that would mix figures.
    """
    changed = _changed_settings(previous.meta, config)
    if changed:
        raise ConfigurationError(
            f"Cannot resume {config.results_path}: it was run with other settings ({'; '.join(changed)}). "
            "Use another --out, or run without --resume."
        )
    lengths = {unit.key: len(unit.scenario.turns) for unit in units}
    latest = {(*row.unit, row.turn): row for row in previous.rows if row.unit in lengths}
    turns: dict[UnitKey, set[int]] = defaultdict(set)
    for row in latest.values():
        turns[row.unit].add(row.turn)
    done = {unit for unit, seen in turns.items() if seen == set(range(1, lengths[unit] + 1))}
    return [row for row in latest.values() if row.unit in done]


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

    ``engine_factory`` is one factory per target name (:func:`open_suite` gives them), or one for every
    target. With ``config.warmup``, that many turns per target and mode run first, one at a time, and are
    recorded as warm-up rows.
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
                await arun_unit(queue.pop(0), engines, scorer, advance, callers=callers)

        async def run_all() -> None:
            # Engines' storage and tool handlers, and the scorer, run in this pool: room for every worker.
            asyncio.get_running_loop().set_default_executor(
                ThreadPoolExecutor(max_workers=config.concurrency + 4, thread_name_prefix="bench")
            )
            warm_engines = EngineCache(engine_factory)
            for unit in warm:  # before any measurement, one at a time: caches, connections, a loaded model
                await arun_unit(unit, warm_engines, scorer, advance, callers=callers, warmup=True)
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
    """The model of ``target`` with the run's cap and timeout; offline targets also get the latency profile,
    and no modelled prefix cache when ``config.prompt_cache`` is off."""
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


def _record_prompt_cache(provenance: Provenance, models: Mapping[str, BaseChatModel], first: str) -> None:
    """Note each offline model's prefix-cache size in its identity (what actually ran)."""
    for name, model in models.items():
        size = getattr(model, "prompt_cache_size", None)
        if not isinstance(size, int):
            continue
        identities = [provenance.models.get(name), provenance.model if name == first else None]
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
    store ``memory.sqlite3``, or ``memory-NAME.sqlite3`` per named target, in ``out_dir``); close them when
    the block ends.

    ``model`` overrides the providers in ``config`` (tests pass a fake): one model for every target, or one
    per target name.
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
            memory = "memory.sqlite3" if not config.targets else f"memory-{target.name}.sqlite3"
            stores.append(MemoryStore(f"sqlite:///{config.out_dir / memory}"))
            factories[target.name] = functools.partial(
                build_engine,
                registry=registry,
                erp=erp,
                store=stores[-1],
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
