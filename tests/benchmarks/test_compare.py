"""benchmarks.compare and its Markdown section: two runs per (target,) mode and category, regressions first;
what only one run has is listed as not compared, never as a regression (``erp-ai report A B``, of which
``erp-ai compare A B`` is a shorthand)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from benchmarks.compare import ALL, compare_results, compare_runs
from benchmarks.report.comparison import render_comparison_markdown
from benchmarks.results import RunMeta, RunResults, TurnRow
from benchmarks.scoring.turn import TurnScore
from benchmarks.targets import parse_targets
from tests.benchmarks.report.sample_results import turn_row, write_results

ALL_MODES = ["planner", "toolcalling", "toolcalling-full"]
WHY = "answer lacks ventas_anuales(anio=2025).total"


def _row(mode: str, category: str, scenario: str, turn: int, passed: bool = True, **kw: Any) -> TurnRow:
    values: dict[str, Any] = {"model_calls": 2, "input_tokens": 1000, "output_tokens": 100, "model_ms": 10.0}
    return turn_row(
        mode,
        passed=passed,
        why=WHY,
        category=category,
        scenario=scenario,
        turn=turn,
        harness_ms=1.0,
        **{**values, **kw},
    )


def _run(
    tools_failing: set[int] | range,
    *,
    turns: int = 10,
    planner_tokens: int = 1000,
    simulated: float | None = None,
) -> RunResults:
    """``turns`` turns per mode, the first half ``single``, the rest ``follow_up``; tool calling fails
    ``tools_failing``."""
    rows = []
    for turn in range(1, turns + 1):
        category = "single" if turn <= turns // 2 else "follow_up"
        rows.append(
            _row("planner", category, "s", turn, input_tokens=planner_tokens, simulated_model_ms=simulated)
        )
        rows.append(_row("toolcalling", category, "s", turn, passed=turn not in tools_failing, model_calls=3))
    return RunResults(
        meta=RunMeta(provider="offline", modes=["planner", "toolcalling"], turns=turns), rows=rows
    )


LARGE = 40
"""Turns per mode of a run large enough for a paired test to establish a drop."""
DROP = range(21, 29)
"""Eight follow-up turns of a :data:`LARGE` run: 100% → 60% of its follow-ups, McNemar p = 0.008."""


def _modes_run(
    modes: list[str], categories: tuple[str, ...] = ("single", "follow_up"), failing: int = 0, turns: int = 4
) -> RunResults:
    """``turns`` turns per mode and category; the first ``failing`` planner turns fail."""
    rows = [
        _row(mode, category, f"s-{category}", turn, passed=not (mode == "planner" and turn <= failing))
        for mode in modes
        for category in categories
        for turn in range(1, turns + 1)
    ]
    meta = RunMeta(provider="offline", modes=modes, turns=turns * len(categories))
    return RunResults(meta=meta, rows=rows)


def _write(directory: Path, results: RunResults) -> Path:
    write_results(directory / "results.jsonl", results.meta, results.rows)
    return directory


def test_an_accuracy_drop_a_paired_test_establishes_is_a_regression_listed_first() -> None:
    comparison = compare_results(_run(set(), turns=LARGE), _run(DROP, turns=LARGE))
    first = comparison.groups[0]
    assert (first.mode, first.category) == ("toolcalling", "follow_up")
    assert first.regression and first.accuracy_delta == pytest.approx(-0.4)
    assert first.reasons == ["accuracy 100.0% → 60.0%, McNemar p = 0.008"]
    overall = next(g for g in comparison.groups if (g.mode, g.category) == ("toolcalling", ALL))
    assert overall.regression and overall.accuracy_delta == pytest.approx(-0.2)
    unchanged = next(g for g in comparison.groups if (g.mode, g.category) == ("planner", "single"))
    assert not unchanged.regression and unchanged.reasons == []
    assert [g.regression for g in comparison.groups] == sorted(
        (g.regression for g in comparison.groups), reverse=True
    ), "regressions first"


def test_a_drop_chance_explains_is_a_note_never_a_regression() -> None:
    one_of_five = compare_results(_run(set()), _run({6}))  # one follow-up turn of five now fails
    follow_up = next(g for g in one_of_five.groups if (g.mode, g.category) == ("toolcalling", "follow_up"))
    assert not follow_up.regression and follow_up.reasons == []
    assert follow_up.notes == ["accuracy 100.0% → 80.0%, McNemar p = 1.000"]
    assert one_of_five.regressions == []
    text = render_comparison_markdown(one_of_five)
    assert "- toolcalling · follow_up: accuracy 100.0% → 80.0%, McNemar p = 1.000." in text
    assert "None: no mode or category lost accuracy" in text

    other_turns = _run({6, 7, 8, 9, 10})
    other_turns.rows[:] = [row.model_copy(update={"scenario": "other"}) for row in other_turns.rows]
    unpaired = compare_results(_run(set()), other_turns)  # no turn in common: 5/5 → 0/5, intervals apart
    [lost] = [g for g in unpaired.regressions if g.category == "follow_up"]
    assert lost.reasons == ["accuracy 100.0% → 0.0%, Wilson 95% intervals apart"]


def test_turns_that_flipped_are_listed_with_a_mcnemar_test() -> None:
    comparison = compare_results(_run({1}), _run({6, 7}))
    assert [(f.mode, f.turn) for f in comparison.newly_failing] == [("toolcalling", 6), ("toolcalling", 7)]
    assert comparison.newly_failing[0].why == "answer lacks ventas_anuales(anio=2025).total"
    assert [(f.mode, f.turn, f.now_passes) for f in comparison.newly_passing] == [("toolcalling", 1, True)]
    assert comparison.flips_p_value == {"toolcalling": pytest.approx(1.0)}  # 1 vs 2 flips


def test_more_tokens_is_a_regression_beyond_tolerance_only() -> None:
    slightly = compare_results(_run(set()), _run(set(), planner_tokens=1010))  # +1%
    assert not any(g.regression for g in slightly.groups if g.mode == "planner")
    costly = compare_results(_run(set()), _run(set(), planner_tokens=1100))  # +10%
    planner = next(g for g in costly.groups if (g.mode, g.category) == ("planner", ALL))
    assert planner.regression and planner.reasons == ["input tokens/turn 1000 → 1100"]


def test_simulated_latency_is_compared_when_both_runs_have_it() -> None:
    comparison = compare_results(_run(set(), simulated=1000.0), _run(set(), simulated=1500.0))
    planner = next(g for g in comparison.groups if (g.mode, g.category) == ("planner", "single"))
    assert planner.b is not None and planner.b.simulated
    assert planner.reasons == ["simulated latency p50 1001.0 → 1501.0 ms"]


def test_warm_up_rows_are_not_compared() -> None:
    after = _run(set())
    after.rows.append(_row("planner", "single", "s", 1, passed=False, warmup=True))
    comparison = compare_results(_run(set()), after)
    assert comparison.regressions == [] and comparison.newly_failing == []


def test_markdown_lists_regressions_then_every_group_then_flips() -> None:
    comparison = compare_results(_run(set(), turns=LARGE), _run(DROP, turns=LARGE))
    text = render_comparison_markdown(comparison)
    assert text.startswith("## Changes from A to B\n")
    regressions = text.split("### Regressions")[1].split("### ")[0]
    assert "- **toolcalling · follow_up**: accuracy 100.0% → 60.0%, McNemar p = 0.008." in regressions
    assert "planner" not in regressions
    table = text.split("### Per mode and category")[1].split("### ")[0]
    assert "| toolcalling | follow_up | 20 / 20 | 100.0% (84–100) | 60.0% (39–78) |" in table
    assert table.index("toolcalling | follow_up") < table.index("planner | (all)")
    assert "| fails | toolcalling | s | 21 | 1 | answer lacks" in text


def test_no_change_says_so() -> None:
    text = render_comparison_markdown(compare_results(_run(set()), _run(set())))
    assert "None: no mode or category lost accuracy" in text
    assert "None: every turn both runs ran has the same outcome." in text


def test_compare_runs_reads_files_or_directories_and_names_changed_settings(tmp_path: Path) -> None:
    for name, failing, profile in (("a", set(), None), ("b", {6}, "gpu-8b")):
        run = _run(failing)
        write_results(
            tmp_path / name / "results.jsonl",
            run.meta.model_copy(update={"latency_profile": profile}),
            run.rows,
        )
    comparison = compare_runs(tmp_path / "a", tmp_path / "b" / "results.jsonl")
    assert comparison.a.path.endswith("a/results.jsonl")
    assert comparison.settings_changed == ["latency_profile None → 'gpu-8b'"]
    assert len(comparison.newly_failing) == 1
    with pytest.raises(FileNotFoundError):
        compare_runs(tmp_path / "a", tmp_path / "missing")


def test_the_compare_command_prints_writes_and_fails_only_on_what_both_runs_measured(
    app: typer.Typer, tmp_path: Path
) -> None:
    runner = CliRunner()
    a = _write(tmp_path / "a", _run(set(), turns=LARGE))
    b = _write(tmp_path / "b", _run(DROP, turns=LARGE))
    out = tmp_path / "out"
    result = runner.invoke(app, ["compare", str(a), str(b), "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert "toolcalling · follow_up" in result.output
    assert "## Changes from a to b" in (out / "report.md").read_text(encoding="utf-8")
    assert not (out / "compare.md").exists() and not (b / "compare.md").exists(), "report.md holds it"

    def code(*args: str) -> int:
        return runner.invoke(app, [*args, "--out", str(tmp_path / "x")], env={"COLUMNS": "200"}).exit_code

    assert code("compare", str(a), str(b), "--fail-on-regression") == 1
    noise = _write(tmp_path / "noise", _run({26}, turns=LARGE))  # one turn of twenty: chance explains it
    assert code("compare", str(a), str(noise), "--fail-on-regression") == 0
    assert code("compare", str(a), str(tmp_path / "nothing")) == 2
    every = _write(tmp_path / "make-bench", _modes_run(ALL_MODES))
    two = _write(tmp_path / "two-modes", _modes_run(["planner", "toolcalling"]))
    assert code("compare", str(every), str(two), "--fail-on-regression") == 0, "a mode only one run ran"


def test_report_of_two_runs_fails_on_a_regression_only_when_asked_and_after_writing_the_reports(
    app: typer.Typer, tmp_path: Path
) -> None:
    runner = CliRunner()
    a = _write(tmp_path / "a", _run(set(), turns=LARGE))
    b = _write(tmp_path / "b", _run(DROP, turns=LARGE))
    noise = _write(tmp_path / "noise", _run({26}, turns=LARGE))

    def report(*args: str, out: str = "out") -> tuple[int, str]:
        result = runner.invoke(app, ["report", *args, "--out", str(tmp_path / out)], env={"COLUMNS": "200"})
        return result.exit_code, result.output

    assert report(str(a), str(b))[0] == 0, "a regression alone does not fail the report"
    code, output = report(str(a), str(b), "--fail-on-regression", out="failed")
    assert code == 1
    assert "2 regressions" in output and "- **toolcalling · follow_up**: accuracy 100.0% → 60.0%" in output
    for name in ("report.md", "report.html", "turns.csv"):
        assert (tmp_path / "failed" / name).exists(), f"{name} is written before the exit"
    assert report(str(a), str(noise), "--fail-on-regression")[0] == 0, "chance explains one turn of twenty"
    assert report(str(b), str(a), "--fail-on-regression")[0] == 0, "the earlier run first: b → a gains"


def test_fail_on_regression_needs_two_runs_and_says_so_in_one_line(app: typer.Typer, tmp_path: Path) -> None:
    runner = CliRunner()
    runs = [str(_write(tmp_path / name, _run(set()))) for name in ("a", "b", "c")]
    for given, says in ((runs[:1], "one was given"), (runs, "3 were given")):
        out = tmp_path / f"out-{len(given)}"
        args = ["report", *given, "--fail-on-regression", "--out", str(out)]
        result = runner.invoke(app, args, env={"COLUMNS": "300"})
        assert result.exit_code == 2, result.output
        line = f"Error: --fail-on-regression compares two runs, and {says}: give RUN_A RUN_B"
        assert result.output.strip() == line
        assert not out.exists(), "refused before anything is written"


def test_a_real_model_run_is_never_compared_with_the_stand_in_run_beside_it(
    app: typer.Typer, tmp_path: Path
) -> None:
    # what `make bench` puts side by side: the recorded real-model run and the offline run just made
    runner = CliRunner()
    real = _run(DROP, turns=LARGE)
    real = real.model_copy(update={"meta": real.meta.model_copy(update={"provider": "ollama"})})
    real_path, offline = (
        _write(tmp_path / "real", real),
        _write(tmp_path / "offline", _run(set(), turns=LARGE)),
    )
    result = runner.invoke(
        app, ["report", str(real_path), str(offline), "--out", str(tmp_path / "side")], env={"COLUMNS": "300"}
    )
    assert result.exit_code == 0, result.output
    assert "not compared:" in result.output and "a stand-in run is compared only with" in result.output
    assert "Changes from" not in (tmp_path / "side" / "report.md").read_text(encoding="utf-8")
    args = ["report", str(offline), str(real_path), "--fail-on-regression", "--out", str(tmp_path / "no")]
    refused = runner.invoke(app, args, env={"COLUMNS": "300"})
    assert refused.exit_code == 2 and "compares runs of one regime" in refused.output
    assert not (tmp_path / "no").exists()


def test_compare_is_documented_as_a_shorthand_for_report(app: typer.Typer) -> None:
    runner = CliRunner()
    help_text = " ".join(runner.invoke(app, ["compare", "--help"], env={"COLUMNS": "300"}).output.split())
    assert "Shorthand for `erp-ai report RUN_A RUN_B --out DIR [--fail-on-regression]`" in help_text
    assert "--fail-on-regression" in help_text and "reports/combined/<timestamp>/" in help_text
    report_help = " ".join(runner.invoke(app, ["report", "--help"], env={"COLUMNS": "300"}).output.split())
    assert "--fail-on-regression" in report_help and "Changes from A to B" in report_help


def test_compare_names_a_cut_file_and_refuses_an_empty_one(app: typer.Typer, tmp_path: Path) -> None:
    runner = CliRunner()
    a = _write(tmp_path / "a", _modes_run(["planner"]))
    b = _write(tmp_path / "b", _modes_run(["planner"]))
    data = (b / "results.jsonl").read_bytes()
    (b / "results.jsonl").write_bytes(data[:-20])
    args = ["compare", str(a), str(b), "--out", str(tmp_path / "out")]
    cut = runner.invoke(app, args, env={"COLUMNS": "300"})
    assert cut.exit_code == 0
    assert "**Warning:** run B: results file ends in an incomplete line: 7 rows read." in cut.output
    (b / "results.jsonl").write_bytes(b"")
    empty = runner.invoke(app, args, env={"COLUMNS": "300"})
    assert empty.exit_code == 2 and "holds no complete record" in empty.output


def _targeted(run: RunResults, specs: list[str], failing_b: frozenset[int] = frozenset()) -> RunResults:
    """``run``'s rows once per target (target b failing ``failing_b`` in toolcalling)."""
    rows = []
    for name in ("a", "b"):
        for row in run.rows:
            failed = name == "b" and row.mode == "toolcalling" and row.turn in failing_b
            score = TurnScore(passed=False, details=["wrong"]) if failed else row.score
            rows.append(row.model_copy(update={"target": name, "score": score}))
    meta = run.meta.model_copy(update={"targets": parse_targets(specs)})
    return RunResults(meta=meta, rows=rows)


