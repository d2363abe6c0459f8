"""Aggregating turn records into the figures a reader compares: per mode, per category, and over turns.

A run with several targets (models, ``--target``) is summarised per target (:class:`TargetSummary`), each
exactly as a one-target run: every statistic that compares modes is computed within one target, never across
targets. Warm-up turns (``TurnRow.warmup``) are left out of every figure. Accuracy carries a Wilson 95%
interval (turns counted as independent trials); modes are compared on the turns both ran
(:class:`PairedComparison`: exact McNemar and a bootstrap interval over conversations); with more than one
repetition, latency and token means carry bootstrap intervals over turns (each turn's repetitions resampled
together); the valid-plan rate counts the turns whose engine said whether its request for operations was
valid. See :mod:`benchmarks.stats`.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from typing import TypeVar

from benchmarks.report.summary import (
    CategorySummary,
    GrowthCurve,
    ModeSummary,
    PairedComparison,
    Summary,
    TargetSummary,
)
from benchmarks.results import TurnRow
from benchmarks.stats import (
    DEFAULT_SEED,
    Interval,
    bootstrap_interval,
    mcnemar_exact,
    mean,
    median,
    paired_bootstrap_difference,
    percentile,
    wilson_interval,
)
from benchmarks.targets import BenchTarget
from shared.failures import FAILURE_KINDS

LONG_CONVERSATION_MIN_TURNS = 10
"""A scenario with at least this many turns can be the context-growth conversation (the longest one is)."""


Key = tuple[str, int, int]
"""A turn both modes ran: (scenario, turn, repetition)."""

T = TypeVar("T")


def paired_values(
    rows: Sequence[TurnRow], base: str, other: str, read: Callable[[TurnRow], T | None]
) -> dict[Key, tuple[T, T]]:
    """``read`` of ``base`` and of ``other`` on every turn both ran and both have the figure for, in turn
    order. Warm-up rows are left out."""
    values: dict[str, dict[Key, T]] = {base: {}, other: {}}
    for row in rows:
        if row.warmup or row.mode not in values:
            continue
        value = read(row)
        if value is not None:
            values[row.mode][(row.scenario, row.turn, row.repetition)] = value
    keys = sorted(values[base].keys() & values[other].keys())
    return {key: (values[base][key], values[other][key]) for key in keys}


def pass_hat_k(outcomes: Iterable[Sequence[bool]], k: int) -> float | None:
    """tau-bench's pass^k: the chance that k repetitions drawn from a task's trials all pass, averaged.

    With ``n`` trials of which ``c`` passed, a task contributes ``C(c, k) / C(n, k)``; with ``k == n`` that is
    1 exactly when every repetition passed. Tasks with fewer than ``k`` trials are left out.
    """
    scores = [
        math.comb(sum(trials), k) / math.comb(len(trials), k) for trials in outcomes if len(trials) >= k
    ]
    return mean(scores) if scores else None


def _by_task(values: Iterable[tuple[TurnRow, float]]) -> list[list[float]]:
    """Each row's value grouped per task (scenario, turn): the clusters of a bootstrap."""
    groups: dict[tuple[str, int], list[float]] = defaultdict(list)
    for row, value in values:
        groups[(row.scenario, row.turn)].append(value)
    return list(groups.values())


_INTERVAL_FIGURES: tuple[
    tuple[str, Callable[[TurnRow], float | None], Callable[[Sequence[float]], float]], ...
] = (
    ("latency_mean", lambda row: row.latency_ms, mean),
    ("latency_p50", lambda row: row.latency_ms, median),
    ("input_tokens_mean", lambda row: float(row.input_tokens), mean),
    ("output_tokens_mean", lambda row: float(row.output_tokens), mean),
    ("simulated_p50", lambda row: row.simulated_latency_ms, median),
    ("first_answer_p50", lambda row: row.first_answer_ms, median),
    ("simulated_first_answer_p50", lambda row: row.simulated_first_answer_ms, median),
)
"""The figures that get a bootstrap interval: (name, a row's value, the statistic)."""


