"""Accuracy against latency and, when every point is priced, against cost: one point per mode (or run,
target and mode), its 95% interval a vertical bar, named in a legend under the panels (its colour and
shape, with its figures), so close points never hide each other's names."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from matplotlib.artist import Artist
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.lines import Line2D

from benchmarks.report.charts._labels import ms_tick, percent, usd
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
from benchmarks.report.charts._scale import LOG_SPAN, Scale, apply_x, choose_scale
from benchmarks.report.charts._style import MARKERS, TEXT_SIZE


@dataclass(frozen=True)
class TradeoffPoint:
    """One point of the chart."""

    label: str
    """What the point is: ``"planner"``, ``"run-a · planner"``, ``"qwen · toolcalling"``."""
    colour: str
    accuracy: float
    """Share of turns passed, 0..1."""
    interval: tuple[float, float]
    """The accuracy's Wilson 95% interval, 0..1."""
    latency_ms: float
    """p50 time per turn (or to the first answer), ms."""
    cost: float | None = None
    """Estimated USD per 1,000 turns; ``None`` when not priced."""


PANEL_W, PANEL_H, LEFT, GAP, TOP, AXIS_ROOM = 420, 300, 84, 96, 44, 62
"""A panel's size, the room at the left of the first, between two panels, above them and below each (tick
labels and axis title), in px."""

COST_LABEL = "estimated USD per 1,000 turns"


def _marks(point: TradeoffPoint, shape: str, x: float) -> list[Artist]:
    """The interval as a capped vertical bar and the point on it."""
    marks: list[Artist] = []
    low, high = point.interval
    if math.isfinite(low) and math.isfinite(high):
        marks.append(
            Line2D(
                [x, x], [low * 100, high * 100], color=point.colour, linewidth=1.5, marker="_", markersize=9
            )
        )
    marks.append(
        Line2D(
            [x],
            [point.accuracy * 100],
            linestyle="none",
            marker=shape,
            markersize=9,
            color=point.colour,
            markeredgecolor="white",
            markeredgewidth=0.8,
        )
    )
    return marks


def _panel(axes: Axes, scale: Scale, title: str) -> None:
    apply_x(axes, scale, title)
    axes.set_ylim(-4, 104)
    axes.set_yticks(range(0, 101, 20), labels=[f"{v}%" for v in range(0, 101, 20)])
    axes.grid(axis="y")
    axes.set_ylabel("% of turns passed (95% interval)")


def _legend_text(point: TradeoffPoint, priced: bool) -> str:
    figures = [percent(point.accuracy), ms_tick(point.latency_ms)]
    if priced and point.cost is not None:
        figures.append(f"{usd(point.cost)} / 1,000 turns")
    return f"{fit(point.label, TEXT_SIZE, 260)}: {', '.join(figures)}"


def tradeoff_chart(
    points: Sequence[TradeoffPoint],
    *,
    latency_label: str,
    chart_id: str,
    title: str = "Accuracy against latency and cost",
) -> str:
    """The chart: accuracy (0–100%) against latency (its axis logarithmic when the points span
    :data:`LOG_SPAN` times), and beside it accuracy against cost only when every point has a cost (its axis
    logarithmic too when the costs span as much and none is free). Points with a non-finite accuracy or
    latency are left out."""
    shown = [p for p in points if math.isfinite(p.accuracy) and math.isfinite(p.latency_ms)]
    priced = bool(shown) and all(p.cost is not None and math.isfinite(p.cost) for p in shown)

    def draw(figure: Figure) -> None:
        if not shown:
            message(figure, "no point to draw")
            chart_title(figure, title, 320, 620)
            return
        panels = 2 if priced else 1
        width = LEFT + panels * PANEL_W + (panels - 1) * GAP + 24
        texts = [_legend_text(p, priced) for p in shown]
        entry = max(text_width(text, TEXT_SIZE) for text in texts) + 48
        columns = max(1, min(len(texts), int((width - LEFT) // entry)))
        rows = math.ceil(len(texts) / columns)
        height = TOP + PANEL_H + AXIS_ROOM + 22 * rows + 16
        size(figure, width, height)
        chart_title(figure, title, width / 2, width - 20)
        latency = axes_at(figure, LEFT, TOP, PANEL_W, PANEL_H)
        latency_scale = choose_scale(
            (p.latency_ms for p in shown), length=PANEL_W, label=ms_tick, headroom=1.1
        )
        _panel(latency, latency_scale, latency_label)
        cost: tuple[Axes, Scale] | None = None
        if priced:
            cost_axes = axes_at(figure, LEFT + PANEL_W + GAP, TOP, PANEL_W, PANEL_H)
            costs = [p.cost or 0.0 for p in shown]
            span = LOG_SPAN if min(costs) > 0 else None  # a free model stays at $0, on a linear axis
            cost_scale = choose_scale(costs, length=PANEL_W, label=usd, log_span=span, headroom=1.1)
            _panel(cost_axes, cost_scale, COST_LABEL)
            cost = cost_axes, cost_scale
        ids = SeriesIds(chart_id)
        handles = []
        for i, point in enumerate(shown):
            shape = MARKERS[i % len(MARKERS)]
            gid = ids(point.label)
            add_group(latency, gid, _marks(point, shape, latency_scale.clamp(point.latency_ms)), 3)
            if cost is not None and point.cost is not None:
                add_group(
                    cost[0], ids(f"{point.label} cost"), _marks(point, shape, cost[1].clamp(point.cost)), 3
                )
            handles.append(
                Line2D(
                    [], [], linestyle="none", marker=shape, markersize=9, color=point.colour, label=texts[i]
                )
            )
        figure.legend(
            handles=handles,
            loc="upper left",
            bbox_to_anchor=(LEFT / width, 1 - (TOP + PANEL_H + AXIS_ROOM) / height),
            ncols=columns,
            handletextpad=0.4,
            columnspacing=1.2,
            borderaxespad=0,
        )

    return render("tradeoff", title, chart_id, draw)