def test_runs_with_targets_are_compared_per_target_and_mode() -> None:
    specs = ["a=offline", "b=offline:offline-sales"]
    before = _targeted(_run(set(), turns=LARGE), specs)
    comparison = compare_results(before, _targeted(_run(set(), turns=LARGE), specs, frozenset(DROP)))
    assert comparison.targets
    [regression] = [g for g in comparison.regressions if g.category == ALL]
    assert (regression.target, regression.mode) == ("b", "toolcalling")
    assert not any(g.regression for g in comparison.groups if g.target == "a")
    assert [(f.target, f.mode, f.turn) for f in comparison.newly_failing] == [
        ("b", "toolcalling", turn) for turn in DROP
    ]
    assert set(comparison.flips_p_value) == {"b · toolcalling"}
    text = render_comparison_markdown(comparison)
    assert "### Per target, mode and category" in text
    assert "- **b · toolcalling · (all)**: accuracy 100.0% → 80.0%, McNemar p = 0.008." in text
    assert "| b | toolcalling | (all) | 40 / 40 |" in text and "| a | planner | (all) | 40 / 40 |" in text
    assert "| fails | b | toolcalling | s | 21 | 1 | wrong |" in text


def test_a_target_that_now_stands_for_another_model_is_named_in_the_settings() -> None:
    a = _targeted(_run(set()), ["a=offline", "b=offline"])
    b = _targeted(_run(set()), ["a=offline", "b=ollama"])
    assert compare_results(a, b).settings_changed == [
        "targets ['a=offline', 'b=offline'] → ['a=offline', 'b=ollama']"
    ]
    assert compare_results(_run(set()), _run(set())).targets is False, "no targets: no target column"


