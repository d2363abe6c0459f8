"""``erp-ai loadtest``: a fleet of stateless AI servers under load, one killed, and the database audited.

The article's scalability claim is that any AI server can serve any request because the ERP owns all state.
:func:`run_loadtest` runs ``conversations`` conversations at once on a fleet of AI server processes on
loopback (:mod:`benchmarks.loadtest_fleet`), through a planner engine whose round-robin
:class:`~planner_mode.HttpAIClient` spreads the requests over them (call 2 streams, as in production),
optionally ``SIGKILL``s one server and restarts it on the same port, then audits the memory database against
what every turn reported (:mod:`benchmarks.loadtest_audit`).

By the client's and the engine's contracts, a request that could not connect is retried on the next server,
and one the dying server was answering fails its turn (kind ``provider``) with nothing recorded.
"""

from __future__ import annotations

import asyncio
import os
import tempfile
import time
import uuid
from collections.abc import Callable, Sequence
from contextlib import ExitStack, suppress
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator
from sqlalchemy.engine import make_url

from benchmarks.loadtest_audit import Audit, TurnOutcome, audit_memory
from benchmarks.loadtest_fleet import Fleet, FleetError, ServeOptions
from benchmarks.modes import build_engine
from benchmarks.run_turns import stream_turn
from benchmarks.stats import percentile
from planner_mode import HttpAIClient
from shared.engine import AssistantEngine
from shared.erp.database import Erp
from shared.memory.store import MemoryStore
from shared.security import DEMO_CALLER, Caller

MAX_SERVERS = 16
MAX_CONVERSATIONS = 512
MAX_SECONDS = 3600.0
TOKEN_ENV = "ERP_AI_SERVER_TOKEN"

QUESTIONS: tuple[str, ...] = (
    "¿Cuánto vendimos en 2025?",
    "¿Quién fue nuestro mejor cliente en 2025?",
    "¿Y cuánto compró?",
    "¿Cuánto vendimos en 2024 y cuánto en 2025?",
    "¿Cuáles fueron los 3 productos más vendidos en 2025?",
    "¿Cuántas facturas tenemos pendientes de cobro y por cuánto?",
    "¿Cuánto vendimos en noviembre de 2026?",
    "¿Cómo se repartieron las ventas de 2025 por categoría?",
    "¿Cuánto nos compró Comercial Guaraní S.A. en 2025?",
    "¿Qué le falta pagar a Empresa ABC?",
    "¿Cuánto facturamos en 2024?",
    "¿Quién fue nuestro mejor cliente el año pasado?",
    "¿Cuánto llevamos vendido este año?",
    "¿Cuánto compró nuestro mejor cliente de 2025?",
    "¿Cuánto vendimos en marzo de 2026?",
    "¿Y en abril?",
    "¿Quiénes fueron nuestros mejores clientes en 2024 y en 2025?",
    "Dame las ventas de este año y el total de facturas pendientes de cobro.",
    "¿Cuánto compró Empresa ABC este año?",
    "Hola, buen día",
)
"""Turn ``i`` of conversation ``c`` asks ``QUESTIONS[(c + i) % n]``: never the same question twice in a
conversation (the audit tells turns apart by their question)."""

EventKind = Literal["killed", "restarted", "healthy", "restart_failed"]


