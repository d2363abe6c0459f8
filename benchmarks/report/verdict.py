"""Which architecture a run favours for its model, and why, never stronger than the figures.

Each mode is compared with the base mode (planner, else the first) on the turns both ran. Accuracy counts as
a reason only when the paired comparison establishes it (its 95% interval excludes zero and McNemar p <
0.05); every per-turn figure (model calls, input tokens, latency, time to the first answer, and for a
structure run the harness overhead) only when the exact sign test over the paired turns whose figures differ
is significant and points the same way as the central figure. A structure run (the offline stand-in) never
makes an accuracy statement; a run under a latency profile compares its simulated times, marked as such."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from benchmarks.report.aggregate import paired_values
from benchmarks.report.findings import all_failed, ms_text, p_text
from benchmarks.report.runs import Regime
from benchmarks.report.summary import ModeSummary, PairedComparison, Summary
from benchmarks.report.tables import signed_points
from benchmarks.report.verdict_table import failure_kinds_text
from benchmarks.results import TurnRow
from benchmarks.stats import mcnemar_exact

ALPHA = 0.05
"""The significance level of every sign test."""

Read = Callable[[TurnRow], float | None]
"""A per-turn figure of a row (``None``: the row lacks it)."""


@dataclass(frozen=True)
class PairedFigure:
    """``base`` against ``other`` on one per-turn figure, over the turns both have it for."""

    base: str
    other: str
    pairs: int
    base_lower: int
    """Paired turns where ``base``'s figure was lower."""
    other_lower: int
    p_value: float
    """Exact two-sided sign test over the pairs that differ."""

    @property
    def lower(self) -> str | None:
        """The mode whose figure was lower on significantly more turns; ``None`` when the split is not
        significant."""
        if self.p_value >= ALPHA or self.base_lower == self.other_lower:
            return None
        return self.base if self.base_lower > self.other_lower else self.other

    def test_text(self) -> str:
        """``"lower for planner on 40, for toolcalling on 10 of 129 paired turns; sign test p < 0.001"``."""
        return (
            f"lower for {self.base} on {self.base_lower}, for {self.other} on {self.other_lower} of "
            f"{self.pairs} paired turns; sign test p {p_text(self.p_value)}"
        )


def paired_figure(rows: Sequence[TurnRow], base: str, other: str, read: Read) -> PairedFigure | None:
    """``base`` against ``other`` on ``read`` over the turns both ran and both have the figure for; ``None``
    when there is no such turn."""
    pairs = paired_values(rows, base, other, read)
    if not pairs:
        return None
    base_lower = sum(a < b for a, b in pairs.values())
    other_lower = sum(b < a for a, b in pairs.values())
    return PairedFigure(
        base, other, len(pairs), base_lower, other_lower, mcnemar_exact(base_lower, other_lower)
    )


def model_calls(row: TurnRow) -> float:
    return float(row.model_calls)


def latency(simulated: bool) -> Read:
    """A turn's latency: simulated model time plus harness time under a profile, else measured."""
    return (lambda row: row.simulated_latency_ms) if simulated else (lambda row: row.latency_ms)


def first_answer(simulated: bool) -> Read:
    """A turn's time to its first answer token: simulated under a profile, else measured."""
    return (lambda row: row.simulated_first_answer_ms) if simulated else (lambda row: row.first_answer_ms)


@dataclass(frozen=True)
class Edge:
    """One figure on which two modes were compared."""

    winner: str | None
    """The mode ahead on this figure; ``None`` when the run cannot say."""
    reason: str
    """Why the winner is ahead, short: "fewer input tokens (1,341 vs 2,746 per turn)"."""
    detail: str
    """The figures and the test, in full."""


