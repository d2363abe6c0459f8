"""The benchmark run: every scenario, in a fresh conversation per mode and repetition, scored as it goes.

One seeded ERP database, one model and one memory store (in the output directory) are shared by every mode, so
the modes differ only in their architecture. Turns are scored against the ERP as they finish and streamed to
``results.jsonl``; a turn that raises, or whose provider fails, is recorded as failed and the run goes on.
``resume`` keeps the units (mode, scenario, repetition) of this run that are complete in an existing results
file, drops everything else (a half-finished unit is redone from its first turn, never counted twice), and
runs only the rest; it refuses a file written with another provider, model or latency profile.

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
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import BaseModel, ConfigDict, Field
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
"""Builds the engine of a mode (called once per mode and worker)."""
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
    max_tokens: int | None = Field(default=DEFAULT_MAX_TOKENS, ge=1)
    """Output cap of every model call (``None``: no cap)."""
    timeout: float | None = Field(default=DEFAULT_TIMEOUT_S, gt=0)
    """Timeout of every model request in seconds (``None``: none)."""
    scenario_paths: list[str] = Field(default_factory=list)
    tags: list[str] = Field(default_factory=list)
    warmup: int = Field(default=0, ge=0)
    """Warm-up turns per mode, run before the measured ones: recorded with ``warmup`` set (repetition 0),
    left out of every figure."""

    @property
    def results_path(self) -> Path:
        """Where turn records are streamed."""
        return self.out_dir / RESULTS_FILE


@dataclass(frozen=True)
class Unit:
    """One scenario run in one mode and repetition: a fresh conversation."""

    mode: str
    scenario: Scenario
    repetition: int

    @property
    def key(self) -> tuple[str, str, int]:
        """(mode, scenario id, repetition)."""
        return (self.mode, self.scenario.id, self.repetition)


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


def plan_units(scenarios: Sequence[Scenario], modes: Sequence[str], repeat: int) -> list[Unit]:
    """Every (mode, scenario, repetition), repetition-major so partial runs cover every scenario early."""
    return [
        Unit(mode=mode, scenario=scenario, repetition=rep)
        for rep in range(1, repeat + 1)
        for scenario in scenarios
        for mode in modes
    ]


def warmup_units(scenarios: Sequence[Scenario], modes: Sequence[str], turns: int) -> list[Unit]:
    """The first ``turns`` turns of the suite per mode (scenarios in order, the last cut short), as rep. 0."""
    units = []
    for mode in modes:
        left = turns
        for scenario in scenarios:
            if left <= 0:
                break
            head = scenario.model_copy(update={"turns": scenario.turns[:left]})
            units.append(Unit(mode=mode, scenario=head, repetition=0))
            left -= len(head.turns)
    return units


def completed_units(rows: Sequence[TurnRow], scenarios: Sequence[Scenario]) -> set[tuple[str, str, int]]:
    """Units whose turns are exactly the scenario's turns (1 … n), each recorded."""
    lengths = {s.id: len(s.turns) for s in scenarios}
    seen: dict[tuple[str, str, int], set[int]] = defaultdict(set)
    for row in rows:
        seen[row.unit].add(row.turn)
    return {
        unit
        for unit, turns in seen.items()
        if unit[1] in lengths and turns == set(range(1, lengths[unit[1]] + 1))
    }


_RESUME_SETTINGS = ("provider", "model", "base_url", "latency_profile", "structured")
"""Run settings that change the figures: a resumed run must keep them."""


def _resumable_rows(previous: RunResults, config: RunConfig, units: Sequence[Unit]) -> list[TurnRow]:
    """The rows of ``previous`` to keep: complete units of this run, one row per turn.

    Raises :class:`ConfigurationError` when ``previous`` was written with other settings, whose rows would
    be mixed into figures they do not belong to.
    """
    changed = [
        f"{name} {getattr(previous.meta, name)!r} → {getattr(config, name)!r}"
        for name in _RESUME_SETTINGS
        if getattr(previous.meta, name) != getattr(config, name)
    ]
    if changed:
        raise ConfigurationError(
            f"Cannot resume {config.results_path}: it was run with other settings ({'; '.join(changed)}). "
            "Use another --out, or run without --resume."
        )
    planned = {unit.key for unit in units}
    latest: dict[tuple[str, str, int, int], TurnRow] = {}
    for row in previous.rows:
        if row.unit in planned:
            latest[(*row.unit, row.turn)] = row
    done = completed_units(list(latest.values()), [unit.scenario for unit in units])
    return [row for row in latest.values() if row.unit in done]


