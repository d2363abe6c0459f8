"""The verdict that opens every report: a table with one row per run, target and mode (accuracy with its 95%
interval, model calls, tokens, latency and time to the first answer as p50 / p95, failed turns), then which
architecture the run favours for its model, and why, never stronger than the figures.

Each mode is compared with the base mode (planner, else the first) on the turns both ran. Accuracy counts as
a reason only when the paired comparison establishes it (its 95% interval excludes zero and McNemar p <
0.05); every per-turn figure (model calls, input tokens, latency, time to the first answer, and for a
structure run the harness overhead) only when the exact sign test over the paired turns whose figures differ
is significant and points the same way as the central figure. A structure run (the offline stand-in) shows
"not measured" for accuracy and never makes an accuracy statement; a run under a latency profile shows its
simulated times, marked as such."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from benchmarks.report.aggregate import paired_values
from benchmarks.report.findings import all_failed, ms_text, p_text
from benchmarks.report.runs import Regime, ReportRun
from benchmarks.report.summary import ModeSummary, PairedComparison, Summary
from benchmarks.report.tables import Table, accuracy_cell, signed_points
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
        base=base,
        other=other,
        pairs=len(pairs),
        base_lower=base_lower,
        other_lower=other_lower,
        p_value=mcnemar_exact(base_lower, other_lower),
    )


def model_calls(row: TurnRow) -> float:
    return float(row.model_calls)


def input_tokens(row: TurnRow) -> float | None:
    return float(row.input_tokens) if row.usage_reported else None


def latency(simulated: bool) -> Read:
    """A turn's latency: simulated model time plus harness time under a profile, else measured."""
    return (lambda row: row.simulated_latency_ms) if simulated else (lambda row: row.latency_ms)


def first_answer(simulated: bool) -> Read:
    """A turn's time to its first answer token: simulated under a profile, else measured."""
    return (lambda row: row.simulated_first_answer_ms) if simulated else (lambda row: row.first_answer_ms)


def harness(row: TurnRow) -> float:
    return row.harness_ms


NOT_MEASURED = "not measured (stand-in)"
"""The accuracy cell of a structure run."""

SIMULATED_MARK = " (sim.)"
"""After a time that was simulated under a latency profile."""


@dataclass(frozen=True)
class VerdictLine:
    """One row of the verdict table: a mode of one target of one run."""

    run: str
    """The run's label (empty in a one-run report)."""
    target: str | None
    """The target's name in a model matrix, else ``None``."""
    mode: ModeSummary
    regime: Regime


def verdict_lines(run: str, summary: Summary, regime: Regime) -> list[VerdictLine]:
    """The rows of one run, in its targets' and modes' order."""
    return [VerdictLine(run, target, mode, regime) for target, mode in summary.cells()]


def runs_verdict_lines(runs: Sequence[ReportRun]) -> list[VerdictLine]:
    """Every run's rows, run after run."""
    return [line for run in runs for line in verdict_lines(run.label, run.summary, run.regime)]


def _pair(p50: float | None, p95: float | None, mark: str) -> str:
    if p50 is None or p95 is None:
        return "–"
    return f"{ms_text(p50)} / {ms_text(p95)}{mark}"


def latency_cell(mode: ModeSummary, regime: Regime) -> str:
    """Latency p50 / p95 in ms: simulated under a profile (marked), else measured."""
    if regime.simulated and mode.simulated_p50 is not None:
        return _pair(mode.simulated_p50, mode.simulated_p95, SIMULATED_MARK)
    return _pair(mode.latency_p50, mode.latency_p95, "")


def first_answer_cell(mode: ModeSummary, regime: Regime) -> str:
    """Time to the first answer token p50 / p95 in ms: simulated under a profile (marked), else measured."""
    if regime.simulated and mode.simulated_first_answer_p50 is not None:
        return _pair(mode.simulated_first_answer_p50, mode.simulated_first_answer_p95, SIMULATED_MARK)
    return _pair(mode.first_answer_p50, mode.first_answer_p95, "")


def failure_kinds_text(mode: ModeSummary) -> str:
    """``"13 model_output, 5 limit, 1 timeout"``: failed turns per kind, largest first."""
    kinds = sorted(mode.failures.items(), key=lambda item: -item[1])
    return ", ".join(f"{count} {kind}" for kind, count in kinds)


def failures_cell(mode: ModeSummary) -> str:
    """``"19 (13 model_output, 5 limit, 1 timeout)"``; ``"0"`` without failures."""
    return f"{mode.failed_turns} ({failure_kinds_text(mode)})" if mode.failed_turns else "0"


def tokens_cell(mode: ModeSummary) -> str:
    """Input / output tokens per turn (mean), or "not reported"."""
    if not mode.tokens_reported:
        return "not reported"
    return f"{mode.input_tokens_mean:,.0f} / {mode.output_tokens_mean:,.0f}"


