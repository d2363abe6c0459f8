"""`bench` and `report` end to end on a tiny suite with the offline model, one model or a matrix of targets
(``--target``; benchmarks/cli/bench.py)."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from benchmarks.report.readme import readme_block
from benchmarks.report.runs import summarize_run
from benchmarks.results import read_results
from benchmarks.runner import RunConfig, run_suite
from benchmarks.scenario import Scenario
from benchmarks.stand_ins import build_model
from tests.benchmarks.bench_fakes import TINY_SUITE

runner = CliRunner()


def run_line(out: Path) -> dict[str, Any]:
    """The settings line a run wrote first in its results file."""
    return dict(json.loads((out / "results.jsonl").read_text().splitlines()[0]))


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


def test_bench_runs_all_modes_and_writes_every_report_which_report_re_renders(
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

    again = runner.invoke(app, ["report", str(out / "results.jsonl"), "--out", str(tmp_path / "again")])
    assert again.exit_code == 0, again.output
    assert (tmp_path / "again" / "report.html").exists() and (tmp_path / "again" / "report.md").exists()
    assert "planner" in again.output


def test_fail_under_sets_the_exit_code_when_a_mode_is_below_it(
    app: typer.Typer, tmp_path: Path, erp_db_url: str, erp: object
) -> None:
    suite = tmp_path / "unmet.yaml"
    unmet = TINY_SUITE.replace('facts: ["ventas_anuales(anio=2025).total"]', "answer_contains: [zzz-nunca]")
    suite.write_text(unmet, encoding="utf-8")

    result = runner.invoke(
        app, bench_args(suite, tmp_path / "run", erp_db_url, "--modes", "planner", "--fail-under", "90")
    )

    assert result.exit_code == 1 and "accuracy below 90%" in result.output


def test_resume_skips_done_units_and_refuses_other_settings_and_fail_under_sets_the_exit_code(
    app: typer.Typer, tiny_suite_path: Path, tmp_path: Path, erp_db_url: str, erp: object
) -> None:
    out = tmp_path / "run"
    args = bench_args(tiny_suite_path, out, erp_db_url, "--modes", "planner")
    assert runner.invoke(app, args).exit_code == 0
    again = runner.invoke(app, [*args, "--resume", "--fail-under", "99"])
    assert "0 units run, 2 resumed" in again.output and again.exit_code == 0  # every turn passed
    assert len(read_results(out / "results.jsonl").rows) == 3
    impossible = runner.invoke(app, [*args, "--resume", "--fail-under", "101"])
    assert impossible.exit_code == 2 and "--fail-under" in impossible.output  # no accuracy passes 100%
    changed = runner.invoke(app, [*args, "--resume", "--latency-profile", "gpu-8b"])
    assert changed.exit_code == 2 and "latency_profile" in changed.output


def test_default_out_is_timestamped_with_a_latest_link(
    app: typer.Typer,
    tiny_suite_path: Path,
    tmp_path: Path,
    erp_db_url: str,
    erp: object,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.chdir(tmp_path)
    args = ["bench", "--scenarios", str(tiny_suite_path), "--db-url", erp_db_url, "--no-progress"]
    assert runner.invoke(app, [*args, "--modes", "planner"]).exit_code == 0
    latest = tmp_path / "reports" / "latest"
    assert (latest / "report.html").exists()
    runs = [p for p in (tmp_path / "reports").iterdir() if p.name != "latest"]
    assert len(runs) == 1 and latest.resolve() == runs[0].resolve()
    assert os.readlink(latest) == runs[0].name  # relative: the reports folder can move with its link


def test_report_on_a_file_that_is_not_a_results_file_exits_with_a_clear_message(
    app: typer.Typer, tmp_path: Path
) -> None:
    bad = tmp_path / "results.jsonl"
    bad.write_text('{"kind": "turn", "mode": "planner"}\n', encoding="utf-8")
    result = runner.invoke(app, ["report", str(bad)])
    path_and_line = "results.jsonl:1"  # the console may wrap the path anywhere, even inside a name
    assert result.exit_code == 2 and path_and_line in "".join(result.output.split())


def test_a_provider_failing_on_purpose_is_recorded_through_the_real_engines(
    tiny_suite: list[Scenario], tmp_path: Path, erp_db_url: str, erp: object
) -> None:
    config = RunConfig(modes=["planner", "toolcalling"], out_dir=tmp_path / "run")
    failing = build_model("offline", faults="provider_error")
    outcome = run_suite(tiny_suite, config, db_url=erp_db_url, model=failing, show_progress=False)
    assert len(outcome.rows) == 6, "the run completed"
    assert all(row.failed and not row.passed and row.errors for row in outcome.rows)
    lines = (tmp_path / "run" / "results.jsonl").read_text().splitlines()
    assert json.loads(lines[-1])["kind"] == "turn"


def test_two_targets_give_one_results_file_and_one_report_with_the_grid(
    app: typer.Typer, tiny_suite_path: Path, tmp_path: Path, erp_db_url: str, erp: object
) -> None:
    out = tmp_path / "run"
    args = ["--target", "a=offline", "--target", "b=offline:offline-sales", "--latency-profile", "gpu-8b"]
    result = runner.invoke(app, bench_args(tiny_suite_path, out, erp_db_url, *args, "--repeat", "2"))
    assert result.exit_code == 0, result.output

    results = read_results(out / "results.jsonl")
    assert [t.spec for t in results.meta.targets] == ["a=offline", "b=offline:offline-sales"]
    assert len(results.rows) == 2 * 3 * 3 * 2  # targets × modes × turns × repetitions
    assert {r.target for r in results.rows} == {"a", "b"}
    assert (out / "memory-a.sqlite3").exists() and (out / "memory-b.sqlite3").exists()
    assert "2 targets" in result.output and "36 units run" not in result.output

    text = (out / "report.md").read_text(encoding="utf-8")
    assert "Targets `a` (offline offline-sales), `b` (offline offline-sales)" in text
    assert "prefix cache modelled: yes" in text
    matrix = text.split("## Model matrix")[1].split("\n## ")[0]
    for grid in (
        "Accuracy (95% CI)",
        "Model calls per turn (mean)",
        "Input tokens per turn (mean)",
        "Output tokens per turn (mean)",
        "Cached share of input",
        "Latency p50 ms, simulated",
        "Latency p50 ms, measured",
        "First answer p50 ms, simulated",
        "First answer p50 ms, measured",
        "Valid plans",
        "USD per 1,000 turns",
    ):
        assert f"### {grid}" in matrix, grid
    accuracy = matrix.split("### Accuracy (95% CI)")[1].split("###")[0]
    assert "| target | planner | toolcalling | toolcalling-full |" in accuracy
    assert re.search(r"\| a \| \d+\.\d% \(\d", accuracy) and re.search(r"\| b \| \d+\.\d% \(\d", accuracy)
    usd = matrix.split("### USD per 1,000 turns")[1]
    assert "| a | 0.00 | 0.00 | 0.00 |" in usd, "offline targets cost 0"
    html = (out / "report.html").read_text(encoding="utf-8")  # how it is laid out: report/test_matrix.py
    assert 'id="matrix"' in html and 'id="target-a"' in html and 'id="target-b"' in html


def test_the_no_prompt_cache_switch_reaches_the_offline_model_and_the_report(
    app: typer.Typer, tiny_suite_path: Path, tmp_path: Path, erp_db_url: str, erp: object
) -> None:
    out = tmp_path / "run"
    args = bench_args(tiny_suite_path, out, erp_db_url, "--modes", "planner,toolcalling", "--no-prompt-cache")
    result = runner.invoke(app, [*args, "--latency-profile", "gpu-8b"])
    assert result.exit_code == 0, result.output
    results = read_results(out / "results.jsonl")
    assert results.meta.prompt_cache is False
    assert [r.cached_input_tokens for r in results.rows] == [0] * 6
    text = (out / "report.md").read_text(encoding="utf-8")
    assert "prefix cache modelled: no" in text
    assert "at most toolcalling's" not in text, "the project's own targets are not the reader's"
    block = readme_block(results, summarize_run(results))  # the documentation's result block states them
    [first_answer_target] = [
        line for line in block.splitlines() if "time to first answer at most toolcalling's" in line
    ]
    assert first_answer_target.endswith("measured without a modelled prefix cache (--no-prompt-cache).")
    html = (out / "report.html").read_text(encoding="utf-8")
    assert '<span id="prefix-cache">prefix cache modelled: no</span>' in html


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--modes", "planner,agente"], "agente"),
        (["--tag", "nada"], "no scenario"),
        (["--target", "a=offline", "--provider", "offline"], "--provider cannot be combined with --target"),
        (["--target", "a=offline", "--model", "m"], "--model cannot be combined with --target"),
        (["--target", "a=offline", "--target", "a=offline"], "Target name 'a' is used twice"),
        (["--target", "a=ollama:"], "the model after ':' is empty (leave out ':' for the provider's default"),
        (["--target", "l=ollama", "--no-prompt-cache"], "--no-prompt-cache only applies to the offline"),
        (
            ["--target", "l=ollama", "--latency-profile", "gpu-8b"],
            "Latency profiles only apply to the offline",
        ),
    ],
)
def test_bad_options_and_targets_exit_with_a_clear_message_before_anything_runs(
    app: typer.Typer, tiny_suite_path: Path, tmp_path: Path, erp_db_url: str, extra: list[str], message: str
) -> None:
    out = tmp_path / "run"
    result = runner.invoke(app, bench_args(tiny_suite_path, out, erp_db_url, *extra))
    assert result.exit_code == 2, result.output
    assert message in " ".join(result.output.split())
    assert not (out / "results.jsonl").exists(), "nothing run"


def test_a_targets_file_adds_to_the_targets(
    app: typer.Typer, tiny_suite_path: Path, tmp_path: Path, erp_db_url: str, erp: object
) -> None:
    targets = tmp_path / "targets.yaml"
    targets.write_text("targets:\n  - {name: first, provider: offline}\n", encoding="utf-8")
    out = tmp_path / "run"
    extra = ["--modes", "planner", "--targets-file", str(targets), "--target", "second=offline"]
    result = runner.invoke(app, bench_args(tiny_suite_path, out, erp_db_url, *extra))
    assert result.exit_code == 0, result.output
    assert [t.name for t in read_results(out / "results.jsonl").meta.targets] == ["first", "second"]


def test_resume_with_targets_skips_the_done_units(
    app: typer.Typer, tiny_suite_path: Path, tmp_path: Path, erp_db_url: str, erp: object
) -> None:
    out = tmp_path / "run"
    args = bench_args(tiny_suite_path, out, erp_db_url, "--modes", "planner", "--target", "a=offline")
    assert runner.invoke(app, [*args, "--target", "b=offline"]).exit_code == 0
    again = runner.invoke(app, [*args, "--target", "b=offline", "--resume"])
    assert again.exit_code == 0 and "0 units run, 4 resumed" in again.output
    changed = runner.invoke(app, [*args, "--target", "b=offline:other", "--resume"])
    assert changed.exit_code == 2 and "target b: model None → 'other'" in " ".join(changed.output.split())


def test_repeated_modes_add_up_like_comma_separated_ones(
    app: typer.Typer, tiny_suite_path: Path, tmp_path: Path, erp_db_url: str
) -> None:
    out = tmp_path / "run"
    args = bench_args(tiny_suite_path, out, erp_db_url, "--modes", "planner", "--modes", "toolcalling")
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    assert run_line(out)["modes"] == ["planner", "toolcalling"]


def test_the_plan_schema_is_recorded_and_a_resumed_run_must_keep_it(
    app: typer.Typer, tiny_suite_path: Path, tmp_path: Path, erp_db_url: str
) -> None:
    out = tmp_path / "run"
    args = bench_args(tiny_suite_path, out, erp_db_url, "--modes", "planner")
    first = runner.invoke(app, [*args, "--plan-schema", "none"])
    assert first.exit_code == 0, first.output
    assert run_line(out)["plan_schema"] == "none"
    changed = runner.invoke(app, [*args, "--resume"])
    assert changed.exit_code == 2 and "plan_schema 'none' → 'union'" in " ".join(changed.output.split())


@pytest.mark.parametrize(
    ("option", "modes", "refusal"),
    [
        (["--structured"], "planner", "--structured applies to tool calling only"),
        (["--no-tool-call-recovery"], "planner", "--no-tool-call-recovery applies to tool calling only"),
        (["--plan-schema", "none"], "toolcalling", "--plan-schema applies to the planner only"),
    ],
)
def test_an_option_of_a_mode_the_run_does_not_run_is_refused_before_anything_runs(
    app: typer.Typer,
    tiny_suite_path: Path,
    tmp_path: Path,
    erp_db_url: str,
    option: list[str],
    modes: str,
    refusal: str,
) -> None:
    out = tmp_path / "run"
    result = runner.invoke(app, bench_args(tiny_suite_path, out, erp_db_url, "--modes", modes, *option))
    assert result.exit_code == 2 and refusal in result.output
    assert not out.exists()