class LoadtestConfig(BaseModel):
    """One load test run. Every count is bounded, and the servers listen on loopback only."""

    model_config = ConfigDict(frozen=True)

    servers: int = Field(default=3, ge=1, le=MAX_SERVERS)
    conversations: int = Field(default=24, ge=1, le=MAX_CONVERSATIONS)
    """Conversations run at once, each one turn after another."""
    turns: int = Field(default=5, ge=1, le=len(QUESTIONS))
    kill_one_at: float | None = Field(default=None, ge=0, le=MAX_SECONDS)
    """Kill one server this many seconds into the load..."""
    kill_after_turns: int | None = Field(default=None, ge=1)
    """...or once this many turns have finished."""
    restart_after: float | None = Field(default=1.0, ge=0, le=MAX_SECONDS)
    """Start the killed server again this many seconds after the kill (``None``: leave it down)."""
    db_url: str | None = None
    """ERP database (the demo is seeded if new); ``None``: a temporary SQLite file."""
    memory_url: str | None = None
    """Conversation memory (default: ``db_url``)."""
    serve: ServeOptions = Field(default_factory=ServeOptions)
    user: str = DEMO_CALLER.user_id
    request_timeout: float = Field(default=60.0, gt=0)
    max_seconds: float = Field(default=300.0, gt=0, le=MAX_SECONDS)
    """Turns not started by then are not sent."""

    @model_validator(mode="after")
    def _one_kill_trigger(self) -> LoadtestConfig:
        if self.kill_one_at is not None and self.kill_after_turns is not None:
            raise ValueError("give kill_one_at or kill_after_turns, not both")
        return self

    @property
    def kills(self) -> bool:
        return self.kill_one_at is not None or self.kill_after_turns is not None

    @property
    def total_turns(self) -> int:
        return self.conversations * self.turns


def load_average() -> tuple[float, float, float] | None:
    """The machine's 1, 5 and 15 minute load averages, rounded (``None`` where the OS does not say)."""
    if not hasattr(os, "getloadavg"):
        return None
    one, five, fifteen = os.getloadavg()
    return round(one, 2), round(five, 2), round(fifteen, 2)


class LatencySummary(BaseModel):
    """Wall time of the turns as their callers saw it, in ms (see :func:`benchmarks.stats.percentile`)."""

    count: int = 0
    p50_ms: float = 0.0
    p95_ms: float = 0.0
    p99_ms: float = 0.0
    max_ms: float = 0.0

    @classmethod
    def of(cls, values: Sequence[float]) -> LatencySummary:
        if not values:
            return cls()
        ordered = sorted(values)
        return cls(
            count=len(ordered),
            p50_ms=round(percentile(ordered, 50), 1),
            p95_ms=round(percentile(ordered, 95), 1),
            p99_ms=round(percentile(ordered, 99), 1),
            max_ms=round(ordered[-1], 1),
        )


class FleetEvent(BaseModel):
    """Something that happened to a server during the load."""

    at_s: float
    """Seconds from the start of the load."""
    kind: EventKind
    server: int


class LoadProgress(BaseModel):
    """What :func:`run_loadtest` reports after each turn and each fleet event."""

    done: int
    total: int
    recorded: int
    failed: int
    event: FleetEvent | None = None


class LoadtestResult(BaseModel):
    """A run's figures and audit; ``ok`` when the audit is clean."""

    servers: int
    conversations: int
    turns: int
    backend: str
    """The ERP database's backend (``sqlite``, ``postgresql``)."""
    memory_backend: str
    provider: str
    kill_one_at: float | None = None
    kill_after_turns: int | None = None
    restart_after: float | None = None
    started_at: str
    elapsed_s: float
    """Wall time of the load: from the first turn sent to the last turn ended."""
    turns_per_s: float
    """Recorded turns per second of load."""
    not_started: int = 0
    """Turns never sent because ``max_seconds`` had passed."""
    latency: LatencySummary
    ai_latency: LatencySummary = Field(default_factory=LatencySummary)
    """The turns' time in their AI calls (queueing at the servers included)."""
    erp_latency: LatencySummary = Field(default_factory=LatencySummary)
    """The rest: when it dominates, more AI servers cannot make turns faster."""
    audit: Audit
    events: list[FleetEvent] = Field(default_factory=list)
    sample_errors: list[str] = Field(default_factory=list)
    """Up to five distinct error messages of failed turns."""
    load_average: tuple[float, float, float] | None = None
    """When the load started (other work on the machine skews the figures)."""
    cpus: int | None = None

    @property
    def ok(self) -> bool:
        return self.audit.clean

    @property
    def killed(self) -> bool:
        """Whether a server was actually killed (a kill due after the load ended never happens)."""
        return any(event.kind == "killed" for event in self.events)


ProgressCallback = Callable[[LoadProgress], None]


