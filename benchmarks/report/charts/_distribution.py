"""The distribution chart: one row per series, every turn a dot, a box from p25 to p75, a thick mark at p50
and a whisker from p5 to p95 with an end mark; p50 and p95 written at the right. Times span orders of
magnitude, so the axis is logarithmic when the largest is at least
:data:`~benchmarks.report.charts._scale.LOG_SPAN` times the smallest."""

from __future__ import annotations

import math
from collections.abc import Sequence

from matplotlib.artist import Artist
from matplotlib.colors import to_rgba
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Rectangle

from benchmarks.report.charts._labels import ms_tick
from benchmarks.report.charts._render import (
    SeriesIds,
    add_group,
    axes_at,
    chart_title,
    fit,
    render,
    size,
    text_width,
)
from benchmarks.report.charts._scale import Scale, apply_x, choose_scale
from benchmarks.report.charts._style import AXIS, TEXT_SIZE
from benchmarks.stats import percentile

Series = tuple[str, str, Sequence[float]]
"""A row of the chart: (label, colour, values in ms)."""

DISTRIBUTION_CAPTION = (
    "Every dot is a turn; the box spans p25 to p75, the thick mark is p50, the whisker runs from p5 to "
    "p95 (its end mark)."
)
"""Under every distribution chart."""

WIDTH, ROW, TOP, BOTTOM = 1040, 34, 44, 58
"""The chart's width, each row's height and the room above and below the rows, in px."""

HALF = 0.3
"""Half a box's height, in rows."""


def _row(colour: str, values: Sequence[float], scale: Scale, y: float) -> list[Artist]:
    """The marks of one series in row ``y``: dots (jittered up and down in a fixed pattern), whisker, box,
    p50 and p95 marks."""
    p5, p25, p50, p75, p95 = (percentile(values, q) for q in (5, 25, 50, 75, 95))
    spread = HALF - 3 / ROW
    jitter = [y + ((i * 7) % 11 - 5) / 5 * spread for i in range(len(values))]
    dots = Line2D(
        [scale.clamp(v) for v in values],
        jitter,
        linestyle="none",
        marker="o",
        markersize=4,
        markeredgewidth=0,
        color=colour,
        alpha=0.35,
    )
    box = Rectangle(
        (scale.clamp(p25), y - HALF),
        scale.clamp(p75) - scale.clamp(p25),
        2 * HALF,
        facecolor=to_rgba(colour, 0.18),
        edgecolor=colour,
        linewidth=1.2,
    )
    return [
        dots,
        Line2D([scale.clamp(p5), scale.clamp(p95)], [y, y], color=colour, linewidth=1.5),
        box,
        Line2D([scale.clamp(p50)] * 2, [y - HALF, y + HALF], color=colour, linewidth=3.5),
        Line2D([scale.clamp(p95)] * 2, [y - HALF * 0.6, y + HALF * 0.6], color=colour, linewidth=2),
    ]


def distribution_chart(title: str, series: Sequence[Series], *, x_label: str, chart_id: str) -> str:
    """The chart: labels at the left, p50 · p95 at the right; a series without values says so in its row.
    Non-finite values are left out."""
    rows = [(label, colour, [v for v in values if math.isfinite(v)]) for label, colour, values in series]

    def draw(figure: Figure) -> None:
        labels = [fit(label, TEXT_SIZE, 300) for label, _, _ in rows]
        notes = [
            f"p50 {ms_tick(percentile(values, 50))} · p95 {ms_tick(percentile(values, 95))}" if values else ""
            for _, _, values in rows
        ]
        left = 40 + max((text_width(label, TEXT_SIZE) for label in labels), default=0) + 16
        right = 20 + max((text_width(note, TEXT_SIZE) for note in notes), default=80)
        plot_w, plot_h = WIDTH - left - right, ROW * max(len(rows), 1)
        size(figure, WIDTH, TOP + plot_h + BOTTOM)
        chart_title(figure, title, left + plot_w / 2, WIDTH - 20)
        axes = axes_at(figure, left, TOP, plot_w, plot_h)
        scale = choose_scale((v for _, _, values in rows for v in values), length=plot_w, label=ms_tick)
        apply_x(axes, scale, x_label)
        axes.set_ylim(max(len(rows), 1) - 0.5, -0.5)
        axes.set_yticks(range(len(rows)), labels=labels)
        axes.tick_params(axis="y", length=0, pad=8)
        axes.set_ylabel("mode")
        ids = SeriesIds(chart_id)
        for y, ((label, colour, values), note) in enumerate(zip(rows, notes, strict=True)):
            if not values:
                axes.annotate(
                    "no turn has this figure",
                    (0, y),
                    xycoords=("axes fraction", "data"),
                    xytext=(6, 0),
                    textcoords="offset points",
                    va="center",
                    color=AXIS,
                )
                continue
            add_group(axes, ids(label), _row(colour, values, scale, y))
            axes.annotate(
                note,
                (1, y),
                xycoords=("axes fraction", "data"),
                xytext=(10, 0),
                textcoords="offset points",
                va="center",
            )

    return render("distribution", title, chart_id, draw)
