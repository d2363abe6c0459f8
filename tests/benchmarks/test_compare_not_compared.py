"""``erp-ai compare``: what only one run has is listed as not compared, never as a regression.

A ``make bench`` run (planner, toolcalling, toolcalling-full) against a ``--modes planner,toolcalling`` run
must not fail ``--fail-on-regression`` over the mode the second run did not run; likewise a category or a
target that only one run has. What both runs measured is still judged as before.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer
from typer.testing import CliRunner

from benchmarks.compare import ALL, compare_results, render_comparison_markdown
from benchmarks.results import ResultsWriter, RunMeta, RunResults, TurnRow
from benchmarks.scoring.turn import TurnScore
from benchmarks.targets import parse_targets

runner = CliRunner()
ALL_MODES = ["planner", "toolcalling", "toolcalling-full"]


def row(mode: str, category: str, turn: int, *, passed: bool = True, target: str = "default") -> TurnRow:
    values: dict[str, Any] = {"model_calls": 2, "input_tokens": 1000, "output_tokens": 50, "harness_ms": 1.0}
    return TurnRow(
        target=target,
        mode=mode,
        scenario=f"s-{category}",
        category=category,
        turn=turn,
        repetition=1,
        user="u",
        score=TurnScore(passed=passed, details=[] if passed else ["wrong"]),
        **values,
    )


def run(
    modes: list[str], categories: tuple[str, ...] = ("single", "follow_up"), failing: int = 0
) -> RunResults:
    """Four turns per mode and category; the first ``failing`` planner turns fail."""
    rows = [
        row(mode, category, turn, passed=not (mode == "planner" and turn <= failing))
        for mode in modes
        for category in categories
        for turn in range(1, 5)
    ]
    meta = RunMeta(provider="offline", modes=modes, turns=4 * len(categories))
    return RunResults(meta=meta, rows=rows)


def test_a_mode_only_the_earlier_run_has_is_not_compared_and_no_regression() -> None:
    comparison = compare_results(run(ALL_MODES), run(["planner", "toolcalling"]))

    assert comparison.regressions == []
    missing = [(g.mode, g.category) for g in comparison.not_compared]
    assert missing == [
        ("toolcalling-full", ALL),
        ("toolcalling-full", "follow_up"),
        ("toolcalling-full", "single"),
    ]
    assert all(g.reasons == ["only in run A"] and not g.regression for g in comparison.not_compared)
    assert "modes ['planner', 'toolcalling', 'toolcalling-full'] → ['planner', 'toolcalling']" in (
        comparison.settings_changed
    )
    text = render_comparison_markdown(comparison)
    assert "## Not compared" in text
    assert "- **toolcalling-full** (every category): only in run A." in text
    assert "toolcalling-full · single" not in text  # folded into the mode's line
    assert "| toolcalling-full | (all) | 8 / 0 |" in text and "not compared |" in text


def test_a_category_or_a_target_only_one_run_has_is_not_compared() -> None:
    extra = compare_results(run(["planner"]), run(["planner"], categories=("single", "follow_up", "nueva")))
    assert extra.regressions == []
    assert [(g.mode, g.category, g.reasons) for g in extra.not_compared] == [
        ("planner", "nueva", ["only in run B"])
    ]
    assert "- **planner · nueva**: only in run B." in render_comparison_markdown(extra)

    a = run(["planner"]).model_copy(
        update={"meta": RunMeta(modes=["planner"], targets=parse_targets(["x=offline"]))}
    )
    a.rows[:] = [r.model_copy(update={"target": "x"}) for r in a.rows]
    b_meta = RunMeta(modes=["planner"], targets=parse_targets(["x=offline", "y=offline"]))
    b_rows = [r.model_copy(update={"target": t}) for t in ("x", "y") for r in run(["planner"]).rows]
    targets = compare_results(a, RunResults(meta=b_meta, rows=b_rows))
    assert targets.regressions == []
    assert {(g.target, g.category) for g in targets.not_compared} == {
        ("y", ALL),
        ("y", "single"),
        ("y", "follow_up"),
    }


def test_what_both_runs_measured_is_still_judged() -> None:
    comparison = compare_results(run(ALL_MODES), run(["planner", "toolcalling"], failing=2))
    assert {(g.mode, g.category) for g in comparison.regressions} == {
        ("planner", ALL),
        ("planner", "single"),
        ("planner", "follow_up"),
    }
    assert all(g.compared for g in comparison.regressions)


def write(path: Path, results: RunResults) -> Path:
    writer = ResultsWriter(path / "results.jsonl")
    writer.write(results.meta)
    for item in results.rows:
        writer.write(item)
    return path


def test_fail_on_regression_ignores_a_mode_only_one_run_ran(app: typer.Typer, tmp_path: Path) -> None:
    a = write(tmp_path / "make-bench", run(ALL_MODES))
    b = write(tmp_path / "two-modes", run(["planner", "toolcalling"]))
    worse = write(tmp_path / "worse", run(["planner", "toolcalling"], failing=1))
    args = ["compare", str(a), str(b), "--fail-on-regression"]

    assert runner.invoke(app, args, env={"COLUMNS": "200"}).exit_code == 0
    assert runner.invoke(app, ["compare", str(a), str(worse), "--fail-on-regression"]).exit_code == 1


def test_compare_names_a_cut_file_and_refuses_an_empty_one(app: typer.Typer, tmp_path: Path) -> None:
    a = write(tmp_path / "a", run(["planner"]))
    b = write(tmp_path / "b", run(["planner"]))
    data = (b / "results.jsonl").read_bytes()
    (b / "results.jsonl").write_bytes(data[:-20])
    cut = runner.invoke(app, ["compare", str(a), str(b)], env={"COLUMNS": "300"})
    assert cut.exit_code == 0
    assert "**Warning:** run B: results file ends in an incomplete line: 7 rows read." in cut.output

    (b / "results.jsonl").write_bytes(b"")
    empty = runner.invoke(app, ["compare", str(a), str(b)], env={"COLUMNS": "300"})
    assert empty.exit_code == 2 and "holds no complete record" in empty.output
