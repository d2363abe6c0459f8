"""How sure a run's figures are: confidence intervals, the paired test of two modes, and the one definition
of percentile, median and mean every figure uses (pure Python).

The bootstrap draws from a ``random.Random`` seeded by the caller (:data:`DEFAULT_SEED` by default), so a
report rendered twice shows the same intervals. It resamples *clusters* (conversations, or the repetitions
of one turn) because their turns are not independent. The scenarios are a fixed, hand-written suite, not a
random sample of what users ask: an interval describes variation on *this* suite.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Mapping, Sequence
from statistics import NormalDist
from typing import Any

from pydantic import BaseModel, ConfigDict

DEFAULT_LEVEL = 0.95
"""Confidence level of every interval the reports show."""
DEFAULT_RESAMPLES = 2000
"""Bootstrap resamples: enough for stable 95% percentile bounds at the reports' precision."""
DEFAULT_SEED = 20250101
"""Seed of the bootstrap's random draws, fixed so reports are reproducible."""


class Interval(BaseModel):
    """A confidence interval ``[low, high]`` at ``level``."""

    model_config = ConfigDict(frozen=True)

    low: float
    high: float
    level: float = DEFAULT_LEVEL

    def excludes_zero(self) -> bool:
        return self.low > 0 or self.high < 0

    def contains(self, value: float) -> bool:
        return self.low <= value <= self.high


def _z(level: float) -> float:
    if not 0 < level < 1:
        raise ValueError(f"level must be between 0 and 1, not {level!r}")
    return NormalDist().inv_cdf(0.5 + level / 2)


def wilson_interval(successes: int, n: int, level: float = DEFAULT_LEVEL) -> Interval:
    """The Wilson score interval of ``successes`` out of ``n`` (``[0, 1]`` when ``n`` is 0).

    ``center = (p + z²/2n) / (1 + z²/n)``, ``half = z·sqrt(p(1-p)/n + z²/4n²) / (1 + z²/n)``.
    """
    if n < 0 or not 0 <= successes <= max(n, 0):
        raise ValueError(f"need 0 <= successes <= n, got {successes} of {n}")
    if n == 0:
        return Interval(low=0.0, high=1.0, level=level)
    z = _z(level)
    p = successes / n
    denominator = 1 + z * z / n
    center = (p + z * z / (2 * n)) / denominator
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denominator
    # at 0/n and n/n the exact bound is 0 or 1; rounding must not move it
    low = 0.0 if successes == 0 else max(0.0, center - half)
    high = 1.0 if successes == n else min(1.0, center + half)
    return Interval(low=low, high=high, level=level)


def mcnemar_exact(b: int, c: int) -> float:
    """Two-sided exact McNemar p-value for ``b`` and ``c`` discordant pairs.

    Under "no difference" each discordant pair is a fair coin, so ``min(b, c)`` is Binomial(b + c, 1/2) in
    the lower tail: ``p = min(1, 2 · P[X <= min(b, c)])``. No discordant pair gives 1.0.
    """
    if b < 0 or c < 0:
        raise ValueError(f"discordant counts must be non-negative, got b={b}, c={c}")
    n = b + c
    if n == 0:
        return 1.0
    tail: float = sum(math.comb(n, i) for i in range(min(b, c) + 1)) / 2**n
    return min(1.0, 2 * tail)


def mean(values: Sequence[float]) -> float:
    """0.0 for no values."""
    return sum(values) / len(values) if values else 0.0


def percentile(values: Sequence[float], q: float) -> float:
    """The ``q``-th percentile (0–100), interpolating linearly between the closest ranks as numpy's
    default does (0.0 for no values)."""
    if not values:
        return 0.0
    ordered = sorted(values)
    rank = (len(ordered) - 1) * q / 100
    low, high = math.floor(rank), math.ceil(rank)
    return ordered[low] + (ordered[high] - ordered[low]) * (rank - low)


def median(values: Sequence[float]) -> float:
    return percentile(values, 50)


def bootstrap_interval(
    clusters: Sequence[Sequence[float]],
    statistic: Callable[[Sequence[float]], float] = mean,
    *,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
    level: float = DEFAULT_LEVEL,
) -> Interval | None:
    """Percentile bootstrap interval of ``statistic`` over the values of ``clusters``.

    Each resample draws as many clusters as there are, with replacement, and applies ``statistic`` to all
    their values pooled; a cluster keeps values that vary together (the repetitions of one turn). Pass one
    value per cluster for the plain bootstrap. ``None`` when there are no values.
    """
    groups = [list(group) for group in clusters if group]
    if not groups:
        return None
    rng = random.Random(seed)
    estimates = []
    for _ in range(resamples):
        pooled: list[float] = []
        for group in rng.choices(groups, k=len(groups)):
            pooled.extend(group)
        estimates.append(statistic(pooled))
    tail = (1 - level) / 2 * 100
    return Interval(low=percentile(estimates, tail), high=percentile(estimates, 100 - tail), level=level)


def paired_bootstrap_difference(
    pairs: Mapping[Any, Sequence[tuple[bool, bool]]],
    *,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
    level: float = DEFAULT_LEVEL,
) -> Interval | None:
    """Percentile bootstrap interval of ``accuracy(a) - accuracy(b)`` on paired outcomes.

    ``pairs`` maps a cluster (a conversation) to its paired outcomes ``(a passed, b passed)``, one per turn
    (and repetition). Clusters are drawn with replacement; a resample's difference is the mean of
    ``a - b`` over the turns drawn. ``None`` when there is no pair.
    """
    clusters = [[float(a) - float(b) for a, b in outcomes] for outcomes in pairs.values() if outcomes]
    return bootstrap_interval(clusters, mean, resamples=resamples, seed=seed, level=level)
