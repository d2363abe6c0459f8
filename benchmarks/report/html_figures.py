"""The figures of ``report.html`` and the records of the sections around them: accuracy against latency and
cost, the latency distributions, where the time goes, the summary, the model matrix and the context-growth
curve. Charts come from :mod:`benchmarks.report.charts` as inline SVG; one colour per mode throughout."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from benchmarks.cost import CostEstimate
from benchmarks.report.charts import (
    BreakdownBar,
    TradeoffPoint,
    breakdown_chart,
    distribution_chart,
    line_chart,
    tradeoff_chart,
)
from benchmarks.report.findings import findings, headline
from benchmarks.report.html_parts import Grid, plain
from benchmarks.report.matrix_table import matrix_grids, targets_table
from benchmarks.report.runs import Regime, ReportRun
from benchmarks.report.summary import ModeSummary, Summary
from benchmarks.report.tables import growth_order, summary_rows, without_accuracy
from benchmarks.report.time_breakdown import breakdown_medians, breakdown_table, calls_table
from benchmarks.report.verdict import first_answer, latency

Colours = Mapping[str, str]

Read = Callable[[ModeSummary], float | None]
"""A figure of a mode, ``None`` when the mode lacks it."""

_CLOCKS: tuple[tuple[str, Read, Read], ...] = (
    (
        "time to the first answer token, p50",
        lambda m: m.simulated_first_answer_p50,
        lambda m: m.first_answer_p50,
    ),
    ("latency p50", lambda m: m.simulated_p50, lambda m: m.latency_p50),
)
"""What the trade-off chart plots as latency: (name, simulated figure, measured figure), by preference."""


def _latency(cells: Sequence[tuple[ModeSummary, Regime]]) -> tuple[list[float], str]:
    """Each cell's time to the first answer token when every cell has it, else its latency (p50, ms), on its
    run's clock (simulated under a latency profile, else measured); and the label saying which."""
    for name, simulated, measured in _CLOCKS:
        found = [(simulated if regime.simulated else measured)(mode) for mode, regime in cells]
        values = [value for value in found if value is not None]
        if len(values) == len(cells):
            clocks = " and ".join(dict.fromkeys(regime.clock for _, regime in cells))
            return values, f"{name}, {clocks}"
    return [mode.latency_p50 for mode, _ in cells], "latency p50, measured"


def _cost(costs: Sequence[CostEstimate], target: str | None, mode: str) -> float | None:
    """USD per 1,000 turns of (target, mode) at its model's price; ``None`` for a local or unpriced model."""
    estimate = next((c for c in costs if c.target == target), costs[0] if len(costs) == 1 else None)
    if estimate is None or estimate.local or estimate.price is None:
        return None
    found = estimate.mode(mode)
    return found.usd_per_1000_turns if found is not None and found.tokens_reported else None


def tradeoff(runs: Sequence[ReportRun], colours: Colours) -> str | None:
    """Accuracy (Wilson 95% interval) against latency and, when priced, cost per 1,000 turns: one point per
    (run, target, mode) whose accuracy is a result. ``None`` when no run's is (stand-in runs, stand-in
    targets)."""
    labeled = len(runs) > 1
    cells = [
        (run, target, mode)
        for run in runs
        if not run.regime.structure_only
        for target, mode in run.summary.cells()
        if not any(t.offline for t in run.results.meta.targets if t.name == target)
    ]
    if not cells:
        return None
    values, label = _latency([(mode, run.regime) for run, _, mode in cells])
    points = [
        TradeoffPoint(
            label=" · ".join(part for part in (run.label if labeled else None, target, mode.mode) if part),
            colour=colours.get(mode.mode, "#7f7f7f"),
            accuracy=mode.accuracy,
            interval=(
                (mode.accuracy_interval.low, mode.accuracy_interval.high)
                if mode.accuracy_interval is not None
                else (mode.accuracy, mode.accuracy)
            ),
            latency_ms=value,
            cost=_cost(run.costs, target, mode.mode),
        )
        for (run, target, mode), value in zip(cells, values, strict=True)
    ]
    return tradeoff_chart(points, latency_label=label, chart_id="chart-tradeoff")


def distributions(run: ReportRun, colours: Colours, *, labeled: bool) -> list[str]:
    """The run's latency and first-answer distributions, one row per (target, mode) that has the figure."""
    simulated, clock = run.regime.simulated, run.regime.clock
    prefix = f"{run.label}: " if labeled else ""
    charts = []
    for name, title, read in (
        ("latency", "Latency per turn", latency(simulated)),
        ("first-answer", "Time to the first answer token", first_answer(simulated)),
    ):
        series = [(label, colours.get(mode, "#7f7f7f"), values) for label, mode, values in run.per_cell(read)]
        if any(values for _, _, values in series):
            charts.append(
                distribution_chart(
                    f"{prefix}{title}, {clock}",
                    [entry for entry in series if entry[2]],
                    x_label=f"time per turn, {clock}",
                    chart_id=f"{run.anchor}chart-{name}-distribution",
                )
            )
    return charts