def run_benchmark(
    scenarios: Sequence[Scenario],
    config: RunConfig,
    *,
    engine_factory: EngineFactory,
    scorer: TurnScorer,
    callers: CallerResolver = demo_callers,
    console: Console | None = None,
    show_progress: bool = True,
    provenance: Provenance | None = None,
) -> RunOutcome:
    """Run ``scenarios`` in every mode of ``config`` and stream scored turns to ``results.jsonl``.

    ``provenance`` is recorded in the run line (see :mod:`benchmarks.provenance`). With ``config.warmup``,
    that many turns per mode run first (sequentially) and are recorded as warm-up rows.
    """
    started = time.perf_counter()
    writer = ResultsWriter(config.results_path)
    units = plan_units(scenarios, config.modes, config.repeat)
    kept: list[TurnRow] = []
    if config.resume and config.results_path.exists():
        try:
            previous = read_results(config.results_path)
        except ValueError as exc:
            raise ConfigurationError(f"Cannot resume: {exc}") from None
        kept = _resumable_rows(previous, config, units)
    done = {row.unit for row in kept}
    meta = RunMeta(
        host=describe_host(),
        provider=config.provider,
        model=config.model,
        base_url=config.base_url,
        latency_profile=config.latency_profile,
        structured=config.structured,
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
    warm = warmup_units(scenarios, config.modes, config.warmup) if todo else []
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
            progress.update(task, advance=1, description=f"{row.mode} · {row.scenario}")

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
    """One worker's engines, one per mode, built on first use.

    A factory that raises is called again on the next turn; :func:`arun_unit` records each such turn as
    failed.
    """

    def __init__(self, factory: EngineFactory) -> None:
        self._factory = factory
        self._engines: dict[str, AssistantEngine] = {}

    def get(self, mode: str) -> AssistantEngine:
        if mode not in self._engines:
            self._engines[mode] = self._factory(mode)
        return self._engines[mode]


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
            result = await stream_turn(engines.get(unit.mode), conversation_id, turn.user, caller)
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
    try:
        return scorer.as_caller(caller).score(
            turn.expect,
            answer=row.answer,
            operations=executed,
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
    )


@dataclass(frozen=True)
class SuitePieces:
    """What :func:`open_suite` opened for a run: engines over one ERP, store and model, and how to score."""

    engine_factory: EngineFactory
    scorer: TurnScorer
    callers: CallerResolver
    provenance: Provenance


@contextmanager
def open_suite(
    config: RunConfig, *, db_url: str | None = None, model: BaseChatModel | None = None
) -> Iterator[SuitePieces]:
    """Open the shared pieces of a run (seeded ERP, registry, fresh memory store in ``out_dir``, one model)
    and close them when the block ends.

    ``model`` overrides the provider in ``config`` (tests pass a fake); otherwise it is built with
    :func:`shared.llm.factory.build_chat_model`.
    """
    from shared.erp.database import open_demo_erp
    from shared.erp.users import DEFAULT_USER, caller_for
    from shared.memory.store import MemoryStore
    from shared.operations.sales import sales_registry

    config.out_dir.mkdir(parents=True, exist_ok=True)
    if model is None:
        from shared.llm.factory import build_chat_model

        model = build_chat_model(
            config.provider,
            model=config.model,
            base_url=config.base_url,
            latency_profile=config.latency_profile,
            max_tokens=config.max_tokens,
            timeout=config.timeout,
        )
    chat_model = model
    erp = open_demo_erp(db_url)
    registry = sales_registry()
    provenance = collect_provenance(config.provider, config.model, config.base_url, registry=registry)
    store = MemoryStore(f"sqlite:///{config.out_dir / 'memory.sqlite3'}")
    try:

        def factory(mode: str) -> AssistantEngine:
            return build_engine(
                mode, registry=registry, erp=erp, store=store, model=chat_model, structured=config.structured
            )

        @functools.cache
        def callers(name: str | None) -> Caller:  # one ERP read per user and run
            return caller_for(erp, name or DEFAULT_USER)

        yield SuitePieces(
            engine_factory=factory, scorer=TurnScorer(registry, erp), callers=callers, provenance=provenance
        )
    finally:
        store.close()
        erp.engine.dispose()


def run_suite(
    scenarios: Sequence[Scenario],
    config: RunConfig,
    *,
    db_url: str | None = None,
    model: BaseChatModel | None = None,
    console: Console | None = None,
    show_progress: bool = True,
) -> RunOutcome:
    """Open the shared pieces (:func:`open_suite`) and run ``scenarios`` over them."""
    with open_suite(config, db_url=db_url, model=model) as suite:
        return run_benchmark(
            scenarios,
            config,
            engine_factory=suite.engine_factory,
            scorer=suite.scorer,
            callers=suite.callers,
            console=console,
            show_progress=show_progress,
            provenance=suite.provenance,
        )
