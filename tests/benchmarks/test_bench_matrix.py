"""`erp-ai bench --target …`: the model matrix end to end on the tiny suite with the offline model
(benchmarks/bench_cli.py)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from benchmarks.results import read_results
from tests.benchmarks.test_bench_cli import bench_args

runner = CliRunner()


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
    paired = text.split("## Paired comparison")[1].split("\n## ")[0]
    assert "| a | planner vs toolcalling |" in paired and "| b | planner vs toolcalling |" in paired
    assert (
        "### Target `a` (offline offline-sales)" in text and "### Target `b` (offline offline-sales)" in text
    )

    html = (out / "report.html").read_text(encoding="utf-8")
    assert 'id="matrix"' in html and 'id="chart-calls-a"' in html and 'id="chart-calls-b"' in html
    assert html.count('<h3 class="target"') >= 4, "findings and charts grouped by target"
    assert "a · " in html.split('id="turn-by-turn"')[1], "turn columns name their target"


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
    [issue_11] = [
        line for line in text.splitlines() if "time to first answer at most toolcalling's (issue 11)" in line
    ]
    assert issue_11.endswith("measured without a modelled prefix cache (--no-prompt-cache).")
    html = (out / "report.html").read_text(encoding="utf-8")
    assert '<span id="prefix-cache">prefix cache modelled: no</span>' in html


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--target", "a=offline", "--provider", "offline"], "--provider cannot be combined with --target"),
        (["--target", "a=offline", "--model", "m"], "--model cannot be combined with --target"),
        (["--target", "a=offline", "--target", "a=offline"], "Target name 'a' is used twice"),
        (["--target", "offline"], "Invalid --target 'offline': it has no '='"),
        (
            ["--target", "a=ollama:"],
            "the model after ':' is empty (leave out ':' for the provider's default model). "
            "Write NAME=provider[:model][@base_url]",
        ),
        (["--target", "a=mistral"], "unknown provider 'mistral'"),
        (["--target", "l=ollama", "--no-prompt-cache"], "--no-prompt-cache only applies to the offline"),
        (
            ["--target", "l=ollama", "--latency-profile", "gpu-8b"],
            "Latency profiles only apply to the offline",
        ),
    ],
)
def test_bad_targets_exit_with_a_clear_message(
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


def test_help_documents_the_target_syntax_with_an_example(app: typer.Typer) -> None:
    result = runner.invoke(app, ["bench", "--help"], env={"COLUMNS": "200", "TERM": "dumb"})
    text = " ".join(result.output.split())
    for option in ("--target", "--targets-file", "--prompt-cache", "--no-prompt-cache"):
        assert option in text
    assert "NAME=provider[:model][@base_url]" in text
    assert "--target a=offline" in text
