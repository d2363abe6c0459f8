"""A turn with a reader (``astream``) and without one (``aask``; ``ask`` runs ``aask``) is the same turn:
every scenario file of the default suite through both, offline, on SQLite (``SQLITE_ONLY``), each with a
fresh store and offline model, as the scenarios' users (the first :data:`TURNS_PER_SCENARIO` turns of each
conversation). The turns' records must be equal except for measured times, and so must the stored
conversations; the simulated times are deterministic, so the first answer found while streaming and the one
read from the run afterwards must come from the same model call.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from benchmarks.scenario import default_scenarios_dir, load_file
from benchmarks.stand_ins.offline import OfflineSalesModel
from shared.erp.users import DEFAULT_USER, caller_for
from shared.errors import ConversationAccessDenied
from shared.memory.store import MemoryStore
from shared.security import Caller
from tests.engine_backends import SQLITE_ONLY, comparable, deltas, streamed
from toolcalling_mode import ContextPolicy, ToolCallingEngine

SCENARIO_FILES = sorted(default_scenarios_dir().glob("*.yaml"))
TURNS_PER_SCENARIO = 10


async def run_file(
    path: Path, driver: str, erp: Any, registry: Any, store: MemoryStore, policy: ContextPolicy
) -> list[Any]:
    """Every turn of every scenario in ``path`` through ``driver``; a refused turn is ``"denied"``."""
    engine = ToolCallingEngine(
        registry, erp, store, OfflineSalesModel(latency_profile="gpu-8b"), policy=policy
    )
    callers = functools.cache(lambda name: caller_for(erp, name or DEFAULT_USER))
    outcomes: list[Any] = []
    for scenario in load_file(path):
        for turn in scenario.turns[:TURNS_PER_SCENARIO]:
            caller: Caller = callers(turn.as_user or scenario.user)
            try:
                outcomes.append(await drive(engine, driver, scenario.id, turn.user, caller))
            except ConversationAccessDenied:
                outcomes.append("denied")
    return outcomes


async def drive(
    engine: ToolCallingEngine, driver: str, conversation: str, question: str, caller: Caller
) -> Any:
    if driver == "aask":
        return comparable(await engine.aask(conversation, question, caller))
    events, result = await streamed(engine, conversation, question, caller)
    if result.failure is None:  # what the user read while it streamed is the answer
        assert "".join(deltas(events)) == result.answer, (conversation, question)
    return comparable(result)


@SQLITE_ONLY
@pytest.mark.parametrize("policy", ["windowed", "full_history"])
@pytest.mark.parametrize("path", SCENARIO_FILES, ids=[path.stem for path in SCENARIO_FILES])
async def test_astream_gives_the_turns_of_aask(
    erp: Any, registry: Any, fresh_db_url: Callable[[], str], path: Path, policy: ContextPolicy
) -> None:
    runs: dict[str, tuple[list[Any], list[Any]]] = {}
    for driver in ("aask", "astream"):
        store = MemoryStore(fresh_db_url())
        try:
            outcomes = await run_file(path, driver, erp, registry, store, policy)
            stored = [
                [(m.role, m.content, m.metadata) for m in store.history(scenario.id)]
                for scenario in load_file(path)
            ]
        finally:
            store.close()
        runs[driver] = (outcomes, stored)

    assert any(outcome != "denied" for outcome in runs["aask"][0])
    assert runs["astream"] == runs["aask"]
