"""Small inline SVG charts (no JavaScript, no CDN): a bar chart, a line chart and a distribution chart, with
labelled axes.

Every mark carries ``data-mode`` / ``data-series`` and every axis title has class ``axis-label``, so tests
(and readers' tools) can check that each chart is labelled and that a mode keeps one colour across charts.
A distribution chart has one row per series, every turn a dot, a box from p25 to p75, a thick mark at p50
and a whisker from p5 to p95; latencies span orders of magnitude, so its axis is logarithmic when the largest
value is at least :data:`LOG_SPAN` times the smallest.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from html import escape

from benchmarks.stats import percentile

MODE_COLOURS = {"planner": "#0072b2", "toolcalling": "#d55e00", "toolcalling-full": "#009e73"}
"""The usual modes' colours (Okabe–Ito, readable by colour-blind readers), the same in every report."""

PALETTE = ("#cc79a7", "#e69f00", "#56b4e9", "#7f7f7f", "#000000")
"""Colours for any other series, in order of appearance."""

DASHES = ("", "7 4", "3 2", "8 3 2 3", "1 2")
"""Stroke patterns per line-chart series, so lines stay apart in grey-scale print."""


def mode_colours(modes: Sequence[str]) -> dict[str, str]:
    """One colour per mode: the fixed colour of a known mode, else the next unused palette colour."""
    colours: dict[str, str] = {}
    spare = iter(PALETTE)
    for mode in modes:
        colours[mode] = MODE_COLOURS.get(mode) or next(spare, PALETTE[len(colours) % len(PALETTE)])
    return colours


def nice_ticks(peak: float, count: int = 5) -> list[float]:
    """Round tick values from 0 up to at least ``peak`` in about ``count`` steps ([0, 1] for no data)."""
    if peak <= 0 or not math.isfinite(peak):
        return [0.0, 1.0]
    raw = peak / count
    magnitude = 10.0 ** math.floor(math.log10(raw))
    step = next(m * magnitude for m in (1, 2, 2.5, 5, 10) if raw <= m * magnitude)
    intervals = math.ceil(peak / step - 1e-9)
    return [round(i * step, 10) for i in range(intervals + 1)]


def grouped(value: float, decimals: int = 0, *, group: bool | None = None) -> str:
    """``value`` with ``decimals``; thin-space thousands separators from 10 000 up (or when ``group``)."""
    if group is None:
        group = abs(value) >= 10_000
    return f"{value:{',' if group else ''}.{decimals}f}".replace(",", "\u202f")


def tick_label(value: float, step: float, top: float | None = None) -> str:
    """A tick value with as many decimals as the step needs, grouped when the axis reaches 10 000."""
    fraction = f"{step:.10f}".rstrip("0").partition(".")[2]
    return grouped(value, min(len(fraction), 4), group=(top if top is not None else value) >= 10_000)


def _svg_open(
    title: str, chart_id: str, size: tuple[int, int], css_class: str, title_at: tuple[float, int]
) -> list[str]:
    """The ``<svg>`` element's opening, its title and the title written at ``title_at``."""
    width, height = size
    return [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="chart {css_class}" id="{escape(chart_id)}" '
        f'viewBox="0 0 {width} {height}" width="{width}" height="{height}" role="img" '
        f'aria-label="{escape(title)}">',
        f"<title>{escape(title)}</title>",
        f'<text x="{title_at[0]}" y="{title_at[1]}" text-anchor="middle" class="chart-title">'
        f"{escape(title)}</text>",
    ]


def _axis_titles(x_label: str, x_at: tuple[float, int], y_label: str, y_at: tuple[int, float]) -> str:
    """The x axis title centred at ``x_at`` and the y axis title turned upright at ``y_at``."""
    return (
        f'<text x="{x_at[0]}" y="{x_at[1]}" text-anchor="middle" class="axis-label x-label">'
        f"{escape(x_label)}</text>"
        f'<text x="{y_at[0]}" y="{y_at[1]}" text-anchor="middle" class="axis-label y-label" '
        f'transform="rotate(-90 {y_at[0]} {y_at[1]})">{escape(y_label)}</text>'
    )


