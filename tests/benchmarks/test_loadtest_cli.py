"""``erp-ai loadtest``: it starts real ``erp-ai serve`` processes, prints JSON, writes the README block.

The command on the ``erp-ai`` app (the ``app`` fixture of conftest.py).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from benchmarks.loadtest import FleetEvent, LatencySummary, LoadtestResult
from benchmarks.loadtest_audit import Audit
from benchmarks.loadtest_report import BLOCK, scaling_block
from benchmarks.report.readme import end_marker, start_marker, update_readme


def readme_with_block(path: Path) -> Path:
    path.write_text(f"# Demo\n\n## Scaling out\n\n{start_marker(BLOCK)}\n{end_marker(BLOCK)}\n\nEnd.\n")
    return path


def test_loadtest_runs_real_servers_prints_json_and_writes_the_readme_block(
    app: typer.Typer, tmp_path: Path
) -> None:
    readme = readme_with_block(tmp_path / "README.md")
    args = ["loadtest", "--servers", "1", "--conversations", "2", "--turns", "2", "--json", "--no-progress"]
    result = CliRunner().invoke(app, [*args, "--readme", str(readme)])

    assert result.exit_code == 0, result.output
    body = json.loads(result.stdout)
    assert body["audit"]["attempted"] == 4
    assert body["audit"]["recorded"] == 4
    assert (body["audit"]["lost"], body["audit"]["duplicated"]) == (0, 0)
    assert (body["servers"], body["backend"], body["provider"]) == (1, "sqlite", "offline")
    text = readme.read_text()
    assert text.startswith("# Demo\n\n## Scaling out\n\n<!-- BENCH-FIGURES:scaling-out:START")
    assert "| 1 | sqlite | no | 4 | 4 | 0 | 0 | 0 | 0 / 0 |" in text
    assert text.endswith(f"{end_marker(BLOCK)}\n\nEnd.\n")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--servers", "0"], "--servers"),
        (["--turns", "99"], "--turns"),
        (["--db-url", "nosuchdb://x"], "Error"),
    ],
)
def test_loadtest_refuses_bad_options_with_exit_code_2(
    app: typer.Typer, args: list[str], message: str
) -> None:
    result = CliRunner().invoke(app, ["loadtest", "--no-progress", *args])
    assert result.exit_code == 2
    assert message in result.output


def result(
    servers: int, killed: bool, *, lost: int = 0, backend: str = "sqlite", turns_per_s: float = 29.5
) -> LoadtestResult:
    failed = {"provider": 2} if killed else {}
    events = [
        FleetEvent(at_s=2.0, kind="killed", server=servers - 1),
        FleetEvent(at_s=3.5, kind="healthy", server=servers - 1),
    ]
    return LoadtestResult(
        servers=servers,
        conversations=24,
        turns=5,
        backend=backend,
        memory_backend=backend,
        provider="offline",
        kill_one_at=2.0 if killed else None,
        restart_after=1.0 if killed else None,
        started_at="2026-12-01T10:00:00+00:00",
        elapsed_s=4.0,
        turns_per_s=turns_per_s,
        latency=LatencySummary(count=120, p50_ms=700, p95_ms=1100, p99_ms=1300, max_ms=1400),
        audit=Audit(
            attempted=120,
            recorded=120 - sum(failed.values()),
            failed=sum(failed.values()),
            failed_by_kind=failed,
            lost=lost,
        ),
        events=events if killed else [],
        load_average=(0.4, 0.5, 0.6),
        cpus=2,
    )


def test_the_scaling_block_has_one_row_per_run_and_says_how_it_was_measured(tmp_path: Path) -> None:
    runs = [result(1, False), result(3, True, backend="postgresql")]
    block = scaling_block(runs)
    assert block.startswith(start_marker(BLOCK, "erp-ai loadtest --matrix … --readme README.md"))
    assert "| 1 | sqlite | no | 120 | 120 | 0 | 0 | 0 | 0 / 0 | 29.5 | 700 / 1300 | 0 / 0 |" in block
    assert "| 3 | postgresql | at 2.0 s, back at 3.5 s | 120 | 118 | 2 (provider 2) | 0 | 0 |" in block
    assert "load average 0.4–0.4" in block
    assert "All 2 runs pass the audit" in block
    assert "by fleet size: 3 server(s): 2; every failure of kind provider" in block
    readme = readme_with_block(tmp_path / "README.md")
    update_readme(readme, BLOCK, block)
    assert block in readme.read_text()


def test_the_scaling_block_says_when_a_run_failed_the_audit() -> None:
    block = scaling_block([result(1, False), result(3, True, lost=2)])
    assert "1 of 2 runs failed the audit" in block
    with pytest.raises(ValueError, match="no load test results"):
        scaling_block([])


def test_the_scaling_block_compares_the_most_servers_with_the_fewest_per_database() -> None:
    runs = [
        result(1, False, turns_per_s=20.0),
        result(3, False, turns_per_s=30.0),
        result(3, True, turns_per_s=5.0),
        result(1, False, backend="postgresql", turns_per_s=10.0),
    ]
    block = scaling_block(runs)
    assert "Without a kill, 3 servers instead of 1 gave 1.50× on sqlite (20.0 → 30.0) turns/s." in block