def accuracy_edge(comparison: PairedComparison) -> Edge:
    """Accuracy on the paired turns: a reason only when the difference is established."""
    base, other = comparison.base, comparison.other
    interval = comparison.interval
    bounds = (
        f"95% CI {signed_points(interval.low)} to {signed_points(interval.high)} points, " if interval else ""
    )
    figures = (
        f"{comparison.base_accuracy:.1%} vs {comparison.other_accuracy:.1%}, "
        f"{bounds}McNemar p {p_text(comparison.p_value)}"
    )
    detail = (
        f"Accuracy on {comparison.pairs} paired turns: {base} {comparison.base_accuracy:.1%}, {other} "
        f"{comparison.other_accuracy:.1%}; {comparison.base_only} passed only in {base}, "
        f"{comparison.other_only} only in {other}; {bounds}McNemar p {p_text(comparison.p_value)}"
    )
    if not comparison.established:
        return Edge(None, f"no significant accuracy difference ({figures})", detail + ": not significant.")
    winner = base if comparison.difference > 0 else other
    reason = f"significantly more accurate ({abs(comparison.difference) * 100:.1f} points; {figures})"
    return Edge(winner, reason, detail + ": significant.")


@dataclass(frozen=True)
class _Figure:
    """A per-turn figure: its name, how a row and a mode summary give it, and how to word it."""

    name: str
    read: Read
    central: Callable[[ModeSummary], float | None]
    statistic: str
    less: str
    """The winner's reason without figures: "fewer model calls"."""
    unit: str
    fmt: Callable[[float], str]


def _figures(regime: Regime) -> list[_Figure]:
    """The figures compared for this regime: structure always; times when they measure a model."""
    simulated = regime.simulated
    mark = ", simulated" if simulated else ""
    figures = [
        _Figure(
            "Model calls per turn",
            model_calls,
            lambda m: m.calls_mean,
            "mean",
            "fewer model calls",
            " per turn",
            "{:.2f}".format,
        ),
        _Figure(
            "Input tokens per turn",
            lambda row: float(row.input_tokens) if row.usage_reported else None,
            lambda m: m.input_tokens_mean if m.tokens_reported else None,
            "mean",
            "fewer input tokens",
            " per turn",
            "{:,.0f}".format,
        ),
    ]
    if simulated or not regime.structure_only:
        figures += [
            _Figure(
                f"Latency{mark}",
                latency(simulated),
                lambda m: m.simulated_p50 if simulated else m.latency_p50,
                "p50",
                "lower latency",
                f" ms p50{mark}",
                ms_text,
            ),
            _Figure(
                f"Time to the first answer token{mark}",
                first_answer(simulated),
                lambda m: m.simulated_first_answer_p50 if simulated else m.first_answer_p50,
                "p50",
                "first answer sooner",
                f" ms p50{mark}",
                ms_text,
            ),
        ]
    if regime.structure_only:
        figures.append(
            _Figure(
                "Harness overhead",
                lambda row: row.harness_ms,
                lambda m: m.harness_p50,
                "p50",
                "less harness overhead",
                " ms p50",
                ms_text,
            )
        )
    return figures


def _figure_edge(
    figure: _Figure, rows: Sequence[TurnRow], base: ModeSummary, other: ModeSummary
) -> Edge | None:
    a, b = figure.central(base), figure.central(other)
    paired = paired_figure(rows, base.mode, other.mode, figure.read)
    if a is None or b is None or paired is None:
        return None
    ms = " ms" if " ms" in figure.unit else ""
    values = f"{base.mode} {figure.fmt(a)}{ms}, {other.mode} {figure.fmt(b)}{ms} ({figure.statistic})"
    lower = paired.lower
    if lower is None or not (a < b if lower == base.mode else b < a):
        verdict = (
            "not a significant difference"
            if lower is None
            else "mixed: the turns and the central figure disagree"
        )
        return Edge(None, "", f"{figure.name}: {values}; {paired.test_text()}: {verdict}.")
    mine, theirs = (a, b) if lower == base.mode else (b, a)
    reason = f"{figure.less} ({figure.fmt(mine)} vs {figure.fmt(theirs)}{figure.unit})"
    return Edge(lower, reason, f"{figure.name}: {values}; {paired.test_text()}: significant.")