def _y_axis(ticks: Sequence[float], left: float, right: float, top: float, plot_h: float) -> list[str]:
    """Grid lines and tick labels of a vertical axis starting at 0."""
    peak = ticks[-1]
    step = ticks[1] - ticks[0] if len(ticks) > 1 else 1.0
    parts = []
    for tick in ticks:
        y = top + plot_h - plot_h * tick / peak
        grid = "axis-line" if tick == 0 else "grid"
        parts.append(f'<line x1="{left}" y1="{y:.1f}" x2="{right}" y2="{y:.1f}" class="{grid}"/>')
        parts.append(
            f'<text x="{left - 6}" y="{y + 4:.1f}" text-anchor="end" class="tick">'
            f"{escape(tick_label(tick, step, peak))}</text>"
        )
    return parts


def bar_chart(
    title: str,
    bars: Sequence[tuple[str, float]],
    *,
    y_label: str,
    x_label: str = "mode",
    colours: Mapping[str, str] | None = None,
    fmt: Callable[[float], str] = lambda v: f"{v:.1f}",
    y_max: float | None = None,
    chart_id: str = "",
    width: int = 360,
    height: int = 240,
) -> str:
    """A vertical bar chart: one bar per label, a labelled y axis from 0, the value written above each bar.

    ``colours`` maps a label to its fill (default: ``mode_colours`` of the labels); ``y_max`` fixes the axis
    top (100 for percentages) instead of rounding up from the largest value.
    """
    colours = colours or mode_colours([label for label, _ in bars])
    top, bottom, left, right = 44, 44, 58, 12
    plot_w, plot_h = width - left - right, height - top - bottom
    ticks = nice_ticks(y_max if y_max is not None else max((v for _, v in bars), default=0.0))
    peak = ticks[-1]
    slot = plot_w / max(len(bars), 1)
    parts = _svg_open(title, chart_id, (width, height), "bar-chart", (width / 2, 18))
    parts += _y_axis(ticks, left, left + plot_w, top, plot_h)
    for i, (label, value) in enumerate(bars):
        bar_h = max(plot_h * min(value, peak) / peak, 0.0)
        bar_w = min(slot * 0.62, 72)
        x = left + i * slot + (slot - bar_w) / 2
        y = top + plot_h - bar_h
        colour = colours.get(label, PALETTE[i % len(PALETTE)])
        parts.append(
            f'<rect x="{x:.1f}" y="{y:.1f}" width="{bar_w:.1f}" height="{bar_h:.1f}" fill="{colour}" '
            f'data-mode="{escape(label)}"><title>{escape(label)}: {escape(fmt(value))}</title></rect>'
        )
        parts.append(
            f'<text x="{x + bar_w / 2:.1f}" y="{y - 5:.1f}" text-anchor="middle" class="value">'
            f"{escape(fmt(value))}</text>"
        )
        parts.append(
            f'<text x="{x + bar_w / 2:.1f}" y="{top + plot_h + 16}" text-anchor="middle" class="tick">'
            f"{escape(label)}</text>"
        )
    parts.append(
        f'<line x1="{left}" y1="{top}" x2="{left}" y2="{top + plot_h}" class="axis-line"/>'
        + _axis_titles(x_label, (left + plot_w / 2, height - 6), y_label, (14, top + plot_h / 2))
        + "</svg>"
    )
    return "".join(parts)