def run_loadtest(
    config: LoadtestConfig, *, fleet: Fleet, on_progress: ProgressCallback | None = None
) -> LoadtestResult:
    """Run the load test of ``config`` on ``fleet`` and audit it (blocking; it runs its own event loop).

    The fleet's first ``config.servers`` servers are used; the last of them is the one killed, and it is
    running again when this returns unless ``restart_after`` is None. Raises the ERP's
    ``ConfigurationError`` / ``StorageError`` when a database cannot be opened.
    """
    from shared.erp.database import open_demo_erp
    from shared.erp.users import caller_for
    from shared.memory.store import open_memory_store

    with ExitStack() as stack:
        db_url = config.db_url
        if db_url is None:
            directory = stack.enter_context(tempfile.TemporaryDirectory(prefix="erp-ai-loadtest-"))
            db_url = f"sqlite:///{Path(directory) / 'loadtest.sqlite3'}"
        memory_url = config.memory_url or db_url
        if len(fleet.urls) < config.servers:
            raise ValueError(f"the fleet has {len(fleet.urls)} servers, the run needs {config.servers}")
        erp = open_demo_erp(db_url)
        stack.callback(erp.engine.dispose)
        store = open_memory_store(memory_url)
        stack.callback(store.close)
        caller = caller_for(erp, config.user)
        load = load_average()
        started_at = datetime.now(UTC).isoformat(timespec="seconds")
        run = _Load(config, fleet, on_progress)
        outcomes, elapsed = asyncio.run(run.drive(erp, store, caller))
        audit = audit_memory(store.engine, outcomes)
    recorded = sum(outcome.recorded for outcome in outcomes)
    return LoadtestResult(
        **config.model_dump(include={"servers", "conversations", "turns", "kill_one_at", "kill_after_turns"}),
        backend=make_url(db_url).get_backend_name(),
        memory_backend=make_url(memory_url).get_backend_name(),
        provider=config.serve.provider,
        restart_after=config.restart_after if config.kills else None,
        started_at=started_at,
        elapsed_s=round(elapsed, 3),
        turns_per_s=round(recorded / elapsed, 1) if elapsed > 0 else 0.0,
        not_started=config.total_turns - len(outcomes),
        latency=LatencySummary.of([outcome.latency_ms for outcome in outcomes]),
        ai_latency=LatencySummary.of([outcome.model_ms for outcome in outcomes]),
        erp_latency=LatencySummary.of([outcome.harness_ms for outcome in outcomes]),
        audit=audit,
        events=run.events,
        sample_errors=run.sample_errors,
        load_average=load,
        cpus=os.cpu_count(),
    )