def test_time_to_first_answer_and_valid_plans_are_compared() -> None:
    def run(first: float, simulated_first: float, valid: int) -> RunResults:
        base = _run(set())
        rows = [
            row.model_copy(
                update={
                    "first_answer_ms": first,
                    "simulated_first_answer_ms": simulated_first,
                    "plan_valid": row.turn <= valid,
                }
            )
            for row in base.rows
        ]
        return RunResults(meta=base.meta, rows=rows)

    comparison = compare_results(run(10.0, 500.0, 10), run(20.0, 600.0, 9))
    planner = next(g for g in comparison.groups if (g.mode, g.category) == ("planner", ALL))
    assert planner.a is not None and planner.a.valid_plan_rate == 1.0
    assert planner.reasons == [
        "simulated first answer p50 500.0 → 600.0 ms",
        "first answer p50 10.0 → 20.0 ms",
    ]
    assert planner.notes == ["valid plans 100.0% → 90.0%, McNemar p = 1.000"]  # one plan of ten: chance
    single = next(g for g in comparison.groups if (g.mode, g.category) == ("planner", "single"))
    assert "first answer p50 10.0 → 20.0 ms" not in single.reasons, "measured only for a mode overall"
    text = render_comparison_markdown(comparison)
    header = next(line for line in text.splitlines() if line.startswith("| mode | category |"))
    assert "first answer p50 ms, simulated | first answer p50 ms, measured | valid plans" in header
    assert "| 500.0 → 600.0 (+100.0) | 10.0 → 20.0 (+10.0) | 100.0% (10/10) → 90.0% (9/10) |" in text
    unrecorded = render_comparison_markdown(compare_results(_run(set()), _run(set())))
    assert "| – | – | n/a |" in unrecorded


