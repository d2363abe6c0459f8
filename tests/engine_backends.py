"""Engine fixtures on both database backends, and the three entry points of a turn, shared by the planner
and tool-calling test directories.

Their conftests import these fixtures, so every engine test that takes ``erp`` (the seeded demo ERP) or
``memory_store`` runs once on SQLite and once on a real PostgreSQL (:mod:`tests.postgres`). One
session-wide ``backend`` parameter drives both, so a test never mixes a SQLite ERP with a PostgreSQL store.
The directories' conftests say what the PostgreSQL variants cost. :func:`run_turn` runs a turn through
``ask``, ``aask`` or ``astream``; :func:`streamed` keeps a streamed turn's events, :func:`deltas` their answer
text; :func:`comparable` is what must not depend on the entry point.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, Final, Literal

import pytest

from shared.engine import AssistantEngine
from shared.erp.database import Erp, open_demo_erp
from shared.events import AnswerDelta, TurnDone, TurnEvent
from shared.memory.store import MemoryStore
from shared.security import DEMO_CALLER, Caller
from shared.turn import TurnResult
from tests.postgres import BACKENDS, demo_erp_url, fresh_url

__all__ = [
    "ENTRIES",
    "SQLITE_ONLY",
    "Entry",
    "backend",
    "comparable",
    "deltas",
    "erp",
    "fresh_db_url",
    "memory_store",
    "run_turn",
    "streamed",
]

Entry = Literal["ask", "aask", "astream"]
ENTRIES: tuple[Entry, ...] = ("ask", "aask", "astream")
MEASURED = {"model_ms", "harness_ms", "total_ms", "first_answer_ms"}
"""What differs between two runs of one turn: measured times (and ``first_answer_ms``, ``astream``'s own)."""


SQLITE_ONLY: Final = pytest.mark.parametrize("backend", ["sqlite"], indirect=True, scope="session")
"""For a test whose subject is not the database (the entry points' equivalence over the whole default suite):
it runs on SQLite alone. ``tests/benchmarks/test_default_suite.py`` and the store and ERP tests keep both
backends under the same suite."""


@pytest.fixture(scope="session", params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    """The database backend of a test's demo ERP and memory store: ``sqlite``, then ``postgresql`` (whose
    server is started here, so a missing PostgreSQL skips, or in CI fails, the test at setup)."""
    backend: str = request.param
    if backend == "postgresql":
        request.getfixturevalue("postgres_server")
    return backend


@pytest.fixture(scope="session")
def erp(request: pytest.FixtureRequest, backend: str) -> Iterator[Erp]:
    """The seeded demo ERP (read-only) on the test's backend: overrides the root ``erp``."""
    handle = open_demo_erp(demo_erp_url(request, backend))
    yield handle
    handle.engine.dispose()


@pytest.fixture
def fresh_db_url(request: pytest.FixtureRequest, backend: str, tmp_path: Path) -> Callable[[], str]:
    """A maker of fresh, empty databases on the test's backend, as many as the test asks for."""
    numbers = itertools.count(1)

    def make() -> str:
        directory = tmp_path / f"db{next(numbers)}"
        directory.mkdir()
        return fresh_url(request, backend, directory)

    return make


@pytest.fixture
def memory_store(fresh_db_url: Callable[[], str]) -> Iterator[MemoryStore]:
    """A fresh conversation memory store on the test's backend: overrides the root ``memory_store``."""
    store = MemoryStore(fresh_db_url())
    yield store
    store.close()


async def streamed(
    engine: AssistantEngine, conversation_id: str, question: str, caller: Caller = DEMO_CALLER, **options: Any
) -> tuple[list[TurnEvent], TurnResult]:
    """Every event of a streamed turn, which ends in its one ``TurnDone``, and that turn's result."""
    events = [event async for event in engine.astream(conversation_id, question, caller, **options)]
    assert [type(event) for event in events].count(TurnDone) == 1 and isinstance(events[-1], TurnDone)
    return events, events[-1].result


async def run_turn(
    engine: AssistantEngine,
    entry: Entry | str,
    conversation_id: str,
    question: str,
    caller: Caller = DEMO_CALLER,
    **options: Any,
) -> TurnResult:
    """One turn through ``engine.<entry>``: ``ask``, ``aask`` or ``astream`` (its last event's result)."""
    if entry == "ask":
        return engine.ask(conversation_id, question, caller, **options)
    if entry == "aask":
        return await engine.aask(conversation_id, question, caller, **options)
    return (await streamed(engine, conversation_id, question, caller, **options))[1]


def deltas(events: list[TurnEvent]) -> list[str]:
    """The answer text of a streamed turn's events, delta by delta."""
    return [event.text for event in events if isinstance(event, AnswerDelta)]


def comparable(result: TurnResult) -> dict[str, Any]:
    """A turn's result without its measured times: what must not depend on the entry point."""
    data = result.model_dump(exclude=MEASURED)
    for operation in data["operations"]:
        del operation["duration_ms"]
    for call in data["calls"]:  # what a call read and wrote is the same; its times are measured
        del call["ms"], call["first_token_ms"]
    return data
