"""Aggregating turn records into the figures a reader compares: per mode, per category, and over turns."""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Sequence

from pydantic import BaseModel, Field

from benchmarks.results import TurnRow
from shared.failures import FAILURE_KINDS

LONG_CONVERSATION_MIN_TURNS = 10
"""A scenario with at least this many turns can be the context-growth conversation (the longest one is)."""


def percentile(values: Sequence[float], q: float) -> float:
    """The ``q``-th percentile (0–100) with linear interpolation; 0.0 for no values."""
    if not values:
        return 0.0
    ordered = sorted(values)
    rank = (len(ordered) - 1) * q / 100
    low, high = math.floor(rank), math.ceil(rank)
    return ordered[low] + (ordered[high] - ordered[low]) * (rank - low)


def _mean(values: Sequence[float]) -> float:
    return sum(values) / len(values) if values else 0.0


def pass_hat_k(outcomes: Iterable[Sequence[bool]], k: int) -> float | None:
    """tau-bench's pass^k: the chance that k repetitions drawn from a task's trials all pass, averaged.

    With ``n`` trials of which ``c`` passed, a task contributes ``C(c, k) / C(n, k)``; with ``k == n`` that is
    1 exactly when every repetition passed. Tasks with fewer than ``k`` trials are left out.
    """
    scores = [
        math.comb(sum(trials), k) / math.comb(len(trials), k) for trials in outcomes if len(trials) >= k
    ]
    return _mean(scores) if scores else None


class ModeSummary(BaseModel):
    """The figures of one mode over a set of turns."""

    mode: str
    turns: int
    passed: int
    failed_turns: int
    """Turns that ended in a failure kind (see ``shared.failures``)."""
    failures: dict[str, int] = Field(default_factory=dict)
    """Failed turns per failure kind (kinds with no turn are left out)."""
    accuracy: float
    pass_k: dict[int, float] = Field(default_factory=dict)
    """pass^k for k = 1 … repetitions (scenario-turns are the tasks)."""
    calls_mean: float
    calls_max: int
    input_tokens_mean: float
    output_tokens_mean: float
    latency_p50: float
    latency_p95: float
    simulated_p50: float | None = None
    simulated_p95: float | None = None
    harness_p50: float
    harness_p95: float
    no_operation_calls_mean: float | None = None
    """Model calls per turn on turns that executed no operation (small talk, refusals); ``None`` if none."""


class CategorySummary(BaseModel):
    """Accuracy of one mode on one category."""

    category: str
    mode: str
    turns: int
    accuracy: float
    calls_mean: float


class GrowthCurve(BaseModel):
    """Input tokens per turn on the long conversation, one series per mode (mean over repetitions)."""

    scenario: str
    series: dict[str, list[float]]

    def ratio(self, mode: str) -> float | None:
        """Last turn's input tokens over the first turn's."""
        values = self.series.get(mode) or []
        if len(values) < 2 or values[0] <= 0:
            return None
        return values[-1] / values[0]


class Summary(BaseModel):
    """Everything the reports show."""

    modes: list[ModeSummary]
    categories: list[CategorySummary]
    growth: GrowthCurve | None = None
    repetitions: int = 1

    def mode(self, name: str) -> ModeSummary | None:
        """The summary of mode ``name``, if it ran."""
        return next((m for m in self.modes if m.mode == name), None)


def summarize_mode(mode: str, rows: Sequence[TurnRow]) -> ModeSummary:
    """The figures of one mode."""
    by_task: dict[tuple[str, int], list[bool]] = defaultdict(list)
    for row in rows:
        by_task[(row.scenario, row.turn)].append(row.passed)
    repetitions = max((len(trials) for trials in by_task.values()), default=1)
    pass_k = {
        k: value for k in range(1, repetitions + 1) if (value := pass_hat_k(by_task.values(), k)) is not None
    }
    simulated = [v for row in rows if (v := row.simulated_latency_ms) is not None]
    latencies = [row.latency_ms for row in rows]
    harness = [row.harness_ms for row in rows]
    calls = [row.model_calls for row in rows]
    no_operation_calls = [row.model_calls for row in rows if not row.operations and not row.failed]
    return ModeSummary(
        mode=mode,
        turns=len(rows),
        passed=sum(row.passed for row in rows),
        failed_turns=sum(row.failed for row in rows),
        failures=_failures_by_kind(rows),
        accuracy=_mean([float(row.passed) for row in rows]),
        pass_k=pass_k,
        calls_mean=_mean(calls),
        calls_max=max(calls, default=0),
        input_tokens_mean=_mean([row.input_tokens for row in rows]),
        output_tokens_mean=_mean([row.output_tokens for row in rows]),
        latency_p50=percentile(latencies, 50),
        latency_p95=percentile(latencies, 95),
        simulated_p50=percentile(simulated, 50) if simulated else None,
        simulated_p95=percentile(simulated, 95) if simulated else None,
        harness_p50=percentile(harness, 50),
        harness_p95=percentile(harness, 95),
        no_operation_calls_mean=_mean(no_operation_calls) if no_operation_calls else None,
    )


def _failures_by_kind(rows: Sequence[TurnRow]) -> dict[str, int]:
    """Failed turns per kind, in the contract's order; rows from files without kinds count as ``provider``."""
    counts: dict[str, int] = defaultdict(int)
    for row in rows:
        if row.failed:
            counts[row.failure or "provider"] += 1
    return {kind: counts[kind] for kind in FAILURE_KINDS if counts.get(kind)}


def growth_curve(rows: Sequence[TurnRow]) -> GrowthCurve | None:
    """Input tokens per turn index on the longest scenario (at least 10 turns), per mode."""
    lengths: dict[str, int] = defaultdict(int)
    for row in rows:
        lengths[row.scenario] = max(lengths[row.scenario], row.turn)
    if not lengths:
        return None
    scenario, length = max(lengths.items(), key=lambda item: (item[1], item[0]))
    if length < LONG_CONVERSATION_MIN_TURNS:
        return None
    tokens: dict[str, dict[int, list[int]]] = defaultdict(lambda: defaultdict(list))
    for row in rows:
        if row.scenario == scenario:
            tokens[row.mode][row.turn].append(row.input_tokens)
    series = {
        mode: [_mean(per_turn.get(turn, [])) for turn in range(1, length + 1)]
        for mode, per_turn in tokens.items()
    }
    return GrowthCurve(scenario=scenario, series=series)


def summarize(rows: Sequence[TurnRow], modes: Sequence[str] | None = None) -> Summary:
    """Aggregate turn records; ``modes`` fixes the order (default: order of first appearance)."""
    order = list(modes or [])
    for row in rows:
        if row.mode not in order:
            order.append(row.mode)
    by_mode: dict[str, list[TurnRow]] = defaultdict(list)
    by_category: dict[tuple[str, str], list[TurnRow]] = defaultdict(list)
    for row in rows:
        by_mode[row.mode].append(row)
        by_category[(row.category, row.mode)].append(row)
    categories = [
        CategorySummary(
            category=category,
            mode=mode,
            turns=len(group),
            accuracy=_mean([float(r.passed) for r in group]),
            calls_mean=_mean([r.model_calls for r in group]),
        )
        for (category, mode), group in sorted(
            by_category.items(), key=lambda kv: (kv[0][0], order.index(kv[0][1]))
        )
    ]
    summaries = [summarize_mode(mode, by_mode[mode]) for mode in order if by_mode.get(mode)]
    repetitions = max((row.repetition for row in rows), default=1)
    return Summary(modes=summaries, categories=categories, growth=growth_curve(rows), repetitions=repetitions)