def test_a_mode_only_the_earlier_run_has_is_not_compared_and_no_regression() -> None:
    comparison = compare_results(_modes_run(ALL_MODES), _modes_run(["planner", "toolcalling"]))

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
    assert "### Not compared" in text
    assert "- **toolcalling-full** (every category): only in run A." in text
    assert "toolcalling-full · single" not in text  # folded into the mode's line
    assert "| toolcalling-full | (all) | 8 / 0 |" in text and "not compared |" in text


def test_a_category_or_a_target_only_one_run_has_is_not_compared() -> None:
    extra = compare_results(
        _modes_run(["planner"]), _modes_run(["planner"], categories=("single", "follow_up", "nueva"))
    )
    assert extra.regressions == []
    assert [(g.mode, g.category, g.reasons) for g in extra.not_compared] == [
        ("planner", "nueva", ["only in run B"])
    ]
    assert "- **planner · nueva**: only in run B." in render_comparison_markdown(extra)

    a = _modes_run(["planner"]).model_copy(
        update={"meta": RunMeta(modes=["planner"], targets=parse_targets(["x=offline"]))}
    )
    a.rows[:] = [r.model_copy(update={"target": "x"}) for r in a.rows]
    b_meta = RunMeta(modes=["planner"], targets=parse_targets(["x=offline", "y=offline"]))
    b_rows = [r.model_copy(update={"target": t}) for t in ("x", "y") for r in _modes_run(["planner"]).rows]
    targets = compare_results(a, RunResults(meta=b_meta, rows=b_rows))
    assert targets.regressions == []
    assert {(g.target, g.category) for g in targets.not_compared} == {
        ("y", ALL),
        ("y", "single"),
        ("y", "follow_up"),
    }


def test_what_both_runs_measured_is_still_judged() -> None:
    comparison = compare_results(
        _modes_run(ALL_MODES, turns=16), _modes_run(["planner", "toolcalling"], failing=8, turns=16)
    )
    assert {(g.mode, g.category) for g in comparison.regressions} == {
        ("planner", ALL),
        ("planner", "single"),
        ("planner", "follow_up"),
    }
    assert all(g.compared for g in comparison.regressions)
