"""A distribution chart in inline SVG: one row per series (a mode, or a run's mode), every turn a dot, a box
from p25 to p75, a thick mark at p50 and a whisker from p5 to p95, with p50 and p95 written at the right.

Latencies span orders of magnitude (a stand-in's milliseconds, a CPU model's minutes), so the axis is
logarithmic when the largest value is at least 20 times the smallest, linear otherwise."""

from __future__ import annotations

import math
from collections.abc import Sequence
from html import escape

from benchmarks.report.svg import nice_ticks
from benchmarks.stats import percentile

Series = tuple[str, str, Sequence[float]]
"""A row of the chart: (label, colour, values in ms)."""

LOG_SPAN = 20.0
"""The ratio of the largest to the smallest value from which the axis is logarithmic."""


def ms_tick(value: float) -> str:
    """``"0.5 ms"``, ``"250 ms"``, ``"1.5 s"``, ``"150 s"``: a time, three significant digits at most."""
    if value >= 1_000_000:
        return f"{value / 1000:,.0f} s"
    if value >= 999.5:  # what rounds to 1000 ms is written as 1 s
        return f"{value / 1000:.3g} s"
    return f"{value:.3g} ms"


def _log_ticks(low: float, high: float) -> list[float]:
    """1, 2, 5 × 10^k from just below ``low`` to just above ``high``."""
    ticks = []
    for exponent in range(math.floor(math.log10(low)), math.ceil(math.log10(high)) + 1):
        for mantissa in (1, 2, 5):
            value = mantissa * 10.0**exponent
            if low / 2.5 <= value <= high * 2.5:
                ticks.append(value)
    return ticks


class _Scale:
    """Maps a value to an x position, on a log or a linear axis."""

    def __init__(self, values: Sequence[float], left: float, width: float) -> None:
        positive = [v for v in values if v > 0]
        self.left, self.width = left, width
        self.low = min(positive, default=1.0)
        self.high = max(positive, default=1.0)
        self.log = self.high / self.low >= LOG_SPAN
        if self.log:
            ticks = _log_ticks(self.low, self.high)
            self.low, self.high = ticks[0], ticks[-1]
            self.ticks = ticks
        else:
            self.ticks = nice_ticks(self.high)
            self.low, self.high = 0.0, self.ticks[-1]

    def x(self, value: float) -> float:
        if self.log:
            value = max(value, self.low)
            share = (math.log10(value) - math.log10(self.low)) / (
                math.log10(self.high) - math.log10(self.low)
            )
        else:
            share = value / self.high if self.high else 0.0
        return self.left + self.width * min(max(share, 0.0), 1.0)


def _row(series: Series, scale: _Scale, y: float, half: float) -> list[str]:
    label, colour, values = series
    if not values:
        return [f'<text x="{scale.left + 6}" y="{y + 4:.1f}" class="tick">no turn has this figure</text>']
    p5, p25, p50, p75, p95 = (percentile(values, q) for q in (5, 25, 50, 75, 95))
    parts = [f'<g data-series="{escape(label)}" fill="{colour}" stroke="{colour}">']
    for i, value in enumerate(values):
        jitter = ((i * 7) % 11 - 5) / 5 * (half - 3)
        parts.append(
            f'<circle cx="{scale.x(value):.1f}" cy="{y + jitter:.1f}" r="2" fill-opacity=".35" stroke="none">'
            f"<title>{escape(label)}: {escape(ms_tick(value))}</title></circle>"
        )
    parts.append(
        f'<line x1="{scale.x(p5):.1f}" y1="{y:.1f}" x2="{scale.x(p95):.1f}" y2="{y:.1f}" stroke-width="1.5"/>'
        f'<rect x="{scale.x(p25):.1f}" y="{y - half:.1f}" width="{max(scale.x(p75) - scale.x(p25), 1):.1f}" '
        f'height="{2 * half:.1f}" fill-opacity=".18" stroke-width="1.2"/>'
        f'<line x1="{scale.x(p50):.1f}" y1="{y - half:.1f}" x2="{scale.x(p50):.1f}" y2="{y + half:.1f}" '
        f'stroke-width="3.5" class="p50"><title>{escape(label)} p50 {escape(ms_tick(p50))}</title>'
        "</line>"
        f'<line x1="{scale.x(p95):.1f}" y1="{y - half * 0.6:.1f}" x2="{scale.x(p95):.1f}" '
        f'y2="{y + half * 0.6:.1f}" stroke-width="2" class="p95"/>'
        "</g>"
    )
    return parts


def distribution_chart(
    title: str, series: Sequence[Series], *, x_label: str, chart_id: str, width: int = 1100
) -> str:
    """The chart: one row per series, labels at the left, p50 / p95 at the right."""
    left, right, top, bottom, row_h = 220, 190, 40, 50, 34
    height = top + bottom + row_h * max(len(series), 1)
    plot_w = width - left - right
    scale = _Scale([v for _, _, values in series for v in values], left, plot_w)
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="chart distribution-chart" id="{escape(chart_id)}" '
        f'viewBox="0 0 {width} {height}" width="{width}" height="{height}" role="img" '
        f'aria-label="{escape(title)}">',
        f"<title>{escape(title)}</title>",
        f'<text x="{left + plot_w / 2}" y="20" text-anchor="middle" class="chart-title">'
        f"{escape(title)}</text>",
    ]
    bottom_y = top + row_h * len(series)
    for tick in scale.ticks:
        x = scale.x(tick)
        parts.append(
            f'<line x1="{x:.1f}" y1="{top}" x2="{x:.1f}" y2="{bottom_y}" class="grid"/>'
            f'<text x="{x:.1f}" y="{bottom_y + 16}" text-anchor="middle" class="tick">'
            f"{escape(ms_tick(tick))}</text>"
        )
    for i, item in enumerate(series):
        y = top + row_h * i + row_h / 2
        parts.append(
            f'<text x="{left - 10}" y="{y + 4:.1f}" text-anchor="end" class="legend-label">'
            f"{escape(item[0])}</text>"
        )
        parts += _row(item, scale, y, row_h * 0.3)
        if item[2]:
            p50, p95 = percentile(item[2], 50), percentile(item[2], 95)
            parts.append(
                f'<text x="{left + plot_w + 10}" y="{y + 4:.1f}" class="legend-value">p50 '
                f"{escape(ms_tick(p50))} · p95 {escape(ms_tick(p95))}</text>"
            )
    axis = "log scale" if scale.log else "linear scale"
    parts.append(
        f'<line x1="{left}" y1="{bottom_y}" x2="{left + plot_w}" y2="{bottom_y}" class="axis-line"/>'
        f'<text x="{left + plot_w / 2}" y="{height - 8}" text-anchor="middle" class="axis-label x-label">'
        f"{escape(x_label)} ({axis})</text>"
        f'<text x="14" y="{top + (bottom_y - top) / 2}" text-anchor="middle" class="axis-label y-label" '
        f'transform="rotate(-90 14 {top + (bottom_y - top) / 2})">mode</text>'
        "</svg>"
    )
    return "".join(parts)


DISTRIBUTION_CAPTION = (
    "Every dot is a turn; the box spans p25 to p75, the thick mark is p50, the whisker runs from p5 to "
    "p95 (its end mark)."
)
"""Under every distribution chart."""