@dataclass(frozen=True)
class RunTime:
    """One run's share of "Where the time goes": its latency distributions, the breakdown of a turn's time
    (a bar per (target, mode)) and its tables."""

    label: str
    """The run's label, on a page of several runs."""
    distributions: list[str]
    chart: str | None
    breakdown: Grid | None
    calls: Grid | None


def time_view(runs: Sequence[ReportRun], colours: Colours) -> list[RunTime]:
    labeled = len(runs) > 1
    parts = []
    for run in runs:
        rows = run.results.rows
        bars = [BreakdownBar(label, segments) for label, segments in breakdown_medians(rows)]
        breakdown, calls = breakdown_table(rows), calls_table(rows)
        parts.append(
            RunTime(
                run.label if labeled else "",
                distributions(run, colours, labeled=labeled),
                breakdown_chart(bars, chart_id=f"{run.anchor}chart-time-breakdown") if bars else None,
                plain(breakdown, "time-breakdown") if breakdown is not None else None,
                plain(calls, "model-calls") if calls is not None else None,
            )
        )
    return parts


@dataclass(frozen=True)
class TargetFindings:
    name: str
    """The target's name in a matrix, else empty."""
    label: str
    headline: str | None
    findings: list[str]


@dataclass(frozen=True)
class SummaryView:
    headline: str | None
    targets: list[TargetFindings]
    table: Grid


def summary_view(summary: Summary, colours: Colours, *, accuracy: bool) -> SummaryView:
    """The headline, the findings (each target's under its own heading in a matrix) and the summary table;
    without accuracy when ``accuracy`` is false (a stand-in's turns: no result)."""
    table = summary_rows(summary) if accuracy else without_accuracy(summary_rows(summary))
    if summary.matrix:
        targets = [
            TargetFindings(t.target.name, t.target.label, headline(t.summary), findings(t.summary, None))
            for t in summary.targets
        ]
    else:
        targets = [TargetFindings("", "", None, findings(summary, None, accuracy=accuracy))]
    return SummaryView(
        headline(summary, accuracy=accuracy), targets, plain(table, "summary", colours=colours)
    )


@dataclass(frozen=True)
class MatrixView:
    targets: Grid
    grids: list[tuple[str, Grid]]
    """(title, grid) per figure."""


def matrix_view(run: ReportRun) -> MatrixView | None:
    """The targets, then one grid per figure (targets as rows, modes as columns; accuracy tinted); ``None``
    for a run of one target."""
    summary = run.summary
    if not summary.matrix:
        return None
    accuracy = {(t.target.name, m.mode): m.accuracy for t in summary.targets for m in t.summary.modes}
    grids = [
        (
            title,
            plain((header, rows), "matrix", labels=1, tints=accuracy if title[:8] == "Accuracy" else None),
        )
        for title, header, rows in matrix_grids(summary, run.costs)
    ]
    return MatrixView(plain(targets_table(run.results.meta), "targets", labels=4), grids)


@dataclass(frozen=True)
class GrowthView:
    target: str
    """``Target a`` in a matrix, else empty."""
    title: str
    mean: bool
    """The curve is a mean over repetitions."""
    ratios: str
    chart: str


def growth_views(summary: Summary, colours: Colours) -> list[GrowthView]:
    """The context-growth curve, or one per target that has one in a matrix."""
    entries = [(f"Target {t.target.name}", f"-{t.target.name}", t.summary) for t in summary.targets]
    views = []
    for target, suffix, part in entries or [("", "", summary)]:
        growth = part.growth
        if growth is None:
            continue
        order = growth_order(part)
        series = {mode: growth.series[mode] for mode in order}
        turns = max((len(v) for v in series.values()), default=0)
        ratios = ", ".join(
            f"{mode} ×{ratio:.2f}" for mode in order if (ratio := growth.ratio(mode)) is not None
        )
        chart = line_chart(
            f"Input tokens per turn · {growth.scenario}",
            series,
            x_label="turn",
            y_label="input tokens per turn",
            colours=colours,
            chart_id="chart-growth" + suffix,
        )
        title = f"Context growth over {turns} turns: {growth.scenario}"
        views.append(GrowthView(target, title, part.repetitions > 1, ratios, chart))
    return views
