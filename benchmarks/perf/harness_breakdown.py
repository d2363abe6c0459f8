"""Where the planner's in-process harness time goes, stage by stage (everything except model time).

``python -m benchmarks.perf.harness_breakdown [--repeat N] [--warmup N]`` runs every turn of the default
suite through the unmodified planner (offline model, in-process AI client, a fresh demo ERP and SQLite
memory, as ``erp-ai bench`` uses) and times its collaborators: ``build_context`` and ``record_turn`` (the
memory store), ``call-1``/``call-2 plumbing`` (the AI client's calls minus model time: prompts, LangChain,
parsing), ``validation`` and ``execution`` (``validate_plan``, ``astream_plan``) and ``other`` (the rest of
``harness_ms``). It prints the median ms per stage and the SQL statements each sends. Absolute milliseconds
depend on the machine; compare runs on the same one.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from collections import defaultdict
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path
from typing import Any, TypeVar
from unittest import mock

from rich.console import Console
from rich.table import Table
from sqlalchemy import Engine, event

from benchmarks.modes import build_engine
from benchmarks.scenario import Scenario, load_scenarios
from benchmarks.stand_ins.models import build_model
from benchmarks.stats import mean, median, percentile
from planner_mode import InProcessAIClient, PlannerAI
from planner_mode.client import AnswerReply, PlanReply
from planner_mode.executor import astream_plan
from planner_mode.validation import validate_plan
from shared.erp.database import open_demo_erp
from shared.memory.context import ConversationContext
from shared.memory.store import MemoryStore, TurnRecord
from shared.operations.sales import sales_registry
from shared.security import DEMO_CALLER

STAGES = (
    "build_context", "call-1 plumbing", "validation", "execution", "call-2 plumbing", "record_turn", "other",
)  # fmt: skip
"""Stages in the order a turn runs them (``other`` is the remainder of ``harness_ms``)."""

T = TypeVar("T")


@dataclass
class _Recorder:
    """Milliseconds and SQL statements per stage, one entry per turn that ran the stage."""

    ms: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    statements: dict[str, list[int]] = field(default_factory=lambda: defaultdict(list))
    harness_ms: list[float] = field(default_factory=list)
    _current: dict[str, float] = field(default_factory=dict)
    _counted: int = 0

    def count_statement(self, *_args: Any) -> None:
        self._counted += 1

    @contextmanager
    def stage(self, name: str, *, sql: bool = True) -> Iterator[None]:
        """Time the block as ``name`` (a second block of one name in a turn adds to it); count its SQL."""
        counted = self._counted
        started = time.perf_counter()
        try:
            yield
        finally:
            self._current[name] = self._current.get(name, 0.0) + (time.perf_counter() - started) * 1000
            if sql:
                self.statements[name].append(self._counted - counted)

    def subtract(self, name: str, ms: float) -> None:
        """Remove time measured inside the stage that is not harness time (the model's)."""
        self._current[name] -= ms

    def end_turn(self, harness_ms: float) -> None:
        for name, ms in self._current.items():
            self.ms[name].append(ms)
        self.ms["other"].append(harness_ms - sum(self._current.values()))
        self.harness_ms.append(harness_ms)
        self._current = {}

    def discard_turn(self) -> None:
        self._current = {}


class _TimedStore(MemoryStore):
    """The memory store with ``build_context`` and ``record_turn`` timed."""

    def __init__(self, url: str, recorder: _Recorder) -> None:
        super().__init__(url)
        self._recorder = recorder

    def build_context(
        self, conversation_id: str, today: date, memory_limit: int = 5, exchanges: int = 1
    ) -> ConversationContext:
        with self._recorder.stage("build_context"):
            return super().build_context(conversation_id, today, memory_limit, exchanges)

    def record_turn(self, conversation_id: str, turn: TurnRecord, **options: Any) -> Any:
        with self._recorder.stage("record_turn"):
            return super().record_turn(conversation_id, turn, **options)


class _TimedClient(InProcessAIClient):
    """The in-process AI client with each call's plumbing (its wall time minus model time) recorded."""

    def __init__(self, ai: PlannerAI, recorder: _Recorder) -> None:
        super().__init__(ai)
        self._recorder = recorder

    async def _plumbing(self, stage: str, stream: AsyncIterator[Any]) -> AsyncGenerator[Any, None]:
        model_ms = 0.0
        with self._recorder.stage(stage, sql=False):
            async for item in stream:
                if not isinstance(item, str):
                    model_ms = item.usage.model_ms
                yield item
        self._recorder.subtract(stage, model_ms)

    def plan(self, *args: Any, **kwargs: Any) -> AsyncGenerator[str | PlanReply, None]:
        return self._plumbing("call-1 plumbing", super().plan(*args, **kwargs))

    def answer(self, *args: Any, **kwargs: Any) -> AsyncGenerator[str | AnswerReply, None]:
        return self._plumbing("call-2 plumbing", super().answer(*args, **kwargs))


def _timed(recorder: _Recorder, name: str, function: Callable[..., T]) -> Callable[..., T]:
    def wrapper(*args: Any, **kwargs: Any) -> T:
        with recorder.stage(name):
            return function(*args, **kwargs)

    return wrapper


def _timed_stream(
    recorder: _Recorder, name: str, function: Callable[..., AsyncIterator[T]]
) -> Callable[..., AsyncIterator[T]]:
    async def wrapper(*args: Any, **kwargs: Any) -> AsyncIterator[T]:
        with recorder.stage(name):
            async for item in function(*args, **kwargs):
                yield item

    return wrapper


@contextmanager
def _counting(recorder: _Recorder, engines: Sequence[Engine]) -> Iterator[None]:
    for engine in engines:
        event.listen(engine, "before_cursor_execute", recorder.count_statement)
    try:
        yield
    finally:
        for engine in engines:
            event.remove(engine, "before_cursor_execute", recorder.count_statement)


def run(scenarios: Sequence[Scenario], repeat: int = 1, warmup: int = 1) -> _Recorder:
    """Run every turn of ``scenarios`` ``repeat`` times (after ``warmup`` untimed scenarios) and record."""
    recorder = _Recorder()
    with tempfile.TemporaryDirectory() as tmp:
        erp = open_demo_erp(f"sqlite:///{Path(tmp) / 'erp.sqlite3'}")
        store = _TimedStore(f"sqlite:///{Path(tmp) / 'memory.sqlite3'}", recorder)
        client = _TimedClient(PlannerAI(build_model("offline")), recorder)
        engine = build_engine("planner", registry=sales_registry(), erp=erp, store=store, ai=client)
        # The engine calls these two by their names in its own module: wrap them there, for this run only.
        where = type(engine).__module__
        validation = mock.patch(f"{where}.validate_plan", _timed(recorder, "validation", validate_plan))
        execution = mock.patch(f"{where}.astream_plan", _timed_stream(recorder, "execution", astream_plan))
        try:
            with validation, execution, _counting(recorder, [erp.engine, store.engine]):
                for scenario in scenarios[:warmup]:
                    conversation = store.create_conversation(user_id=DEMO_CALLER.user_id)
                    for turn in scenario.turns:
                        engine.ask(conversation, turn.user, DEMO_CALLER)
                        recorder.discard_turn()
                recorder.ms.clear()
                recorder.statements.clear()
                for _ in range(repeat):
                    for scenario in scenarios:
                        conversation = store.create_conversation(user_id=DEMO_CALLER.user_id)
                        for turn in scenario.turns:
                            result = engine.ask(conversation, turn.user, DEMO_CALLER)
                            recorder.end_turn(result.harness_ms)
        finally:
            store.close()
            erp.engine.dispose()
    return recorder


def render(recorder: _Recorder) -> Table:
    """Median and 90th percentile ms per stage (over the turns that ran it), and SQL statements per call."""
    turns = len(recorder.harness_ms)
    table = Table(title=f"planner harness time per stage, {turns} turns (offline model, in process)")
    table.add_column("stage")
    table.add_column("turns", justify="right")
    table.add_column("p50 ms", justify="right")
    table.add_column("p90 ms", justify="right")
    table.add_column("SQL statements", justify="right")
    for name in STAGES:
        values = recorder.ms.get(name, [])
        if not values:
            continue
        statements = recorder.statements.get(name)
        table.add_row(
            name,
            str(len(values)),
            f"{median(values):.3f}",
            f"{percentile(values, 90):.3f}",
            f"{mean(statements):.1f}" if statements else "–",
        )
    table.add_row(
        "harness total",
        str(turns),
        f"{median(recorder.harness_ms):.3f}",
        f"{percentile(recorder.harness_ms, 90):.3f}",
        "",
        style="bold",
    )
    return table


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--repeat", type=int, default=1, help="passes over the default scenario suite")
    parser.add_argument("--warmup", type=int, default=1, help="scenarios run first, untimed")
    args = parser.parse_args(argv)
    scenarios = load_scenarios()
    Console().print(render(run(scenarios, repeat=args.repeat, warmup=args.warmup)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
