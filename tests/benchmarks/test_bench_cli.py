"""`bench` and `report` end to end on a tiny suite with the offline model (benchmarks/bench_cli.py).

The lead's root app is tested in test_cli.py; here the commands are registered on a bare Typer app.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from benchmarks.results import read_results
from benchmarks.runner import RunConfig, run_suite
from benchmarks.scenario import Scenario
from shared.llm.factory import build_chat_model

runner = CliRunner()


def bench_args(suite: Path, out: Path, db_url: str, *extra: str) -> list[str]:
    return [
        "bench",
        "--scenarios",
        str(suite),
        "--out",
        str(out),
        "--db-url",
        db_url,
        "--no-progress",
        *extra,
    ]


def test_bench_runs_all_modes_and_writes_every_report(
    app: typer.Typer, tiny_suite_path: Path, tmp_path: Path, erp_db_url: str, erp: object
) -> None:
    out = tmp_path / "run"
    result = runner.invoke(app, bench_args(tiny_suite_path, out, erp_db_url))
    assert result.exit_code == 0, result.output
    for name in ("results.jsonl", "report.md", "report.html", "memory.sqlite3"):
        assert (out / name).exists(), name
    results = read_results(out / "results.jsonl")
    assert results.meta.modes == ["planner", "toolcalling", "toolcalling-full"]
    assert len(results.rows) == 9
    planner = [r for r in results.rows if r.mode == "planner"]
    assert all(r.model_calls <= 2 for r in planner)
    assert next(r for r in planner if r.user == "Hola").model_calls == 1
    assert "deterministic stand-in" in result.output
    assert "planner" in result.output and "accuracy" in result.output


def test_resume_skips_done_units_and_fail_under_sets_the_exit_code(
    app: typer.Typer, tiny_suite_path: Path, tmp_path: Path, erp_db_url: str, erp: object
) -> None:
    out = tmp_path / "run"
    args = bench_args(tiny_suite_path, out, erp_db_url, "--modes", "planner")
    assert runner.invoke(app, args).exit_code == 0
    again = runner.invoke(app, [*args, "--resume", "--fail-under", "101"])
    assert "0 units run, 2 resumed" in again.output
    assert again.exit_code == 1 and "accuracy below" in again.output
    assert len(read_results(out / "results.jsonl").rows) == 3


def test_report_re_renders_from_results(
    app: typer.Typer, tiny_suite_path: Path, tmp_path: Path, erp_db_url: str, erp: object
) -> None:
    out = tmp_path / "run"
    assert (
        runner.invoke(app, bench_args(tiny_suite_path, out, erp_db_url, "--modes", "planner")).exit_code == 0
    )
    (out / "report.html").unlink()
    result = runner.invoke(app, ["report", str(out / "results.jsonl"), "--out", str(tmp_path / "again")])
    assert result.exit_code == 0, result.output
    assert (tmp_path / "again" / "report.html").exists() and (tmp_path / "again" / "report.md").exists()
    assert "planner" in result.output


def test_default_out_is_timestamped_with_a_latest_link(
    app: typer.Typer,
    tiny_suite_path: Path,
    tmp_path: Path,
    erp_db_url: str,
    erp: object,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.chdir(tmp_path)
    args = [
        "bench",
        "--scenarios",
        str(tiny_suite_path),
        "--db-url",
        erp_db_url,
        "--no-progress",
        "--modes",
        "planner",
    ]
    assert runner.invoke(app, args).exit_code == 0
    latest = tmp_path / "reports" / "latest"
    assert (latest / "report.html").exists()
    runs = [p for p in (tmp_path / "reports").iterdir() if p.name != "latest"]
    assert len(runs) == 1 and latest.resolve() == runs[0].resolve()


def test_report_on_a_file_that_is_not_a_results_file_exits_with_a_clear_message(
    app: typer.Typer, tmp_path: Path
) -> None:
    bad = tmp_path / "results.jsonl"
    bad.write_text('{"kind": "turn", "mode": "planner"}\n', encoding="utf-8")
    result = runner.invoke(app, ["report", str(bad)])
    assert result.exit_code == 2 and "results.jsonl:1" in result.output


def test_resume_with_another_latency_profile_exits_with_a_clear_message(
    app: typer.Typer, tiny_suite_path: Path, tmp_path: Path, erp_db_url: str, erp: object
) -> None:
    out = tmp_path / "run"
    args = bench_args(tiny_suite_path, out, erp_db_url, "--modes", "planner")
    assert runner.invoke(app, args).exit_code == 0
    again = runner.invoke(app, [*args, "--resume", "--latency-profile", "gpu-8b"])
    assert again.exit_code == 2 and "latency_profile" in again.output


@pytest.mark.parametrize(
    ("extra", "message"),
    [(["--modes", "planner,agente"], "agente"), (["--tag", "nada"], "no scenario")],
)
def test_bad_options_exit_with_a_clear_message(
    app: typer.Typer, tiny_suite_path: Path, tmp_path: Path, erp_db_url: str, extra: list[str], message: str
) -> None:
    result = runner.invoke(app, bench_args(tiny_suite_path, tmp_path / "run", erp_db_url, *extra))
    assert result.exit_code == 2 and message in result.output


def test_help_lists_the_options(app: typer.Typer) -> None:
    result = runner.invoke(app, ["bench", "--help"], env={"COLUMNS": "200", "TERM": "dumb"})
    for option in (
        "--modes",
        "--provider",
        "--repeat",
        "--concurrency",
        "--latency-profile",
        "--resume",
        "--fail-under",
    ):
        assert option in result.output


def test_a_provider_failing_on_purpose_is_recorded_through_the_real_engines(
    tiny_suite: list[Scenario], tmp_path: Path, erp_db_url: str, erp: object
) -> None:
    config = RunConfig(modes=["planner", "toolcalling"], out_dir=tmp_path / "run")
    failing = build_chat_model("offline", faults="provider_error")
    outcome = run_suite(tiny_suite, config, db_url=erp_db_url, model=failing, show_progress=False)
    assert len(outcome.rows) == 6, "the run completed"
    assert all(row.failed and not row.passed and row.errors for row in outcome.rows)
    lines = (tmp_path / "run" / "results.jsonl").read_text().splitlines()
    assert json.loads(lines[-1])["kind"] == "turn"


def test_a_latency_profile_adds_simulated_latency(
    tiny_suite: list[Scenario], tmp_path: Path, erp_db_url: str, erp: object
) -> None:
    config = RunConfig(modes=["planner"], out_dir=tmp_path / "run", latency_profile="gpu-8b")
    outcome = run_suite(tiny_suite, config, db_url=erp_db_url, show_progress=False)
    assert all(row.simulated_model_ms and row.simulated_model_ms > 50 for row in outcome.rows)
    assert outcome.meta.latency_profile == "gpu-8b"