def verdict_header(lines: Sequence[VerdictLine]) -> list[str]:
    """The columns: ``run`` when several runs, ``target`` when some run is a matrix, then the figures."""
    runs = len({line.run for line in lines}) > 1
    targets = any(line.target is not None for line in lines)
    return [
        *(["run"] if runs else []),
        *(["target"] if targets else []),
        "mode",
        "turns",
        "accuracy (95% CI)",
        "calls/turn (max)",
        "tokens in / out per turn",
        "latency p50 / p95 ms",
        "first answer p50 / p95 ms",
        "failed turns",
    ]


def verdict_cells(line: VerdictLine, header: Sequence[str]) -> list[str]:
    """One row's cells under ``header``."""
    m = line.mode
    lead = {"run": line.run, "target": line.target or "–", "mode": m.mode}
    figures = [
        str(m.turns),
        NOT_MEASURED if line.regime.structure_only else accuracy_cell(m),
        f"{m.calls_mean:.2f} ({m.calls_max})",
        tokens_cell(m),
        latency_cell(m, line.regime),
        first_answer_cell(m, line.regime),
        failures_cell(m),
    ]
    return [lead[name] for name in header if name in lead] + figures


def verdict_table(lines: Sequence[VerdictLine]) -> Table:
    """The verdict table as plain text cells."""
    header = verdict_header(lines)
    return header, [verdict_cells(line, header) for line in lines]


VERDICT_CAPTION = (
    "Per turn. Accuracy: share of turns passed, Wilson 95% interval. Latency: a turn's model plus harness "
    "time; first answer: from the turn's start to the first answer token. (sim.) marks model time simulated "
    "under the run's latency profile; other times were measured on the run's machine. A failed turn never "
    "passes; its failure kinds follow the count."
)
"""Under every verdict table."""


def verdict_title(runs: Sequence[ReportRun]) -> str:
    """``Which architecture for <model>, and why`` (or for every run, side by side)."""
    if len(runs) > 1:
        return f"Which architecture, and why: {len(runs)} runs side by side"
    meta = runs[0].results.meta
    if runs[0].regime.structure_only:
        return "Which architecture, and why: structure only (offline stand-in)"
    return f"Which architecture for {meta.model or meta.provider}, and why"


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
            lambda v: f"{v:.2f}",
        ),
        _Figure(
            "Input tokens per turn",
            input_tokens,
            lambda m: m.input_tokens_mean if m.tokens_reported else None,
            "mean",
            "fewer input tokens",
            " per turn",
            lambda v: f"{v:,.0f}",
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
                harness,
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
    agrees = lower is not None and (a < b if lower == base.mode else b < a)
    if lower is None or not agrees:
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
        lead = f"{label}, structure only (accuracy not measured): "
        return lead + f"{on(modes[0])}; {on(modes[1])}."
    if accuracy is not None and accuracy.winner is not None:
        winner = accuracy.winner
        loser = modes[1] if winner == modes[0] else modes[0]
        also = f"; it is also ahead on {_listing(ahead[winner])}" if ahead[winner] else ""
        trade = (
            f"; {loser} is ahead on {_listing(ahead[loser])}"
            if ahead[loser]
            else f"; {loser} is ahead on none"
        )
        return (
            f"{label}: {winner} is the better choice on this run's evidence, {accuracy.reason}{also}{trade}."
        )
    cannot = accuracy.reason if accuracy is not None else "no paired turns to compare accuracy on"
    return f"{label}: {cannot}, so accuracy cannot decide; {on(modes[0])}; {on(modes[1])}."


def _failures(modes: Sequence[ModeSummary]) -> str | None:
    failed = [m for m in modes if m.failed_turns]
    if not failed:
        return None
    parts = [f"{m.mode} {m.failed_turns} of {m.turns} ({failure_kinds_text(m)})" for m in failed]
    return "Failed turns (each scored as not passed): " + "; ".join(parts) + "."


@dataclass(frozen=True)
class Verdict:
    """What a run's figures say: one verdict sentence per pair of modes, then the figures behind them."""

    leads: list[str]
    details: list[str]

    @property
    def sentences(self) -> list[str]:
        return self.leads + self.details


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
    usable = [m for m in summary.modes if not all_failed(m)]
    details: list[str] = []
    for other in [m for m in usable if m.mode != base.mode] if base in usable else []:
        comparison = next((p for p in summary.paired if p.base == base.mode and p.other == other.mode), None)
        accuracy = accuracy_edge(comparison) if comparison is not None and not regime.structure_only else None
        edges = [e for f in _figures(regime) if (e := _figure_edge(f, rows, base, other)) is not None]
        label = f"{base.mode} vs {other.mode}"
        if who:
            label = f"For {who}, {label}"
        leads.append(_pair_verdict(label, regime, accuracy, edges, (base.mode, other.mode)))
        details += [accuracy.detail] if accuracy is not None else []
        details += [e.detail for e in edges]
    if base.mode == "planner" and not all_failed(base):
        verdict = "never exceeded" if base.calls_max <= 2 else "exceeded"
        details.append(f"planner {verdict} its two model calls per turn (max {base.calls_max}).")
    failures = _failures(summary.modes)
    return Verdict(leads, details + ([failures] if failures else []))


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