def line_chart(
    title: str,
    series: Mapping[str, Sequence[float]],
    *,
    x_label: str,
    y_label: str,
    colours: Mapping[str, str] | None = None,
    chart_id: str = "",
    width: int = 960,
    height: int = 380,
) -> str:
    """A line chart over x = 1, 2, …: one line per series (own colour and dash), grid, ticks and a legend.

    The legend sits to the right of the plot and gives each series' last value; every point has a tooltip.
    """
    colours = colours or mode_colours(list(series))
    top, bottom, left, right = 40, 48, 70, 210
    plot_w, plot_h = width - left - right, height - top - bottom
    length = max((len(values) for values in series.values()), default=0)
    ticks = nice_ticks(max((max(values, default=0.0) for values in series.values()), default=0.0))
    peak = ticks[-1]

    def x_of(index: int) -> float:
        return left + (plot_w * index / (length - 1) if length > 1 else plot_w / 2)

    def y_of(value: float) -> float:
        return top + plot_h - plot_h * value / peak

    parts = _svg_open(title, chart_id, (width, height), "line-chart", (left + plot_w / 2, 20))
    parts += _y_axis(ticks, left, left + plot_w, top, plot_h)
    if length:
        step = 1 if length <= 12 else 5 if length <= 60 else 10 ** math.floor(math.log10(length / 6)) * 5
        for tick in sorted({1, length, *range(step, length, step)}):
            x = x_of(tick - 1)
            parts.append(
                f'<line x1="{x:.1f}" y1="{top + plot_h}" x2="{x:.1f}" y2="{top + plot_h + 4}" '
                'class="axis-line"/>'
                f'<text x="{x:.1f}" y="{top + plot_h + 17}" text-anchor="middle" class="tick">{tick}</text>'
            )
    parts.append(
        f'<line x1="{left}" y1="{top}" x2="{left}" y2="{top + plot_h}" class="axis-line"/>'
        + _axis_titles(x_label, (left + plot_w / 2, height - 8), y_label, (16, top + plot_h / 2))
    )
    legend = [f'<g class="legend" transform="translate({left + plot_w + 22} {top})">']
    for i, (name, values) in enumerate(series.items()):
        colour = colours.get(name, PALETTE[i % len(PALETTE)])
        dash = DASHES[i % len(DASHES)]
        dash_attr = f' stroke-dasharray="{dash}"' if dash else ""
        points = " ".join(f"{x_of(j):.1f},{y_of(v):.1f}" for j, v in enumerate(values))
        parts.append(
            f'<polyline fill="none" stroke="{colour}" stroke-width="2.2"{dash_attr} points="{points}" '
            f'data-series="{escape(name)}"><title>{escape(name)}</title></polyline>'
        )
        parts.append(f'<g fill="{colour}" data-series-points="{escape(name)}">')
        parts += [
            f'<circle cx="{x_of(j):.1f}" cy="{y_of(v):.1f}" r="2.2">'
            f"<title>{escape(name)} · {escape(x_label)} {j + 1}: {escape(grouped(v))}</title></circle>"
            for j, v in enumerate(values)
        ]
        parts.append("</g>")
        last = grouped(values[-1]) if values else "–"
        legend.append(
            f'<g transform="translate(0 {22 * i})" data-legend="{escape(name)}">'
            f'<line x1="0" y1="-4" x2="26" y2="-4" stroke="{colour}" stroke-width="3"{dash_attr}/>'
            f'<text x="32" y="0" class="legend-label">{escape(name)}</text>'
            f'<text x="178" y="0" text-anchor="end" class="legend-value">{escape(last)}</text></g>'
        )
    legend.append(
        f'<text x="178" y="{22 * len(series) + 4}" text-anchor="end" class="legend-note">'
        f"value at {escape(x_label)} {length}</text></g>"
    )
    parts += legend
    parts.append("</svg>")
    return "".join(parts)


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


TICK_LABEL_PX = 56
"""Room one tick label of a distribution chart needs ("150 ms", "1.5 s") so that none overlaps the next."""


def _labelled_ticks(scale: _Scale, plot_w: float) -> set[float]:
    """The ticks that get a label: all when they fit, else (log axis) only the powers of ten, thinned
    further until none overlaps the next; the other ticks keep their grid lines."""
    ticks = list(scale.ticks)
    if scale.log and len(ticks) * TICK_LABEL_PX > plot_w:
        ticks = [t for t in ticks if math.isclose(10 ** round(math.log10(t)), t)]
    step = 1
    while len(ticks[::step]) * TICK_LABEL_PX > plot_w and step < len(ticks):
        step += 1
    return set(ticks[::step])


def distribution_chart(
    title: str, series: Sequence[Series], *, x_label: str, chart_id: str, width: int = 1100
) -> str:
    """The chart: one row per series, labels at the left, p50 / p95 at the right."""
    left, right, top, bottom, row_h = 220, 190, 40, 50, 34
    height = top + bottom + row_h * max(len(series), 1)
    plot_w = width - left - right
    scale = _Scale([v for _, _, values in series for v in values], left, plot_w)
    parts = _svg_open(title, chart_id, (width, height), "distribution-chart", (left + plot_w / 2, 20))
    bottom_y = top + row_h * len(series)
    labelled = _labelled_ticks(scale, plot_w)
    for tick in scale.ticks:
        x = scale.x(tick)
        parts.append(f'<line x1="{x:.1f}" y1="{top}" x2="{x:.1f}" y2="{bottom_y}" class="grid"/>')
        if tick in labelled:
            parts.append(
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
        + _axis_titles(
            f"{x_label} ({axis})", (left + plot_w / 2, height - 8), "mode", (14, top + (bottom_y - top) / 2)
        )
        + "</svg>"
    )
    return "".join(parts)


DISTRIBUTION_CAPTION = (
    "Every dot is a turn; the box spans p25 to p75, the thick mark is p50, the whisker runs from p5 to "
    "p95 (its end mark)."
)
"""Under every distribution chart."""
