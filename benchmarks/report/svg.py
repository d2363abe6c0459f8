"""Small inline SVG charts (no JavaScript, no CDN): a bar chart and a line chart."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from html import escape

PALETTE = ("#2563eb", "#ea580c", "#16a34a", "#9333ea", "#dc2626", "#0891b2")
"""Series colours, in mode order."""


def _nice_max(value: float) -> float:
    if value <= 0:
        return 1.0
    magnitude = 10.0 ** len(str(int(value))) / 10
    for step in (1, 2, 2.5, 5, 10):
        if value <= step * magnitude:
            return step * magnitude
    return value


def bar_chart(
    title: str,
    bars: Sequence[tuple[str, float]],
    *,
    fmt: Callable[[float], str] = lambda v: f"{v:.1f}",
    chart_id: str = "",
    width: int = 320,
    height: int = 200,
) -> str:
    """A vertical bar chart, one bar per label, values written above the bars."""
    top, bottom, left = 28, 36, 8
    plot_h = height - top - bottom
    peak = _nice_max(max((v for _, v in bars), default=0.0))
    slot = (width - 2 * left) / max(len(bars), 1)
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="chart bar-chart" id="{escape(chart_id)}" '
        f'viewBox="0 0 {width} {height}" width="{width}" height="{height}" role="img" '
        f'aria-label="{escape(title)}">',
        f'<text x="{width / 2}" y="16" text-anchor="middle" class="chart-title">{escape(title)}</text>',
        f'<line x1="{left}" y1="{top + plot_h}" x2="{width - left}" y2="{top + plot_h}" stroke="#999"/>',
    ]
    for i, (label, value) in enumerate(bars):
        bar_h = plot_h * (value / peak) if peak else 0
        x = left + i * slot + slot * 0.2
        y = top + plot_h - bar_h
        colour = PALETTE[i % len(PALETTE)]
        parts.append(
            f'<rect x="{x:.1f}" y="{y:.1f}" width="{slot * 0.6:.1f}" height="{bar_h:.1f}" fill="{colour}">'
            f"<title>{escape(label)}: {escape(fmt(value))}</title></rect>"
        )
        parts.append(
            f'<text x="{x + slot * 0.3:.1f}" y="{y - 4:.1f}" text-anchor="middle" class="value">'
            f"{escape(fmt(value))}</text>"
        )
        parts.append(
            f'<text x="{x + slot * 0.3:.1f}" y="{top + plot_h + 16}" text-anchor="middle" class="label">'
            f"{escape(label)}</text>"
        )
    parts.append("</svg>")
    return "".join(parts)


def line_chart(
    title: str,
    series: Mapping[str, Sequence[float]],
    *,
    x_label: str = "turn",
    y_label: str = "",
    chart_id: str = "",
    width: int = 680,
    height: int = 300,
) -> str:
    """A line chart over x = 1, 2, …; one polyline per series, with a legend."""
    top, bottom, left, right = 30, 40, 56, 140
    plot_w, plot_h = width - left - right, height - top - bottom
    length = max((len(values) for values in series.values()), default=0)
    peak = _nice_max(max((max(values, default=0.0) for values in series.values()), default=0.0))

    def point(index: int, value: float) -> str:
        x = left + (plot_w * index / (length - 1) if length > 1 else plot_w / 2)
        y = top + plot_h - plot_h * value / peak
        return f"{x:.1f},{y:.1f}"

    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="chart line-chart" id="{escape(chart_id)}" '
        f'viewBox="0 0 {width} {height}" width="{width}" height="{height}" role="img" '
        f'aria-label="{escape(title)}">',
        f'<text x="{left + plot_w / 2}" y="18" text-anchor="middle" class="chart-title">'
        f"{escape(title)}</text>",
        f'<line x1="{left}" y1="{top + plot_h}" x2="{left + plot_w}" y2="{top + plot_h}" stroke="#999"/>',
        f'<line x1="{left}" y1="{top}" x2="{left}" y2="{top + plot_h}" stroke="#999"/>',
    ]
    for fraction in (0.0, 0.5, 1.0):
        y = top + plot_h - plot_h * fraction
        parts.append(
            f'<text x="{left - 6}" y="{y + 4:.1f}" text-anchor="end" class="label">'
            f"{peak * fraction:.0f}</text>"
        )
    if length:
        for tick in sorted({1, length, *range(10, length, 10)}):
            x = point(tick - 1, 0).split(",")[0]
            parts.append(
                f'<text x="{x}" y="{top + plot_h + 16}" text-anchor="middle" class="label">{tick}</text>'
            )
    parts.append(
        f'<text x="{left + plot_w / 2}" y="{height - 6}" text-anchor="middle" class="label">'
        f"{escape(x_label)}</text>"
    )
    if y_label:
        parts.append(
            f'<text x="12" y="{top + plot_h / 2}" text-anchor="middle" class="label" '
            f'transform="rotate(-90 12 {top + plot_h / 2})">{escape(y_label)}</text>'
        )
    for i, (name, values) in enumerate(series.items()):
        colour = PALETTE[i % len(PALETTE)]
        points = " ".join(point(j, v) for j, v in enumerate(values))
        parts.append(
            f'<polyline fill="none" stroke="{colour}" stroke-width="2" points="{points}" '
            f'data-series="{escape(name)}"><title>{escape(name)}</title></polyline>'
        )
        ly = top + 14 + 18 * i
        parts.append(
            f'<line x1="{left + plot_w + 12}" y1="{ly - 4}" x2="{left + plot_w + 30}" y2="{ly - 4}" '
            f'stroke="{colour}" stroke-width="3"/>'
            f'<text x="{left + plot_w + 36}" y="{ly}" class="legend">{escape(name)}</text>'
        )
    parts.append("</svg>")
    return "".join(parts)
