"""Aggregation: accuracy, pass^k, calls, tokens (reported or not), growth, intervals, the paired comparison
(benchmarks/report/aggregate.py)."""

from __future__ import annotations

from typing import Any

import pytest

from benchmarks.report.aggregate import pass_hat_k, summarize, summarize_mode
from benchmarks.report.findings import measurement_sentences
from benchmarks.report.summary import NOT_REPORTED, tokens_text
from benchmarks.results import OperationRecord, TurnRow
from tests.benchmarks.report.sample_results import turn_row


def row(mode: str, scenario: str, turn: int, rep: int = 1, passed: bool = True, **kw: Any) -> TurnRow:
    values: dict[str, Any] = {"model_calls": 2, "input_tokens": 100, **kw}
    return turn_row(mode, passed=passed, scenario=scenario, turn=turn, repetition=rep, **values)


def _paired(outcomes: list[tuple[bool, bool]]) -> list[TurnRow]:
    """Turn 1 of scenario ``s<i>`` in planner and in tool calling, passed as ``outcomes[i]`` says."""
    modes = ("planner", "toolcalling")
    return [
        row(mode, f"s{i}", 1, passed=p)
        for i, pair in enumerate(outcomes)
        for mode, p in zip(modes, pair, strict=True)
    ]


def test_pass_hat_k_follows_tau_bench() -> None:
    # Two tasks: one passed 2 of 3 trials, one 3 of 3.
    outcomes = [[True, True, False], [True, True, True]]
    assert pass_hat_k(outcomes, 1) == pytest.approx((2 / 3 + 1) / 2)
    assert pass_hat_k(outcomes, 2) == pytest.approx((1 / 3 + 1) / 2)
    assert pass_hat_k(outcomes, 3) == pytest.approx(0.5)  # all k passed only in the second task
    assert pass_hat_k(outcomes, 4) is None


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
    ran = [OperationRecord(funcion="ventas_anuales", parametros={"anio": 2025})]
    rows = [
        row("planner", "a", 1, model_calls=1),
        row("planner", "a", 2, model_calls=2, operations=ran),
        row("planner", "a", 3, model_calls=2, failed=True),
    ]
    assert summarize(rows).modes[0].no_operation_calls_mean == 1.0
    assert summarize([row("planner", "a", 1, operations=ran)]).modes[0].no_operation_calls_mean is None


# -- intervals, paired comparison, warm-up ------------------------------------------------------------------


def test_accuracy_carries_a_wilson_interval_per_mode_and_category() -> None:
    rows = [row("planner", "a", t, passed=t <= 7, category="c") for t in range(1, 11)]
    summary = summarize(rows)
    interval = summary.modes[0].accuracy_interval
    assert interval is not None
    assert (interval.low, interval.high) == pytest.approx((0.39678, 0.89221), abs=5e-5)
    category = summary.categories[0]
    assert category.passed == 7 and category.accuracy_interval == interval


def test_warm_up_rows_are_left_out_of_every_figure() -> None:
    rows = [
        row("planner", "a", 1, model_calls=9, input_tokens=9999, passed=False, warmup=True),
        row("planner", "a", 1, model_calls=2, input_tokens=100),
        row("planner", "a", 2, model_calls=2, input_tokens=100),
    ]
    summary = summarize(rows)
    planner = summary.modes[0]
    assert (planner.turns, planner.accuracy, planner.calls_max, planner.input_tokens_mean) == (2, 1.0, 2, 100)
    assert summary.warmup_turns == 1
    assert summary.categories[0].turns == 2


def test_modes_are_compared_on_the_turns_both_ran() -> None:
    outcomes = {  # (scenario, turn): (planner passed, toolcalling passed)
        ("s1", 1): (True, True),
        ("s1", 2): (True, False),
        ("s2", 1): (False, False),
        ("s3", 1): (True, False),
        ("s4", 1): (False, True),
    }
    rows = []
    for (scenario, turn), (planner, tools) in outcomes.items():
        rows.append(row("planner", scenario, turn, passed=planner))
        rows.append(row("toolcalling", scenario, turn, passed=tools))
    rows.append(row("toolcalling", "only-tools", 1, passed=True))  # no pair: left out of the comparison
    summary = summarize(rows, ["planner", "toolcalling"])
    (paired,) = summary.paired
    assert (paired.base, paired.other, paired.pairs) == ("planner", "toolcalling", 5)
    assert (paired.both, paired.base_only, paired.other_only, paired.neither) == (1, 2, 1, 1)
    assert paired.difference == pytest.approx(0.2)
    assert paired.p_value == pytest.approx(1.0)  # 2 vs 1 discordant: 2 · P[X <= 1 | n=3] = 1
    assert paired.interval is not None and paired.interval.contains(0.0)
    assert not paired.established


