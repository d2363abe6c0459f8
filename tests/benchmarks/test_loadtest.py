"""``run_loadtest`` end to end: two real AI server processes, one killed mid-run, on SQLite and PostgreSQL.

The servers are forked (:func:`~benchmarks.loadtest_fleet.forked_server`) so that the start and the restart
after the kill take a fraction of a second; the loads are tiny. What is asserted holds however fast the
machine is: the kill is triggered by the number of finished turns, not by the clock.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from benchmarks.loadtest import LatencySummary, LoadProgress, LoadtestConfig, run_loadtest
from benchmarks.loadtest_fleet import Fleet, ServeOptions, forked_server

CONVERSATIONS = 4
TURNS = 3


@pytest.fixture(scope="module")
def fleet() -> Iterator[Fleet]:
    with Fleet(forked_server(ServeOptions()), 2, startup_timeout=120) as started:
        yield started


@pytest.fixture(params=["sqlite", "postgresql"])
def databases(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[str, str]:
    """``(ERP url, memory url)``: the session's seeded demo ERP, and an empty memory database of its own."""
    if request.param == "sqlite":
        return request.getfixturevalue("erp_db_url"), f"sqlite:///{tmp_path / 'memory.sqlite3'}"
    return request.getfixturevalue("postgres_demo_erp_url"), request.getfixturevalue("postgres_url")


def test_a_server_killed_mid_run_loses_and_duplicates_nothing(
    fleet: Fleet, databases: tuple[str, str]
) -> None:
    db_url, memory_url = databases
    seen: list[LoadProgress] = []
    config = LoadtestConfig(
        servers=2,
        conversations=CONVERSATIONS,
        turns=TURNS,
        kill_after_turns=CONVERSATIONS,
        restart_after=0.0,
        db_url=db_url,
        memory_url=memory_url,
    )

    result = run_loadtest(config, fleet=fleet, on_progress=seen.append)

    audit = result.audit
    assert [event.kind for event in result.events] == ["killed", "restarted", "healthy"]
    assert audit.attempted == CONVERSATIONS * TURNS
    assert (audit.lost, audit.duplicated, audit.out_of_order) == (0, 0, 0)
    assert (audit.half_recorded, audit.phantom, audit.inconsistent_conversations) == (0, 0, 0)
    assert audit.stale_turns == 0
    # Only the requests the dying server was answering may fail (one turn in flight per conversation),
    # always as a provider failure; every other turn was recorded whole.
    assert set(audit.failed_by_kind) <= {"provider"}
    assert audit.failed <= CONVERSATIONS
    assert audit.recorded == audit.attempted - audit.failed
    assert audit.messages_found == audit.messages_expected == 2 * audit.recorded
    assert result.ok
    assert (result.backend, result.memory_backend) == (databases[0].split(":")[0].split("+")[0],) * 2
    assert fleet.running(1)  # restarted: the fleet is whole again for the next run
    assert seen[-1].done == audit.attempted
    assert [step.event.kind for step in seen if step.event is not None] == ["killed", "restarted", "healthy"]


def test_a_kill_due_after_the_load_never_happens(fleet: Fleet, erp_db_url: str, tmp_path: Path) -> None:
    config = LoadtestConfig(
        servers=2,
        conversations=1,
        turns=1,
        kill_after_turns=5,
        db_url=erp_db_url,
        memory_url=f"sqlite:///{tmp_path / 'memory.sqlite3'}",
    )
    result = run_loadtest(config, fleet=fleet)
    assert not result.killed
    assert result.events == []
    assert (result.audit.recorded, result.ok) == (1, True)
    assert fleet.running(0) and fleet.running(1)


def test_a_run_needs_as_many_servers_as_it_names(fleet: Fleet) -> None:
    with pytest.raises(ValueError, match="the fleet has 2 servers, the run needs 3"):
        run_loadtest(LoadtestConfig(servers=3), fleet=fleet)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"servers": 0}, "greater than or equal to 1"),
        ({"servers": 17}, "less than or equal to 16"),
        ({"turns": 21}, "less than or equal to 20"),
        ({"kill_one_at": 1.0, "kill_after_turns": 3}, "not both"),
    ],
)
def test_a_run_is_bounded(options: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        LoadtestConfig.model_validate(options)


def test_the_latency_summary_has_the_interpolated_percentiles_and_the_maximum() -> None:
    summary = LatencySummary.of([30.0, 10.0, 20.0])
    assert (summary.count, summary.p50_ms, summary.p99_ms, summary.max_ms) == (3, 20.0, 29.8, 30.0)
    assert LatencySummary.of([]).count == 0
