"""benchmarks.stats: intervals and the paired test, against values computed by hand."""

from __future__ import annotations

import math

import pytest

from benchmarks.stats import (
    Interval,
    bootstrap_interval,
    mcnemar_exact,
    mean,
    median,
    paired_bootstrap_difference,
    wilson_interval,
)


@pytest.mark.parametrize(
    ("successes", "n", "low", "high"),
    [
        # z = 1.959964; e.g. 7/10: centre (0.7 + 0.19207) / 1.38415 = 0.64449, half 0.24772
        (0, 10, 0.0, 0.27753),
        (10, 10, 0.72247, 1.0),
        (7, 10, 0.39678, 0.89221),
        (1, 2, 0.09453, 0.90547),
        (50, 100, 0.40383, 0.59617),
    ],
)
def test_wilson_interval_matches_hand_computed_values(
    successes: int, n: int, low: float, high: float
) -> None:
    interval = wilson_interval(successes, n)
    assert interval.low == pytest.approx(low, abs=5e-5)
    assert interval.high == pytest.approx(high, abs=5e-5)
    assert interval.level == 0.95


def test_wilson_interval_keeps_the_exact_bound_at_all_or_nothing() -> None:
    assert wilson_interval(0, 131).low == 0.0
    assert wilson_interval(131, 131).high == 1.0


def test_wilson_interval_of_no_trials_is_uninformative() -> None:
    assert wilson_interval(0, 0) == Interval(low=0.0, high=1.0)


def test_wilson_interval_narrows_with_more_trials() -> None:
    small, large = wilson_interval(7, 10), wilson_interval(70, 100)
    assert large.high - large.low < small.high - small.low


def test_wilson_interval_refuses_impossible_counts() -> None:
    with pytest.raises(ValueError):
        wilson_interval(11, 10)
    with pytest.raises(ValueError):
        wilson_interval(1, 10, level=1.5)


@pytest.mark.parametrize(
    ("b", "c", "p"),
    [
        (0, 5, 0.0625),  # 2 · (1/2)^5
        (5, 0, 0.0625),
        (1, 5, 0.21875),  # 2 · (1 + 6) / 64
        (0, 0, 1.0),
        (3, 3, 1.0),  # 2 · P[X <= 3 | n=6] = 2 · 42/64 > 1
        (0, 10, 2 / 1024),
    ],
)
def test_mcnemar_exact_p_values(b: int, c: int, p: float) -> None:
    assert mcnemar_exact(b, c) == pytest.approx(p)


def test_mcnemar_refuses_negative_counts() -> None:
    with pytest.raises(ValueError):
        mcnemar_exact(-1, 2)


def test_mean_and_median() -> None:
    assert mean([]) == 0.0 and median([]) == 0.0
    assert mean([1, 2, 6]) == 3
    assert median([5, 1, 3]) == 3
    assert median([4, 1, 3, 2]) == 2.5


def test_paired_bootstrap_of_identical_outcomes_is_exactly_zero() -> None:
    pairs = {f"s{i}": [(True, True), (False, False)] for i in range(10)}
    assert paired_bootstrap_difference(pairs) == Interval(low=0.0, high=0.0)


def test_paired_bootstrap_excludes_zero_when_one_mode_always_wins() -> None:
    pairs = {f"s{i}": [(True, False), (True, True)] for i in range(20)}
    interval = paired_bootstrap_difference(pairs)
    assert interval is not None
    assert interval.low == pytest.approx(0.5) and interval.high == pytest.approx(0.5)
    assert interval.excludes_zero()


def test_paired_bootstrap_includes_zero_for_a_single_discordant_turn() -> None:
    pairs = {f"s{i}": [(True, True)] for i in range(30)}
    pairs["s0"] = [(True, False)]
    interval = paired_bootstrap_difference(pairs)
    assert interval is not None
    assert interval.low == 0.0 < interval.high
    assert not interval.excludes_zero()


def test_paired_bootstrap_is_reproducible_and_depends_on_the_seed() -> None:
    pairs = {f"s{i}": [(i % 3 == 0, i % 2 == 0), (True, i % 5 == 0)] for i in range(25)}
    first = paired_bootstrap_difference(pairs, seed=1)
    assert first == paired_bootstrap_difference(pairs, seed=1)
    observed = mean([float(a) - float(b) for turns in pairs.values() for a, b in turns])
    assert first is not None and first.contains(observed)
    # few resamples, so that different draws show
    widths = {
        (i.low, i.high)
        for s in range(5)
        if (i := paired_bootstrap_difference(pairs, seed=s, resamples=40)) is not None
    }
    assert len(widths) > 1


def test_paired_bootstrap_of_nothing_is_none() -> None:
    assert paired_bootstrap_difference({}) is None
    assert bootstrap_interval([]) is None


def test_bootstrap_interval_of_the_mean_brackets_the_mean() -> None:
    values = [[float(v)] for v in range(1, 101)]
    interval = bootstrap_interval(values, mean)
    assert interval is not None
    assert interval.low < 50.5 < interval.high
    # standard error of the mean of 1..100 is about 2.9: a 95% interval is about ±5.7
    assert 8 < interval.high - interval.low < 15


def test_bootstrap_clusters_move_together() -> None:
    # two clusters of very different values: resampling clusters gives all-low, mixed or all-high means
    clusters = [[1.0] * 50, [100.0] * 50]
    interval = bootstrap_interval(clusters, median, resamples=400)
    assert interval is not None
    assert interval.low == 1.0 and interval.high == 100.0


def test_bootstrap_of_constant_values_is_a_point() -> None:
    interval = bootstrap_interval([[3.0, 3.0], [3.0]], median)
    assert interval == Interval(low=3.0, high=3.0)
    assert not math.isnan(interval.low)