def test_a_consistent_difference_is_established() -> None:
    rows = _paired([(True, i % 3 != 0) for i in range(30)])  # tool calling fails 10 of 30
    (paired,) = summarize(rows, ["planner", "toolcalling"]).paired
    assert paired.other_only == 0 and paired.base_only == 10
    assert paired.p_value == pytest.approx(2 / 1024)
    assert paired.interval is not None and paired.interval.low > 0
    assert paired.established


def test_the_paired_bootstrap_is_reproducible() -> None:
    rows = _paired([(i % 2 == 0, i % 3 == 0) for i in range(12)])
    first = summarize(rows, ["planner", "toolcalling"]).paired[0].interval
    assert first == summarize(rows, ["planner", "toolcalling"]).paired[0].interval
    assert first != summarize(rows, ["planner", "toolcalling"], seed=7).paired[0].interval


def test_repetitions_give_bootstrap_intervals_of_latency_and_tokens() -> None:
    rows = [
        row("planner", "a", t, rep, model_ms=10.0 * t + rep, harness_ms=1.0, input_tokens=100 * t)
        for t in range(1, 6)
        for rep in (1, 2)
    ]
    planner = summarize(rows).modes[0]
    assert set(planner.intervals) == {
        "latency_mean",
        "latency_p50",
        "input_tokens_mean",
        "output_tokens_mean",
    }
    assert planner.intervals["latency_mean"].contains(planner.latency_mean)
    assert planner.intervals["input_tokens_mean"].contains(planner.input_tokens_mean)
    single = summarize([r for r in rows if r.repetition == 1]).modes[0]
    assert single.intervals == {}, "one repetition: no latency intervals"


def test_optional_fields_of_newer_runners_are_read_when_present() -> None:
    rows = [row("planner", "a", t, input_tokens=1000) for t in (1, 2)]
    assert summarize(rows).modes[0].cached_share is None
    for r, cached, first in zip(rows, (400, 600), (300.0, 500.0), strict=True):
        r.__dict__.update(cached_input_tokens=cached, simulated_first_answer_ms=first)  # fields others add
    planner = summarize(rows).modes[0]
    assert planner.cached_share == pytest.approx(0.5) and planner.cached_input_tokens_mean == 500
    assert planner.simulated_first_answer_p50 == 400 and planner.first_answer_p50 is None


def _usage(turn: int, *, reported: bool, tokens: int = 0, recovered: int = 0) -> TurnRow:
    return turn_row(
        "toolcalling",
        turn=turn,
        model_calls=1,
        input_tokens=tokens,
        output_tokens=tokens // 10,
        usage_reported=reported,
        recovered_tool_calls=recovered,
    )


def test_unreported_usage_is_not_reported_never_zero_and_means_cover_the_turns_that_reported() -> None:
    mode = summarize_mode("toolcalling", [_usage(1, reported=False), _usage(2, reported=False)])
    assert not mode.tokens_reported and tokens_text(mode, mode.input_tokens_mean) == NOT_REPORTED
    sentences = measurement_sentences([mode])
    assert any("did not report token usage" in s and "toolcalling 2" in s for s in sentences)
    mode = summarize_mode("toolcalling", [_usage(1, reported=True, tokens=1000), _usage(2, reported=False)])
    assert mode.tokens_reported and mode.usage_unreported == 1
    assert tokens_text(mode, mode.input_tokens_mean) == "1000"


def test_recovered_tool_calls_are_summed_and_said() -> None:
    rows = [_usage(1, reported=True, recovered=2), _usage(2, reported=True, recovered=1)]
    mode = summarize_mode("toolcalling", rows)
    assert mode.recovered_tool_calls == 3
    assert "Tool calls written as text and recovered into real tool calls: toolcalling 3." in (
        measurement_sentences([mode])
    )