class _Load:
    """One run's load: the conversations, the kill and the restart, on one event loop."""

    def __init__(self, config: LoadtestConfig, fleet: Fleet, on_progress: ProgressCallback | None) -> None:
        self.config = config
        self.fleet = fleet
        self.on_progress = on_progress
        self.run_id = uuid.uuid4().hex[:12]
        self.outcomes: list[TurnOutcome] = []
        self.events: list[FleetEvent] = []
        self.sample_errors: list[str] = []
        self.victim = config.servers - 1
        self._started = 0.0
        self._kill_due = asyncio.Event()  # set once kill_after_turns turns have finished
        self._killing = False

    async def drive(self, erp: Erp, store: MemoryStore, caller: Caller) -> tuple[list[TurnOutcome], float]:
        """Run every conversation (and the kill); return the outcomes and the load's wall time.

        Under the AI server's collector settings (:func:`planner_mode.server.serving_gc`): this process is the
        ERP side of every turn, and full collections of its heap would show up as if the fleet were slow.
        """
        from planner_mode.server import serving_gc
        from shared.operations.sales import sales_registry

        client = HttpAIClient(
            self.fleet.urls[: self.config.servers],
            token=os.environ.get(TOKEN_ENV),
            timeout=self.config.request_timeout,
        )
        engine = build_engine("planner", registry=sales_registry(), erp=erp, store=store, ai=client)
        async with serving_gc():
            self._started = time.perf_counter()
            killer = asyncio.create_task(self._kill_and_restart()) if self.config.kills else None
            try:
                await asyncio.gather(
                    *(self._conversation(engine, caller, index) for index in range(self.config.conversations))
                )
                elapsed = time.perf_counter() - self._started
            finally:
                if killer is not None:
                    await self._settle(killer)
                await client.aclose()
        return self.outcomes, elapsed

    async def _conversation(self, engine: AssistantEngine, caller: Caller, index: int) -> None:
        """One conversation's turns, one after another, until done or past ``max_seconds``."""
        conversation_id = f"lt-{self.run_id}-{index:04d}"
        for turn in range(self.config.turns):
            if time.perf_counter() - self._started > self.config.max_seconds:
                return
            question = QUESTIONS[(index + turn) % len(QUESTIONS)]
            self.outcomes.append(await self._turn(engine, caller, conversation_id, turn, question))
            self._report()

    async def _turn(
        self, engine: AssistantEngine, caller: Caller, conversation_id: str, index: int, question: str
    ) -> TurnOutcome:
        started = time.perf_counter()
        turn: dict[str, Any] = {"conversation_id": conversation_id, "index": index, "question": question}
        turn["started_s"] = round(started - self._started, 4)
        try:
            result = await stream_turn(engine, conversation_id, question, caller)  # call 2 streams
        except Exception as exc:  # the engine promises a result; anything else is a finding, not a crash
            self._note_error(f"{type(exc).__name__}: {exc}")
            return TurnOutcome(**turn, recorded=False, failure="crash", latency_ms=self._since(started))
        if result.failure is not None and result.errors:
            self._note_error(result.errors[-1])
        return TurnOutcome(
            **turn,
            recorded=result.recorded,
            failure=result.failure,
            stale_state=result.stale_state,
            state=dict(result.state),
            latency_ms=self._since(started),
            model_ms=result.model_ms,
            harness_ms=result.harness_ms,
        )

    @staticmethod
    def _since(started: float) -> float:
        return (time.perf_counter() - started) * 1000

    def _report(self, event: FleetEvent | None = None) -> None:
        done = len(self.outcomes)
        threshold = self.config.kill_after_turns
        if threshold is not None and done >= threshold:
            self._kill_due.set()
        if self.on_progress is not None:
            self.on_progress(
                LoadProgress(
                    done=done,
                    total=self.config.total_turns,
                    recorded=sum(outcome.recorded for outcome in self.outcomes),
                    failed=sum(outcome.failure is not None for outcome in self.outcomes),
                    event=event,
                )
            )

    def _note_error(self, message: str) -> None:
        if len(self.sample_errors) < 5 and message not in self.sample_errors:
            self.sample_errors.append(message[:300])

    def _event(self, kind: EventKind) -> None:
        event = FleetEvent(at_s=round(time.perf_counter() - self._started, 3), kind=kind, server=self.victim)
        self.events.append(event)
        self._report(event)

    async def _kill_and_restart(self) -> None:
        """Kill the victim when due, then start it again after ``restart_after`` and wait until it answers."""
        if self.config.kill_one_at is not None:
            await asyncio.sleep(self.config.kill_one_at)
        else:
            await self._kill_due.wait()
        self._killing = True
        await asyncio.to_thread(self.fleet.kill, self.victim)
        self._event("killed")
        if self.config.restart_after is None:
            return
        await asyncio.sleep(self.config.restart_after)
        await asyncio.to_thread(self.fleet.restart, self.victim)
        self._event("restarted")
        try:
            await asyncio.to_thread(self.fleet.wait_healthy, self.victim)
        except FleetError as exc:  # the run's figures stand; the report says the server stayed down
            self._note_error(str(exc))
            self._event("restart_failed")
        else:
            self._event("healthy")

    async def _settle(self, killer: asyncio.Task[None]) -> None:
        """After the load: a kill not yet begun is called off; one begun is seen through (the restart)."""
        if not self._killing:
            killer.cancel()
        with suppress(asyncio.CancelledError):
            await killer
