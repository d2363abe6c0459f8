"""``erp-ai report RUN_A RUN_B …``: several runs in one report, each regime labeled, a verdict row per run and
mode, and every link pointing at something on the page (benchmarks/report/html.py, html_decision.py,
markdown.py, runs.py; benchmarks/cli/bench.py)."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import pytest
from typer.testing import CliRunner

from benchmarks.cli.app import app
from benchmarks.report.runs import run_label, unique_labels
from benchmarks.results import RunMeta, TurnRow
from tests.benchmarks.report.sample_results import MODES, rows, write_results

runner = CliRunner()


def _real_rows() -> list[TurnRow]:
    """Two modes of a real model: tool calling fails two turns, one of them with a failure kind."""
    out = []
    for row in rows():
        if row.mode == "toolcalling-full":
            continue
        if row.mode == "toolcalling" and row.turn == 5:
            row = row.model_copy(update={"score": row.score.model_copy(update={"passed": False})})
        out.append(row.model_copy(update={"model_ms": 900.0 * row.turn, "first_answer_ms": 400.0 * row.turn}))
    return out


@pytest.fixture
def runs(tmp_path: Path) -> tuple[Path, Path]:
    real = write_results(
        tmp_path / "real" / "results.jsonl",
        RunMeta(
            provider="openai", model="qwen2.5-coder-1.5b-instruct", modes=MODES[:2], scenarios=1, turns=12
        ),
        _real_rows(),
    )
    simulated = [r.model_copy(update={"simulated_model_ms": 100.0 * r.turn}) for r in rows()]
    offline = write_results(
        tmp_path / "gpu.jsonl",
        RunMeta(
            provider="offline",
            modes=MODES,
            scenarios=1,
            turns=12,
            latency_profile="gpu-8b",
            prompt_cache=True,
        ),
        simulated,
    )
    return real, offline


def test_several_runs_make_one_report_with_every_regime_labeled_first(
    runs: tuple[Path, Path], tmp_path: Path
) -> None:
    out = tmp_path / "side-by-side"
    result = runner.invoke(
        app, ["report", str(runs[0].parent), str(runs[1]), "--out", str(out)], env={"COLUMNS": "200"}
    )
    assert result.exit_code == 0, result.output
    assert "real: Real-model run:" in result.output and "gpu: Structure run:" in result.output
    assert re.search(r"gpu +planner +– +2\.00 +1000 +\d[\d,.]*\* ", result.output), "simulated times marked *"
    markdown = (out / "report.md").read_text(encoding="utf-8").splitlines()
    assert markdown[0] == "# erp-ai-harness benchmark: 2 runs side by side"
    assert markdown[2].startswith("- **real**: Real-model run:")
    assert markdown[3].startswith("- **gpu**: Structure run:") and "not accuracy" in markdown[3]
    assert "its model time is simulated under the gpu-8b latency profile" in markdown[3]
    text = "\n".join(markdown)
    assert "| real | real model | openai | qwen2.5-coder-1.5b-instruct | none (measured time) |" in text
    assert "| gpu | offline, simulated gpu-8b | offline | default | gpu-8b | modelled |" in text
    verdict = text.split("## Which architecture, and why: 2 runs side by side")[1].split("\n\n")[1]
    assert [line.split(" | ")[:2] for line in verdict.splitlines()[2:]] == [
        ["| real", "planner"],
        ["| real", "toolcalling"],
        ["| gpu", "planner"],
        ["| gpu", "toolcalling"],
        ["| gpu", "toolcalling-full"],
    ]
    assert "| gpu | planner | 12 | not measured (stand-in) |" in verdict
    assert "(sim.)" in verdict.split("| gpu | planner |")[1].splitlines()[0]
    assert "**real** (real model):" in text and "**gpu** (offline, simulated gpu-8b):" in text
    assert "## Run real" in text and "## Run gpu" in text
    assert "Scorer check:" in text


def test_the_combined_page_links_only_to_what_it_holds(runs: tuple[Path, Path], tmp_path: Path) -> None:
    out = tmp_path / "side-by-side"
    assert runner.invoke(app, ["report", str(runs[0]), str(runs[1]), "--out", str(out)]).exit_code == 0
    html = (out / "report.html").read_text(encoding="utf-8")
    assert not re.search(r"<script|<link", html), "self-contained, no script"
    ids = re.findall(r'\sid="([^"]+)"', html)
    assert not [i for i, n in Counter(ids).items() if n > 1], "ids are unique across runs"
    targets = set(re.findall(r'href="#([^"]+)"', html))
    assert targets and targets <= set(ids), sorted(targets - set(ids))
    assert html.count('class="regime ') == 4, "each run's first line at the top and in its own section"
    table = html.split('id="verdict-table"')[1].split("</table>")[0]
    assert table.count("<tr") == 1 + 5, "a header and one row per run and mode"
    assert 'href="#run-1-turns-fail-c1"' in table, "real toolcalling's accuracy links to its failed turns"
    assert (
        'id="run-2-chart-latency-distribution"' in html
        and 'id="run-1-chart-first-answer-distribution"' in html
    )


def test_readme_takes_one_run_and_a_missing_run_is_an_error(runs: tuple[Path, Path], tmp_path: Path) -> None:
    readme = tmp_path / "README.md"
    readme.write_text("# Title\n", encoding="utf-8")
    result = runner.invoke(app, ["report", str(runs[0]), str(runs[1]), "--readme", str(readme)])
    assert result.exit_code == 2 and "--readme takes one run" in result.output
    missing = tmp_path / "nowhere" / "results.jsonl"
    result = runner.invoke(
        app, ["report", str(runs[0]), str(missing), "--out", str(tmp_path / "x")], env={"COLUMNS": "300"}
    )
    assert result.exit_code == 2 and f"{missing} does not exist" in result.output
    assert not (tmp_path / "x").exists()


def test_runs_are_labeled_by_file_or_folder_and_labels_stay_unique() -> None:
    assert run_label(Path("benchmarks/calibration/sources/full-real.jsonl")) == "full-real"
    assert run_label(Path("reports/20261202-101010/results.jsonl")) == "20261202-101010"
    assert unique_labels(["a", "b", "a", "a"]) == ["a", "b", "a-2", "a-3"]
