"""Aggregation: accuracy, pass^k, calls, tokens, percentiles, growth (benchmarks/report/aggregate.py)."""

from __future__ import annotations

from typing import Any

import pytest

from benchmarks.report.aggregate import pass_hat_k, percentile, summarize
from benchmarks.results import TurnRow
from benchmarks.scoring.turn import TurnScore


def row(mode: str, scenario: str, turn: int, rep: int = 1, passed: bool = True, **kw: Any) -> TurnRow:
    values: dict[str, Any] = {"category": "c", "user": "u", "model_calls": 2, "input_tokens": 100}
    values.update(kw)
    return TurnRow(
        mode=mode, scenario=scenario, turn=turn, repetition=rep, score=TurnScore(passed=passed), **values
    )


def test_pass_hat_k_follows_tau_bench() -> None:
    # Two tasks: one passed 2 of 3 trials, one 3 of 3.
    outcomes = [[True, True, False], [True, True, True]]
    assert pass_hat_k(outcomes, 1) == pytest.approx((2 / 3 + 1) / 2)
    assert pass_hat_k(outcomes, 2) == pytest.approx((1 / 3 + 1) / 2)
    assert pass_hat_k(outcomes, 3) == pytest.approx(0.5)  # all k passed only in the second task
    assert pass_hat_k(outcomes, 4) is None


def test_percentiles_interpolate() -> None:
    assert percentile([1, 2, 3, 4], 50) == 2.5
    assert percentile([5], 95) == 5
    assert percentile([], 50) == 0.0
    assert percentile(list(range(1, 101)), 95) == pytest.approx(95.05)


def test_modes_categories_and_pass_k_are_summarised() -> None:
    rows = [
        row("planner", "a", 1, 1, True, model_calls=1, category="small_talk"),
        row("planner", "a", 1, 2, False, model_calls=2, category="small_talk"),
        row("toolcalling", "a", 1, 1, True, model_calls=3, input_tokens=300, category="small_talk"),
        row(
            "toolcalling",
            "a",
            1,
            2,
            True,
            model_calls=5,
            input_tokens=500,
            category="small_talk",
            failed=True,
        ),
    ]
    summary = summarize(rows, ["planner", "toolcalling"])
    planner, tools = summary.modes
    assert (planner.mode, planner.accuracy, planner.calls_mean, planner.calls_max) == ("planner", 0.5, 1.5, 2)
    assert planner.pass_k == {1: 0.5, 2: 0.0}
    assert tools.pass_k == {1: 1.0, 2: 1.0} and tools.failed_turns == 1
    assert tools.input_tokens_mean == 400
    assert summary.repetitions == 2
    assert [(c.category, c.mode, c.accuracy) for c in summary.categories] == [
        ("small_talk", "planner", 0.5),
        ("small_talk", "toolcalling", 1.0),
    ]


def test_simulated_latency_appears_only_with_a_profile() -> None:
    plain = summarize([row("planner", "a", 1, model_ms=10, harness_ms=2)]).modes[0]
    assert plain.latency_p50 == 12 and plain.simulated_p50 is None and plain.harness_p50 == 2
    profiled = summarize([row("planner", "a", 1, model_ms=1, simulated_model_ms=500, harness_ms=2)]).modes[0]
    assert profiled.simulated_p50 == 502


def test_the_growth_curve_follows_the_longest_conversation() -> None:
    rows = [row("planner", "long", t, input_tokens=100 + t) for t in range(1, 13)]
    rows += [row("toolcalling-full", "long", t, input_tokens=100 * t) for t in range(1, 13)]
    rows += [row("planner", "short", 1, input_tokens=5)]
    growth = summarize(rows).growth
    assert growth is not None and growth.scenario == "long"
    assert len(growth.series["planner"]) == 12
    assert growth.ratio("toolcalling-full") == pytest.approx(12.0)
    assert summarize([row("planner", "short", 1)]).growth is None


def test_calls_on_turns_without_operations_are_averaged_apart() -> None:
    from benchmarks.results import OperationRecord

    ran = [OperationRecord(funcion="ventas_anuales", parametros={"anio": 2025})]
    rows = [
        row("planner", "a", 1, model_calls=1),
        row("planner", "a", 2, model_calls=2, operations=ran),
        row("planner", "a", 3, model_calls=2, failed=True),
    ]
    assert summarize(rows).modes[0].no_operation_calls_mean == 1.0
    assert summarize([row("planner", "a", 1, operations=ran)]).modes[0].no_operation_calls_mean is None
