"""benchmarks.stats: the one percentile and mean, intervals and the paired test, against values computed by
hand."""

from __future__ import annotations

import pytest

from benchmarks.stats import (
    Interval,
    bootstrap_interval,
    mcnemar_exact,
    mean,
    median,
    paired_bootstrap_difference,
    percentile,
    wilson_interval,
)


def test_percentile_interpolates_between_the_closest_ranks() -> None:
    assert percentile([4, 1, 3, 2], 50) == median([4, 1, 3, 2]) == 2.5
    assert percentile([5], 95) == 5
    assert percentile(list(range(1, 101)), 95) == pytest.approx(95.05)
    assert percentile([], 50) == mean([]) == median([]) == 0.0
    assert mean([1, 2, 6]) == 3


@pytest.mark.parametrize(
    ("successes", "n", "low", "high"),
    [
        # z = 1.959964; e.g. 7/10: centre (0.7 + 0.19207) / 1.38415 = 0.64449, half 0.24772
        (0, 10, 0.0, 0.27753),
        (10, 10, 0.72247, 1.0),
        (7, 10, 0.39678, 0.89221),
        (1, 2, 0.09453, 0.90547),
        (50, 100, 0.40383, 0.59617),
        (0, 0, 0.0, 1.0),  # no trials: uninformative
    ],
)
def test_wilson_interval_matches_hand_computed_values(
    successes: int, n: int, low: float, high: float
) -> None:
    interval = wilson_interval(successes, n)
    assert (interval.low, interval.high) == pytest.approx((low, high), abs=5e-5)
    assert interval.level == 0.95


def test_wilson_interval_keeps_exact_bounds_and_narrows_with_more_trials() -> None:
    assert wilson_interval(0, 131).low == 0.0
    assert wilson_interval(131, 131).high == 1.0
    small, large = wilson_interval(7, 10), wilson_interval(70, 100)
    assert large.high - large.low < small.high - small.low


@pytest.mark.parametrize(
    "call",
    [
        lambda: wilson_interval(11, 10),
        lambda: wilson_interval(1, 10, level=1.5),
        lambda: mcnemar_exact(-1, 2),
    ],
)
def test_impossible_counts_are_refused(call: object) -> None:
    with pytest.raises(ValueError):
        call()  # type: ignore[operator]


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


@pytest.mark.parametrize(
    ("pairs", "low", "high"),
    [
        ({f"s{i}": [(True, True), (False, False)] for i in range(10)}, 0.0, 0.0),  # identical outcomes
        ({f"s{i}": [(True, False), (True, True)] for i in range(20)}, 0.5, 0.5),  # one mode always wins
    ],
)
def test_paired_bootstrap_of_a_constant_difference_is_that_point(
    pairs: dict[str, list[tuple[bool, bool]]], low: float, high: float
) -> None:
    interval = paired_bootstrap_difference(pairs)
    assert interval is not None
    assert (interval.low, interval.high) == pytest.approx((low, high))
    assert interval.excludes_zero() is (low > 0)


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
    bounds = {
        (i.low, i.high) for s in range(5) if (i := paired_bootstrap_difference(pairs, seed=s, resamples=40))
    }
    assert len(bounds) > 1


def test_bootstrap_of_nothing_is_none_and_of_constants_a_point() -> None:
    assert paired_bootstrap_difference({}) is None
    assert bootstrap_interval([]) is None
    assert bootstrap_interval([[3.0, 3.0], [3.0]], median) == Interval(low=3.0, high=3.0)


def test_bootstrap_interval_of_the_mean_brackets_the_mean() -> None:
    interval = bootstrap_interval([[float(v)] for v in range(1, 101)], mean)
    assert interval is not None
    assert interval.low < 50.5 < interval.high
    # standard error of the mean of 1..100 is about 2.9: a 95% interval is about ±5.7
    assert 8 < interval.high - interval.low < 15


def test_bootstrap_clusters_move_together() -> None:
    # two clusters of very different values: resampling clusters gives all-low, mixed or all-high means
    interval = bootstrap_interval([[1.0] * 50, [100.0] * 50], median, resamples=400)
    assert interval is not None
    assert (interval.low, interval.high) == (1.0, 100.0)
