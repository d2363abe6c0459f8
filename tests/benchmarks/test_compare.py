"""benchmarks.compare: two runs per mode and category, regressions first (``erp-ai compare A B``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from benchmarks.compare import (
    ALL,
    compare_results,
    compare_runs,
    render_comparison_markdown,
    write_comparison,
)
from benchmarks.results import ResultsWriter, RunMeta, RunResults, TurnRow
from benchmarks.scoring.turn import TurnScore
from benchmarks.targets import parse_targets


def _row(mode: str, category: str, scenario: str, turn: int, passed: bool = True, **kw: Any) -> TurnRow:
    values: dict[str, Any] = {
        "user": "u",
        "model_calls": 2,
        "input_tokens": 1000,
        "output_tokens": 100,
        "model_ms": 10.0,
        "harness_ms": 1.0,
    }
    values.update(kw)
    return TurnRow(
        mode=mode,
        category=category,
        scenario=scenario,
        turn=turn,
        repetition=1,
        score=TurnScore(
            passed=passed, details=[] if passed else ["answer lacks ventas_anuales(anio=2025).total"]
        ),
        **values,
    )


def _run(
    tools_failing: set[int], *, planner_tokens: int = 1000, simulated: float | None = None
) -> RunResults:
    rows = []
    for turn in range(1, 11):
        category = "single" if turn <= 5 else "follow_up"
        rows.append(
            _row("planner", category, "s", turn, input_tokens=planner_tokens, simulated_model_ms=simulated)
        )
        rows.append(_row("toolcalling", category, "s", turn, passed=turn not in tools_failing, model_calls=3))
    return RunResults(meta=RunMeta(provider="offline", modes=["planner", "toolcalling"], turns=10), rows=rows)


def test_an_accuracy_drop_is_a_regression_listed_first() -> None:
    comparison = compare_results(_run(set()), _run({6, 7}))
    first = comparison.groups[0]
    assert (first.mode, first.category) == ("toolcalling", "follow_up")
    assert first.regression and first.accuracy_delta == pytest.approx(-0.4)
    assert first.reasons == ["accuracy 100.0% → 60.0%"]
    overall = next(g for g in comparison.groups if (g.mode, g.category) == ("toolcalling", ALL))
    assert overall.regression and overall.accuracy_delta == pytest.approx(-0.2)
    unchanged = next(g for g in comparison.groups if (g.mode, g.category) == ("planner", "single"))
    assert not unchanged.regression and unchanged.reasons == []
    assert [g.regression for g in comparison.groups] == sorted(
        (g.regression for g in comparison.groups), reverse=True
    ), "regressions first"


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


def test_a_mode_missing_from_the_later_run_is_not_compared_and_no_regression() -> None:
    before = _run(set())
    after = RunResults(
        meta=RunMeta(provider="offline", modes=["planner"]),
        rows=[r for r in _run(set()).rows if r.mode == "planner"],
    )
    comparison = compare_results(before, after)
    gone = next(g for g in comparison.groups if (g.mode, g.category) == ("toolcalling", ALL))
    assert not gone.regression and not gone.compared and gone.reasons == ["only in run A"]


def test_warm_up_rows_are_not_compared() -> None:
    after = _run(set())
    after.rows.append(_row("planner", "single", "s", 1, passed=False, warmup=True))
    comparison = compare_results(_run(set()), after)
    assert comparison.regressions == [] and comparison.newly_failing == []


def test_markdown_lists_regressions_then_every_group_then_flips(tmp_path: Path) -> None:
    comparison = compare_results(_run(set()), _run({6, 7}))
    text = render_comparison_markdown(comparison)
    regressions = text.split("## Regressions")[1].split("##")[0]
    assert "- **toolcalling · follow_up**: accuracy 100.0% → 60.0%." in regressions
    assert "planner" not in regressions
    table = text.split("## Per mode and category")[1].split("##")[0]
    assert "| toolcalling | follow_up | 5 / 5 | 100.0% (57–100) | 60.0% (23–88) |" in table
    assert table.index("toolcalling | follow_up") < table.index("planner | (all)")
    assert "| fails | toolcalling | s | 6 | 1 | answer lacks" in text
    path = write_comparison(comparison, tmp_path / "out")
    assert path.name == "compare.md" and path.read_text(encoding="utf-8") == text


def test_no_change_says_so() -> None:
    text = render_comparison_markdown(compare_results(_run(set()), _run(set())))
    assert "None: no mode or category lost accuracy" in text
    assert "None: every turn both runs ran has the same outcome." in text


def test_compare_runs_reads_files_or_directories_and_names_changed_settings(tmp_path: Path) -> None:
    for name, failing, profile in (("a", set(), None), ("b", {6}, "gpu-8b")):
        run = _run(failing)
        writer = ResultsWriter(tmp_path / name / "results.jsonl")
        writer.write(run.meta.model_copy(update={"latency_profile": profile}))
        for row in run.rows:
            writer.write(row)
    comparison = compare_runs(tmp_path / "a", tmp_path / "b" / "results.jsonl")
    assert comparison.a.path.endswith("a/results.jsonl")
    assert comparison.settings_changed == ["latency_profile None → 'gpu-8b'"]
    assert len(comparison.newly_failing) == 1
    with pytest.raises(FileNotFoundError):
        compare_runs(tmp_path / "a", tmp_path / "missing")


def test_the_compare_command_prints_and_writes_the_comparison(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from benchmarks.cli import app

    if "compare" not in {command.name for command in app.registered_commands}:
        pytest.skip("erp-ai compare is not registered yet (benchmarks/cli.py)")
    for name, failing in (("a", set()), ("b", {6})):
        run = _run(failing)
        writer = ResultsWriter(tmp_path / name / "results.jsonl")
        writer.write(run.meta)
        for row in run.rows:
            writer.write(row)
    runner = CliRunner()
    result = runner.invoke(app, ["compare", str(tmp_path / "a"), str(tmp_path / "b")])
    assert result.exit_code == 0, result.output
    assert "toolcalling · follow_up" in result.output
    assert (tmp_path / "b" / "compare.md").exists()
    failing = runner.invoke(
        app, ["compare", str(tmp_path / "a"), str(tmp_path / "b"), "--fail-on-regression"]
    )
    assert failing.exit_code == 1
    missing = runner.invoke(app, ["compare", str(tmp_path / "a"), str(tmp_path / "nothing")])
    assert missing.exit_code == 2


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
    comparison = compare_results(_targeted(_run(set()), specs), _targeted(_run(set()), specs, frozenset({6})))
    assert comparison.targets
    [regression] = [g for g in comparison.regressions if g.category == ALL]
    assert (regression.target, regression.mode) == ("b", "toolcalling")
    assert not any(g.regression for g in comparison.groups if g.target == "a")
    assert [(f.target, f.mode, f.turn) for f in comparison.newly_failing] == [("b", "toolcalling", 6)]
    assert set(comparison.flips_p_value) == {"b · toolcalling"}
    text = render_comparison_markdown(comparison)
    assert "## Per target, mode and category" in text
    assert "- **b · toolcalling · (all)**: accuracy 100.0% → 90.0%." in text
    assert "| b | toolcalling | (all) | 10 / 10 |" in text and "| a | planner | (all) | 10 / 10 |" in text
    assert "| fails | b | toolcalling | s | 6 | 1 | wrong |" in text


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
        "valid plans 100.0% → 90.0%",
    ]
    single = next(g for g in comparison.groups if (g.mode, g.category) == ("planner", "single"))
    assert "first answer p50 10.0 → 20.0 ms" not in single.reasons, "measured only for a mode overall"
    text = render_comparison_markdown(comparison)
    header = next(line for line in text.splitlines() if line.startswith("| mode | category |"))
    assert "first answer p50 ms, simulated | first answer p50 ms, measured | valid plans" in header
    assert "| 500.0 → 600.0 (+100.0) | 10.0 → 20.0 (+10.0) | 100.0% (10/10) → 90.0% (9/10) |" in text
    unrecorded = render_comparison_markdown(compare_results(_run(set()), _run(set())))
    assert "| – | – | n/a |" in unrecorded
