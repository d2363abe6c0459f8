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
(``first_answer_ms``, and ``simulated_first_answer_ms`` under a latency profile) beside the same
``TurnResult`` that ``ask`` returns. The whole run is one ``asyncio`` event loop in the calling thread:
``concurrency`` workers take units from one queue, each with its own engine per mode, and scoring (which
reads the ERP) runs in the loop's thread pool so it never holds up another worker's stream. One loop, not
one per thread, because the provider SDKs' async HTTP clients (shared by every worker through the one
model) are bound to the loop that opened their connections.
"""

from __future__ import annotations

import asyncio
import functools
import time
import uuid
from collections import defaultdict
from collections.abc import Callable, Iterator, Mapping, Sequence
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

from benchmarks.modes import build_engine, produces_state
from benchmarks.provenance import Provenance, collect_provenance
from benchmarks.results import (
    RESULTS_FILE,
    OperationRecord,
    ResultsWriter,
    RunMeta,
    RunResults,
    TurnRow,
    describe_host,
    read_results,
)
from benchmarks.scenario import Scenario, ScenarioTurn
from benchmarks.scoring.turn import TurnScore, TurnScorer
from benchmarks.targets import DEFAULT_TARGET, BenchTarget, implicit_target
from shared.engine import AssistantEngine
from shared.errors import ConfigurationError, ConversationAccessDenied
from shared.events import TurnDone
from shared.failures import failure_kind_of
from shared.llm.factory import DEFAULT_MAX_TOKENS, DEFAULT_TIMEOUT_S
from shared.security import DEMO_CALLER, Caller
from shared.turn import TurnResult

if TYPE_CHECKING:
    from langchain_core.language_models import BaseChatModel

EngineFactory = Callable[[str], AssistantEngine]
"""Builds the engine of a mode (called once per target, mode and worker)."""
EngineFactories = EngineFactory | Mapping[str, EngineFactory]
"""One factory per target name, or one factory that serves every target."""
CallerResolver = Callable[[str | None], Caller]
"""The caller a scenario's user name stands for (``None``: the demo default)."""


def demo_callers(name: str | None) -> Caller:
    """The demo default only: scenarios that name a user need the ERP's resolver (see :func:`run_suite`)."""
    if name is None or name == DEMO_CALLER.user_id:
        return DEMO_CALLER
    raise ConfigurationError(f"Scenario user {name!r}: pass callers= to resolve the ERP's users.")


class RunConfig(BaseModel):
    """What to run and where to write it."""

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
    """Ask tool calling for a structured final answer (so it produces state too)."""
    tool_call_recovery: bool = True
    """Tool calling recovers tool calls written as text (``--no-tool-call-recovery`` turns it off)."""
    max_tokens: int | None = Field(default=DEFAULT_MAX_TOKENS, ge=1)
    """Output cap of every model call (``None``: no cap)."""
    timeout: float | None = Field(default=DEFAULT_TIMEOUT_S, gt=0)
    """Timeout of every model request in seconds (``None``: none)."""
    scenario_paths: list[str] = Field(default_factory=list)
    tags: list[str] = Field(default_factory=list)
    warmup: int = Field(default=0, ge=0)
    """Warm-up turns per target and mode, run before the measured ones: recorded with ``warmup`` set
    (repetition 0), left out of every figure."""
    targets: list[BenchTarget] = Field(default_factory=list)
    """The models of the matrix (``--target``); empty: one implicit target from ``provider``, ``model`` and
    ``base_url``."""
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
        """Where turn records are streamed."""
        return self.out_dir / RESULTS_FILE


@dataclass(frozen=True)
class Unit:
    """One scenario run by one target in one mode and repetition: a fresh conversation."""

    mode: str
    scenario: Scenario
    repetition: int
    target: str = DEFAULT_TARGET

    @property
    def key(self) -> tuple[str, str, str, int]:
        """(target, mode, scenario id, repetition)."""
        return (self.target, self.mode, self.scenario.id, self.repetition)


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


UnitKey = tuple[str, str, str, int]
"""(target, mode, scenario id, repetition)."""


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
    scenarios: Sequence[Scenario],
    modes: Sequence[str],
    turns: int,
    targets: Sequence[str] = (DEFAULT_TARGET,),
) -> list[Unit]:
    """The first ``turns`` turns of the suite per target and mode (scenarios in order, the last cut short),
    as repetition 0."""
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