def _listing(reasons: Sequence[str]) -> str:
    return reasons[0] if len(reasons) == 1 else ", ".join(reasons[:-1]) + " and " + reasons[-1]


def _pair_verdict(
    label: str, regime: Regime, accuracy: Edge | None, edges: Sequence[Edge], modes: tuple[str, str]
) -> str:
    """The one sentence that says which mode the figures favour, and why."""
    ahead = {mode: [e.reason for e in edges if e.winner == mode] for mode in modes}

    def on(mode: str) -> str:
        return f"{mode} is ahead on {_listing(ahead[mode])}" if ahead[mode] else f"{mode} is ahead on none"

    if regime.structure_only:
        return f"{label}, structure only (accuracy not measured): {on(modes[0])}; {on(modes[1])}."
    if accuracy is not None and accuracy.winner is not None:
        winner = accuracy.winner
        loser = modes[1] if winner == modes[0] else modes[0]
        also = f"; it is also ahead on {_listing(ahead[winner])}" if ahead[winner] else ""
        evidence = f"{winner} is the better choice on this run's evidence, {accuracy.reason}"
        return f"{label}: {evidence}{also}; {on(loser)}."
    cannot = accuracy.reason if accuracy is not None else "no paired turns to compare accuracy on"
    return f"{label}: {cannot}, so accuracy cannot decide; {on(modes[0])}; {on(modes[1])}."


@dataclass(frozen=True)
class Verdict:
    """What a run's figures say: one verdict sentence per pair of modes, then the figures behind them."""

    leads: list[str]
    details: list[str]


def verdict_of(summary: Summary, rows: Sequence[TurnRow], regime: Regime, who: str | None = None) -> Verdict:
    """The verdict and its reasons for one target's summary and rows (``who``: the model, named first)."""
    if not summary.modes:
        return Verdict(["No turns were recorded."], [])
    base = summary.mode("planner") or summary.modes[0]
    leads = [
        f"{mode.mode}: every one of its {mode.turns} turns failed, so it is not compared."
        for mode in summary.modes
        if all_failed(mode)
    ]
    details: list[str] = []
    others = [m for m in summary.modes if m.mode != base.mode and not all_failed(m)]
    for other in [] if all_failed(base) else others:
        comparison = summary.comparison(base.mode, other.mode)
        accuracy = accuracy_edge(comparison) if comparison is not None and not regime.structure_only else None
        edges = [e for f in _figures(regime) if (e := _figure_edge(f, rows, base, other)) is not None]
        label = (f"For {who}, " if who else "") + f"{base.mode} vs {other.mode}"
        leads.append(_pair_verdict(label, regime, accuracy, edges, (base.mode, other.mode)))
        details += [accuracy.detail] if accuracy is not None else []
        details += [e.detail for e in edges]
    if base.mode == "planner" and not all_failed(base):
        verdict = "never exceeded" if base.calls_max <= 2 else "exceeded"
        details.append(f"planner {verdict} its two model calls per turn (max {base.calls_max}).")
    failed = [
        f"{m.mode} {m.failed_turns} of {m.turns} ({failure_kinds_text(m)})"
        for m in summary.modes
        if m.failed_turns
    ]
    if failed:
        details.append("Failed turns (each scored as not passed): " + "; ".join(failed) + ".")
    return Verdict(leads, details)


def run_verdict(summary: Summary, rows: Sequence[TurnRow], regime: Regime, who: str | None) -> Verdict:
    """:func:`verdict_of` a run; per target (each sentence prefixed with its name) for a matrix."""
    if not summary.targets:
        return verdict_of(summary, rows, regime, who)
    leads: list[str] = []
    details: list[str] = []
    for entry in summary.targets:
        own = [row for row in rows if row.target == entry.target.name]
        target_regime = replace(regime, structure_only=entry.target.offline, mixed=False)
        found = verdict_of(entry.summary, own, target_regime, entry.target.model_name)
        leads += [f"Target {entry.target.name}: {s}" for s in found.leads]
        details += [f"Target {entry.target.name}: {s}" for s in found.details]
    return Verdict(leads, details)
