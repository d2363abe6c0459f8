"""Where a turn's time goes: one horizontal stacked bar per mode (or target · mode), each part of the time
in its own colour, the same part always the same colour, its value written inside when it fits."""

from __future__ import annotations

import hashlib
import math
from collections.abc import Sequence
from dataclasses import dataclass

from matplotlib.artist import Artist
from matplotlib.colors import to_rgb
from matplotlib.figure import Figure
from matplotlib.patches import Rectangle
from matplotlib.text import Text

from benchmarks.report.charts._labels import ms_tick
from benchmarks.report.charts._render import (
    SeriesIds,
    add_group,
    axes_at,
    chart_title,
    fit,
    message,
    render,
    size,
    text_width,
)
from benchmarks.report.charts._scale import Scale, apply_x, choose_scale
from benchmarks.report.charts._style import INK, SMALL_SIZE, TEXT_SIZE


@dataclass(frozen=True)
class BreakdownBar:
    """One bar of the chart."""

    label: str
    """The mode, or ``"target · mode"``."""
    segments: Sequence[tuple[str, float]]
    """(part name, ms) in order: ``("first tokens", 2100.0)``, ``("writing", …)``, ``("operations", …)``,
    ``("rest", …)``."""


PART_COLOURS = {
    "first tokens": "#e69f00",
    "writing": "#56b4e9",
    "operations": "#cc79a7",
    "rest": "#bbbbbb",
}
"""The usual parts' colours (Okabe–Ito, apart from the modes' three)."""

SPARE_COLOURS = ("#f0e442", "#7fb8d9", "#e0a3c4", "#8c8c8c", "#d6b36a")
"""Colours of any other part, picked by the part's name so it keeps its colour from chart to chart."""

WIDTH, ROW, TOP, AXIS_ROOM = 960, 32, 44, 58
"""The chart's width, each bar's row, the room above the bars and below them (ticks, axis title), in px."""

HALF = 0.32
"""Half a bar's height, in rows."""


def part_colour(part: str) -> str:
    """The colour of a part of the time: fixed for the usual parts, else chosen by its name."""
    if part in PART_COLOURS:
        return PART_COLOURS[part]
    return SPARE_COLOURS[int(hashlib.sha256(part.encode()).hexdigest(), 16) % len(SPARE_COLOURS)]


def _ink(colour: str) -> str:
    """Black on a light fill, white on a dark one."""
    red, green, blue = to_rgb(colour)
    return INK if 0.2126 * red + 0.7152 * green + 0.0722 * blue > 0.4 else "white"


def _bar(segments: Sequence[tuple[str, float]], y: float, scale: Scale, plot_w: float) -> list[Artist]:
    """The bar's parts side by side from 0, each with its value when there is room for it."""
    marks: list[Artist] = []
    start = 0.0
    for part, ms in segments:
        colour = part_colour(part)
        marks.append(Rectangle((start, y - HALF), ms, 2 * HALF, facecolor=colour, edgecolor="white", lw=1))
        text = ms_tick(ms)
        if (scale.share(start + ms) - scale.share(start)) * plot_w >= text_width(text, SMALL_SIZE) + 8:
            marks.append(
                Text(
                    start + ms / 2, y, text, ha="center", va="center", fontsize=SMALL_SIZE, color=_ink(colour)
                )
            )
        start += ms
    return marks


def breakdown_chart(
    bars: Sequence[BreakdownBar], *, chart_id: str, title: str = "Where a turn's time goes (medians)"
) -> str:
    """The chart: the bars top to bottom in the order given, a linear time axis from 0 and a legend of the
    parts in order of first appearance. Parts with a non-finite or negative time are left out."""
    rows = [
        (bar.label, [(part, ms) for part, ms in bar.segments if math.isfinite(ms) and ms > 0]) for bar in bars
    ]
    parts = list(dict.fromkeys(part for _, segments in rows for part, _ in segments))

    def draw(figure: Figure) -> None:
        if not parts:
            message(figure, "no time to draw")
            chart_title(figure, title, 320, 620)
            return
        labels = [fit(label, TEXT_SIZE, 300) for label, _ in rows]
        left = 40 + max(text_width(label, TEXT_SIZE) for label in labels) + 16
        plot_w, plot_h = WIDTH - left - 40, ROW * len(rows)
        height = TOP + plot_h + AXIS_ROOM + 30
        size(figure, WIDTH, height)
        chart_title(figure, title, left + plot_w / 2, WIDTH - 20)
        axes = axes_at(figure, left, TOP, plot_w, plot_h)
        totals = [sum(ms for _, ms in segments) for _, segments in rows]
        scale = choose_scale(totals, length=plot_w, label=ms_tick, log_span=None)
        apply_x(axes, scale, "median time per turn, by part")
        axes.set_ylim(len(rows) - 0.5, -0.5)
        axes.set_yticks(range(len(rows)), labels=labels)
        axes.tick_params(axis="y", length=0, pad=8)
        axes.set_ylabel("mode")
        ids = SeriesIds(chart_id)
        for y, (label, segments) in enumerate(rows):
            add_group(axes, ids(label), _bar(segments, y, scale, plot_w))
        handles = [Rectangle((0, 0), 1, 1, facecolor=part_colour(part), label=part) for part in parts]
        figure.legend(
            handles=handles,
            loc="upper left",
            bbox_to_anchor=(left / WIDTH, 1 - (TOP + plot_h + AXIS_ROOM) / height),
            ncols=len(parts),
            borderaxespad=0,
        )

    return render("breakdown", title, chart_id, draw)