def completed_units(rows: Sequence[TurnRow], scenarios: Sequence[Scenario]) -> set[UnitKey]:
    """Units whose turns are exactly the scenario's turns (1 … n), each recorded."""
    lengths = {s.id: len(s.turns) for s in scenarios}
    seen: dict[UnitKey, set[int]] = defaultdict(set)
    for row in rows:
        seen[row.unit].add(row.turn)
    return {
        unit
        for unit, turns in seen.items()
        if unit[2] in lengths and turns == set(range(1, lengths[unit[2]] + 1))
    }


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


def _resumable_rows(previous: RunResults, config: RunConfig, units: Sequence[Unit]) -> list[TurnRow]:
    """The rows of ``previous`` to keep: complete units of this run, one row per turn.

    Raises :class:`ConfigurationError` when ``previous`` was written with other settings, whose rows would
    be mixed into figures they do not belong to.
    """
    changed = _changed_settings(previous.meta, config)
    if changed:
        raise ConfigurationError(
            f"Cannot resume {config.results_path}: it was run with other settings ({'; '.join(changed)}). "
            "Use another --out, or run without --resume."
        )
    planned = {unit.key for unit in units}
    latest: dict[tuple[str, str, str, int, int], TurnRow] = {}
    for row in previous.rows:
        if row.unit in planned:
            latest[(*row.unit, row.turn)] = row
    done = completed_units(list(latest.values()), [unit.scenario for unit in units])
    return [row for row in latest.values() if row.unit in done]


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
        kept = _resumable_rows(previous, config, units)
    done = {row.unit for row in kept}
    first = targets[0]
    meta = RunMeta(
        host=describe_host(),
        provider=first.provider,
        model=first.model,
        base_url=first.base_url,
        targets=list(config.targets),
        prompt_cache=config.prompt_cache,
        latency_profile=config.latency_profile,
        structured=config.structured,
        tool_call_recovery=config.tool_call_recovery,
        max_tokens=config.max_tokens,
        timeout=config.timeout,
        modes=list(config.modes),
        repeat=config.repeat,
        concurrency=config.concurrency,
        scenarios=len(scenarios),
        turns=sum(len(s.turns) for s in scenarios),
        scenario_paths=list(config.scenario_paths),
        tags=list(config.tags),
        warmup=config.warmup,
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

        async def run_one(unit: Unit, engines: _EngineCache, warmup: bool = False) -> None:
            stateful = produces_state(unit.mode, structured=config.structured)
            await arun_unit(
                unit, engines, scorer, advance, score_state=stateful, callers=callers, warmup=warmup
            )

        async def worker(queue: list[Unit]) -> None:
            engines = _EngineCache(engine_factory)
            while queue:
                await run_one(queue.pop(0), engines)

        async def run_all() -> None:
            # Engines' storage and tool handlers, and the scorer, run in this pool: room for every worker.
            asyncio.get_running_loop().set_default_executor(
                ThreadPoolExecutor(max_workers=config.concurrency + 4, thread_name_prefix="bench")
            )
            warm_engines = _EngineCache(engine_factory)
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


class _EngineCache:
    """One worker's engines, one per target and mode, built on first use.

    A factory that raises is called again on the next turn; :func:`arun_unit` records each such turn as
    failed (as it does for a target that has no factory).
    """

    def __init__(self, factory: EngineFactories) -> None:
        self._factory = factory
        self._engines: dict[tuple[str, str], AssistantEngine] = {}

    def get(self, mode: str, target: str = DEFAULT_TARGET) -> AssistantEngine:
        key = (target, mode)
        if key not in self._engines:
            factory = self._factory
            if isinstance(factory, Mapping):
                if target not in factory:
                    raise ConfigurationError(f"No engine factory for target {target!r}.")
                factory = factory[target]
            self._engines[key] = factory(mode)
        return self._engines[key]


async def stream_turn(
    engine: AssistantEngine, conversation_id: str, message: str, caller: Caller
) -> TurnResult:
    """Run one turn through ``engine.astream``, reading every event: the result of its ``TurnDone``.

    Raises what ``astream`` raises (``ConversationAccessDenied`` before the first event), and
    ``RuntimeError`` if the stream ends without a ``TurnDone`` (an engine bug, recorded as a failed turn).
    """
    result: TurnResult | None = None
    stream = engine.astream(conversation_id, message, caller=caller)
    try:
        async for event in stream:
            if isinstance(event, TurnDone):
                result = event.result
    finally:
        close = getattr(stream, "aclose", None)  # an async generator: let it clean up however we left it
        if close is not None:
            await close()
    if result is None:
        raise RuntimeError(f"{engine.mode}: the event stream ended without TurnDone")
    return result


async def arun_unit(
    unit: Unit,
    engines: _EngineCache,
    scorer: TurnScorer,
    emit: Callable[[TurnRow], None],
    *,
    score_state: bool = True,
    callers: CallerResolver = demo_callers,
    warmup: bool = False,
) -> list[TurnRow]:
    """Run one scenario in a fresh conversation, each turn streamed (:func:`stream_turn`); every turn is
    emitted as soon as it is scored.

    Each turn runs as the scenario's user (or the turn's ``as_user``), resolved by ``callers``, and is scored
    as that user sees the ERP. ``score_state`` is whether the mode produces conversation state, so that
    ``state`` expectations apply. ``warmup`` marks every row as a warm-up turn (left out of the figures).
    """
    conversation_id = f"bench-{unit.mode}-{unit.repetition}-{uuid.uuid4().hex[:16]}"
    rows: list[TurnRow] = []
    for index, turn in enumerate(unit.scenario.turns, start=1):
        started = time.perf_counter()
        result: TurnResult | None = None
        error: Exception | None = None
        user = turn.as_user or unit.scenario.user
        caller = DEMO_CALLER  # scored as the demo default if the user cannot even be resolved
        try:
            caller = callers(user)
            result = await stream_turn(
                engines.get(unit.mode, unit.target), conversation_id, turn.user, caller
            )
        except Exception as exc:  # a failing turn is data, not the end of the run
            error = exc
        elapsed_ms = (time.perf_counter() - started) * 1000
        row = _row(unit, index, conversation_id, turn.user, result, error, elapsed_ms)
        row.caller = user
        row.warmup = warmup
        row.score = await asyncio.to_thread(_score, scorer, caller, turn, row, score_state)
        if row.denied and turn.expect.denied:  # the refusal the scenario asked for is the right outcome
            row.failed, row.failure = False, None
        rows.append(row)
        emit(row)
    return rows


def _score(
    scorer: TurnScorer, caller: Caller, turn: ScenarioTurn, row: TurnRow, score_state: bool
) -> TurnScore:
    """The row's score as ``caller`` sees the ERP; a scoring bug fails this turn, not the whole run."""
    executed = [op.model_dump() for op in row.operations if op.error is None]
    refused = [op.model_dump() for op in row.operations if op.error is not None]
    try:
        return scorer.as_caller(caller).score(
            turn.expect,
            answer=row.answer,
            operations=executed,
            refused=refused,
            state=row.state if score_state else None,
            failed=row.failed,
            failure=row.failure,
            denied=row.denied,
        )
    except Exception as exc:
        return TurnScore(passed=False, details=[f"scoring error: {type(exc).__name__}: {exc}"])


def _row(
    unit: Unit,
    index: int,
    conversation_id: str,
    user: str,
    result: TurnResult | None,
    error: Exception | None,
    elapsed_ms: float,
) -> TurnRow:
    base = {
        "target": unit.target,
        "mode": unit.mode,
        "scenario": unit.scenario.id,
        "category": unit.scenario.category,
        "tags": unit.scenario.tags,
        "turn": index,
        "repetition": unit.repetition,
        "user": user,
        "conversation_id": conversation_id,
        "score": TurnScore(passed=False),
    }
    if result is None:  # the ERP refused the conversation, or the engine raised or could not be built
        return TurnRow(
            **base,
            failure=failure_kind_of(error) if error is not None else "provider",
            failed=True,
            denied=isinstance(error, ConversationAccessDenied),
            errors=[f"{type(error).__name__}: {error}" if error is not None else "unknown error"],
            total_ms=elapsed_ms,
            harness_ms=elapsed_ms,
        )
    return TurnRow(
        **base,
        answer=result.answer,
        model_calls=result.model_calls,
        input_tokens=result.input_tokens,
        output_tokens=result.output_tokens,
        cached_input_tokens=result.cached_input_tokens,
        usage_reported=result.usage_reported,
        connection_retries=result.connection_retries,
        recovered_tool_calls=result.recovered_tool_calls,
        model_ms=result.model_ms,
        simulated_model_ms=result.simulated_model_ms,
        first_answer_ms=result.first_answer_ms,
        simulated_first_answer_ms=result.simulated_first_answer_ms,
        harness_ms=result.harness_ms,
        total_ms=result.total_ms or elapsed_ms,
        operations=[
            OperationRecord(funcion=op.funcion, parametros=op.parametros, id=op.id, error=op.error)
            for op in result.operations
        ],
        plan=result.plan,
        state=result.state,
        errors=list(result.errors),
        failure=result.failure,
        failed=result.failed,
        plan_valid=result.plan_valid,
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