def _intervals(rows: Sequence[TurnRow], seed: int) -> dict[str, Interval]:
    """Bootstrap intervals of latency and token figures, resampling tasks with their repetitions (a figure
    some rows lack is resampled over the rows that have it)."""
    intervals: dict[str, Interval] = {}
    for name, read, statistic in _INTERVAL_FIGURES:
        having = [(row, value) for row in rows if (value := read(row)) is not None]
        if having and (interval := bootstrap_interval(_by_task(having), statistic, seed=seed)) is not None:
            intervals[name] = interval
    return intervals


def summarize_mode(mode: str, rows: Sequence[TurnRow], *, seed: int = DEFAULT_SEED) -> ModeSummary:
    """The figures of one mode (warm-up rows must already be left out)."""
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
    passed = sum(row.passed for row in rows)
    cached = [float(v) for row in rows if (v := row.cached_input_tokens) is not None]
    first = [v for row in rows if (v := row.first_answer_ms) is not None]
    simulated_first = [v for row in rows if (v := row.simulated_first_answer_ms) is not None]
    input_total = sum(row.input_tokens for row in rows)
    checked = [row.plan_valid for row in rows if row.plan_valid is not None]
    counted = [row for row in rows if row.usage_reported]  # unreported usage is unknown, not 0
    unreported = sum(1 for row in rows if row.model_calls and not row.usage_reported)
    return ModeSummary(
        mode=mode,
        turns=len(rows),
        passed=passed,
        failed_turns=sum(row.failed for row in rows),
        failures=_failures_by_kind(rows),
        accuracy=mean([float(row.passed) for row in rows]),
        accuracy_interval=wilson_interval(passed, len(rows)) if rows else None,
        pass_k=pass_k,
        calls_mean=mean(calls),
        calls_max=max(calls, default=0),
        input_tokens_mean=mean([row.input_tokens for row in counted]),
        output_tokens_mean=mean([row.output_tokens for row in counted]),
        latency_mean=mean(latencies),
        latency_p50=percentile(latencies, 50),
        latency_p95=percentile(latencies, 95),
        simulated_p50=percentile(simulated, 50) if simulated else None,
        simulated_p95=percentile(simulated, 95) if simulated else None,
        harness_p50=percentile(harness, 50),
        harness_p95=percentile(harness, 95),
        no_operation_calls_mean=mean(no_operation_calls) if no_operation_calls else None,
        cached_input_tokens_mean=mean(cached) if cached else None,
        cached_share=sum(cached) / input_total if cached and input_total > 0 else None,
        first_answer_p50=percentile(first, 50) if first else None,
        first_answer_p95=percentile(first, 95) if first else None,
        simulated_first_answer_p50=percentile(simulated_first, 50) if simulated_first else None,
        simulated_first_answer_p95=percentile(simulated_first, 95) if simulated_first else None,
        intervals=_intervals(rows, seed) if repetitions > 1 else {},
        plans_valid=sum(checked),
        plans_checked=len(checked),
        usage_unreported=unreported,
        usage_reported_turns=sum(1 for row in counted if row.model_calls),
        recovered_tool_calls=sum(row.recovered_tool_calls for row in rows),
        ungrounded_turns=sum(1 for row in rows if row.ungrounded_figures)
        if any("ungrounded_figures" in row.model_fields_set for row in rows)
        else None,
        claimed_action_turns=sum(1 for row in rows if row.claimed_actions)
        if any("claimed_actions" in row.model_fields_set for row in rows)
        else None,
        connection_retries=sum(row.connection_retries for row in rows),
    )


