"""The line chart: one line per series over x = 1, 2, … (own colour and dash), round ticks, and a legend
at the right giving each series' last value."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from matplotlib.figure import Figure

from benchmarks.report.charts._labels import grouped, tick_label
from benchmarks.report.charts._render import (
    SeriesIds,
    axes_at,
    chart_title,
    fit,
    message,
    render,
    size,
    text_width,
)
from benchmarks.report.charts._scale import LABEL_GAP, nice_ticks
from benchmarks.report.charts._style import DASHES, PALETTE, SMALL_SIZE, TEXT_SIZE, mode_colours

WIDTH, HEIGHT, LEFT, TOP, BOTTOM = 960, 380, 78, 44, 56
"""The chart's size and the room at the left of, above and below the plot, in px."""

MARKED = 60
"""Series up to this long mark each point; longer ones are lines only."""


def _x_ticks(length: int, plot_w: float) -> list[int]:
    """1, the last x and round steps between (1, 5, 10… apart), none so close to the next that their labels
    would touch."""
    step = 1 if length <= 12 else 5 if length <= 60 else 10 ** math.floor(math.log10(length / 6)) * 5

    def where(x: int) -> float:
        return plot_w * (x - 1) / max(length - 1, 1)

    def room(a: int, b: int) -> float:
        return (text_width(str(a), TEXT_SIZE) + text_width(str(b), TEXT_SIZE)) / 2 + LABEL_GAP

    ticks = [1]
    for x in [*range(step, length, step), length]:
        if x > ticks[-1] and where(x) - where(ticks[-1]) >= room(ticks[-1], x):
            ticks.append(x)
        elif x == length and len(ticks) > 1:  # the last x keeps its label; the step before gives way
            ticks[-1] = x
    return ticks


def line_chart(
    title: str,
    series: Mapping[str, Sequence[float]],
    *,
    x_label: str,
    y_label: str,
    colours: Mapping[str, str] | None = None,
    chart_id: str = "",
) -> str:
    """The chart; ``colours`` maps a series to its colour (default: :func:`mode_colours` of the names).

    A non-finite value leaves a gap in its line; the legend gives each series' last finite value.
    """
    colours = colours or mode_colours(list(series))
    clean = {name: [v if math.isfinite(v) else math.nan for v in values] for name, values in series.items()}
    length = max((len(values) for values in clean.values()), default=0)
    finite = [v for values in clean.values() for v in values if math.isfinite(v)]

    def draw(figure: Figure) -> None:
        if not finite:
            message(figure, "no values to draw", WIDTH, 140)
            chart_title(figure, title, WIDTH / 2, WIDTH - 20)
            return
        lasts = [
            next((grouped(v) for v in reversed(values) if math.isfinite(v)), "–") for values in clean.values()
        ]
        labels = [f"{fit(name, TEXT_SIZE, 240)}: {last}" for name, last in zip(clean, lasts, strict=True)]
        note = f"value at {x_label} {length}"
        legend_w = max(text_width(note, SMALL_SIZE), *(text_width(label, TEXT_SIZE) + 40 for label in labels))
        plot_w, plot_h = WIDTH - LEFT - legend_w - 40, HEIGHT - TOP - BOTTOM
        size(figure, WIDTH, HEIGHT)
        chart_title(figure, title, LEFT + plot_w / 2, WIDTH - 20)
        axes = axes_at(figure, LEFT, TOP, plot_w, plot_h)
        ticks = nice_ticks(max(finite))
        step = ticks[1] - ticks[0] if len(ticks) > 1 else 1.0
        axes.set_ylim(min(0.0, min(finite)), ticks[-1])
        axes.set_yticks(ticks, labels=[tick_label(t, step, ticks[-1]) for t in ticks])
        axes.grid(axis="y")
        axes.set_axisbelow(True)
        pad = max(length - 1, 1) * 0.02
        axes.set_xlim(1 - pad, length + pad)
        axes.set_xticks(_x_ticks(length, plot_w))
        axes.set_xlabel(x_label)
        axes.set_ylabel(y_label)
        ids = SeriesIds(chart_id)
        lines = []
        for i, (name, values) in enumerate(clean.items()):
            (line,) = axes.plot(
                range(1, len(values) + 1),
                values,
                color=colours.get(name, PALETTE[i % len(PALETTE)]),
                linewidth=2.2,
                linestyle=DASHES[i % len(DASHES)],
                marker="o" if length <= MARKED else "",
                markersize=4,
                gid=ids(name),
            )
            lines.append(line)
        axes.legend(
            lines,
            labels,
            loc="upper left",
            bbox_to_anchor=(1.02, 1.0),
            title=note,
            alignment="left",
            handlelength=2.6,
        )

    return render("line", title, chart_id, draw)