def paired_comparison(
    base: str, other: str, rows: Sequence[TurnRow], *, seed: int = DEFAULT_SEED
) -> PairedComparison | None:
    """``base`` against ``other`` on the turns both ran; ``None`` when they share no turn."""
    outcome = paired_values(rows, base, other, lambda row: row.passed)
    if not outcome:
        return None
    clusters: dict[str, list[tuple[bool, bool]]] = defaultdict(list)
    for key, pair in outcome.items():
        clusters[key[0]].append(pair)
    pairs = list(outcome.values())
    both = sum(a and b for a, b in pairs)
    base_only = sum(a and not b for a, b in pairs)
    other_only = sum(b and not a for a, b in pairs)
    base_accuracy = (both + base_only) / len(pairs)
    other_accuracy = (both + other_only) / len(pairs)
    return PairedComparison(
        base=base,
        other=other,
        pairs=len(pairs),
        both=both,
        base_only=base_only,
        other_only=other_only,
        neither=len(pairs) - both - base_only - other_only,
        base_accuracy=base_accuracy,
        other_accuracy=other_accuracy,
        difference=base_accuracy - other_accuracy,
        interval=paired_bootstrap_difference(clusters, seed=seed),
        p_value=mcnemar_exact(base_only, other_only),
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
        mode: [mean(per_turn.get(turn, [])) for turn in range(1, length + 1)]
        for mode, per_turn in tokens.items()
    }
    return GrowthCurve(scenario=scenario, series=series)


def summarize(
    rows: Sequence[TurnRow],
    modes: Sequence[str] | None = None,
    *,
    seed: int = DEFAULT_SEED,
    targets: Sequence[BenchTarget] = (),
    prompt_cache: bool | None = None,
) -> Summary:
    """Aggregate turn records; ``modes`` fixes the order (default: order of first appearance).

    Warm-up rows are left out. ``seed`` seeds every bootstrap, so the same rows give the same intervals.
    ``targets`` are the run's targets (order and identity; rows naming another target are added after them):
    with more than one target in the rows, each gets its own summary (see :class:`Summary`).
    """
    order = list(targets)
    for name in dict.fromkeys(row.target for row in rows):
        if name not in {t.name for t in order}:
            order.append(BenchTarget.model_construct(name=name, provider="unknown"))  # not in the run line
    present = [t for t in order if any(row.target == t.name for row in rows)]
    if len(present) > 1:
        per_target = [
            TargetSummary(
                target=target,
                summary=_summarize_one(
                    [row for row in rows if row.target == target.name], modes, seed, prompt_cache
                ),
            )
            for target in present
        ]
        return Summary(
            modes=[],
            categories=[],
            repetitions=max(t.summary.repetitions for t in per_target),
            warmup_turns=sum(t.summary.warmup_turns for t in per_target),
            prompt_cache=prompt_cache,
            targets=per_target,
        )
    return _summarize_one(rows, modes, seed, prompt_cache)


def _summarize_one(
    rows: Sequence[TurnRow], modes: Sequence[str] | None, seed: int, prompt_cache: bool | None
) -> Summary:
    warmup = sum(row.warmup for row in rows)
    rows = [row for row in rows if not row.warmup]
    order = list(modes or [])
    for row in rows:
        if row.mode not in order:
            order.append(row.mode)
    by_mode: dict[str, list[TurnRow]] = defaultdict(list)
    by_category: dict[tuple[str, str], list[TurnRow]] = defaultdict(list)
    for row in rows:
        by_mode[row.mode].append(row)
        by_category[(row.category, row.mode)].append(row)
    categories = []
    for (category, mode), group in sorted(
        by_category.items(), key=lambda kv: (kv[0][0], order.index(kv[0][1]))
    ):
        passed = sum(r.passed for r in group)
        categories.append(
            CategorySummary(
                category=category,
                mode=mode,
                turns=len(group),
                passed=passed,
                accuracy=mean([float(r.passed) for r in group]),
                accuracy_interval=wilson_interval(passed, len(group)),
                calls_mean=mean([r.model_calls for r in group]),
            )
        )
    summaries = [summarize_mode(mode, by_mode[mode], seed=seed) for mode in order if by_mode.get(mode)]
    ran = [m.mode for m in summaries]
    base = "planner" if "planner" in ran else ran[0] if ran else None  # the mode the others are compared with
    paired = [
        comparison
        for other in ran
        if other != base and base is not None
        if (comparison := paired_comparison(base, other, rows, seed=seed)) is not None
    ]
    return Summary(
        modes=summaries,
        categories=categories,
        growth=growth_curve(rows),
        repetitions=max((row.repetition for row in rows), default=1),
        paired=paired,
        warmup_turns=warmup,
        prompt_cache=prompt_cache,
    )
