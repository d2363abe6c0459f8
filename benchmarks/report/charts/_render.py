"""From a matplotlib figure to an ``<svg>`` element to write inline in an HTML page.

One figure at a time is drawn, under :func:`matplotlib.rc_context` and a lock: matplotlib's settings are
process-wide, so the lock keeps charts drawn in threads from reading each other's, and each chart starts
from matplotlib's defaults, whatever other code in the process set. No backend is selected:
the figure is a plain :class:`~matplotlib.figure.Figure` on an SVG canvas, and 1 pt of it is 1 px of the SVG.

The file matplotlib writes is cut down to an element: no XML prolog, DOCTYPE, comments or metadata; its
``<style>`` (which, inline, would apply to the whole page) becomes attributes of the root; the numbered
group ids it gives every artist (``figure_1``, ``axes_1``…, the same in every chart) are dropped; marker
positions are rounded to 0.1 px and a run of alike markers (a series' dots) carries its style once. The
root carries the chart's id, ``class="chart <kind>-chart"``, ``role="img"``, an ``aria-label`` and a
``<title>``, and keeps its size in px (``width``/``height`` equal to the viewBox): a page shrinks it with
CSS (``max-width: 100%; height: auto``), it is never drawn larger than it was laid out.
"""

from __future__ import annotations

import io
import re
import threading
from collections.abc import Callable, Sequence
from html import escape

import matplotlib as mpl
import matplotlib.style
from matplotlib.artist import Artist
from matplotlib.axes import Axes
from matplotlib.backend_bases import RendererBase
from matplotlib.backends.backend_svg import FigureCanvasSVG
from matplotlib.figure import Figure
from matplotlib.font_manager import FontProperties
from matplotlib.textpath import text_to_path

from benchmarks.report.charts._style import AXIS, TITLE_SIZE, rc_params

DPI = 72
"""Points per inch: at 72, one point of the figure is one unit of the SVG's viewBox, drawn as one px."""

_LOCK = threading.Lock()

_METADATA: dict[str, str | None] = {"Date": None, "Creator": None, "Format": None, "Type": None}
"""No date, generator or format in the file, so the same chart is the same bytes."""


def render(kind: str, title: str, chart_id: str, draw: Callable[[Figure], None]) -> str:
    """The inline ``<svg>`` of the figure ``draw`` fills in (and sizes, with :func:`size`)."""
    salt = f"{kind}:{chart_id}:{title}"
    # from matplotlib's defaults, whatever else in the process set
    with _LOCK, mpl.style.context("default"), mpl.rc_context(rc_params(salt)):
        figure = Figure(dpi=DPI)
        FigureCanvasSVG(figure)
        draw(figure)
        buffer = io.StringIO()
        figure.savefig(buffer, format="svg", metadata=_METADATA)
    return inline(buffer.getvalue(), kind=kind, title=title, chart_id=chart_id)


def size(figure: Figure, width: float, height: float) -> None:
    """Make ``figure`` ``width`` × ``height`` px."""
    figure.set_size_inches(width / DPI, height / DPI)


def axes_at(figure: Figure, left: float, top: float, width: float, height: float) -> Axes:
    """New axes whose plotting area is the box at (``left``, ``top``) from the top-left corner, in px."""
    fig_w, fig_h = figure.get_size_inches() * DPI
    return figure.add_axes((left / fig_w, 1 - (top + height) / fig_h, width / fig_w, height / fig_h))


def chart_title(figure: Figure, text: str, centre: float, width: float) -> None:
    """The chart's title, centred at ``centre`` px on the top line, shortened to ``width`` px."""
    fig_w, fig_h = figure.get_size_inches() * DPI
    figure.text(
        centre / fig_w,
        1 - 24 / fig_h,
        fit(text, TITLE_SIZE, width, bold=True),
        ha="center",
        fontsize=TITLE_SIZE,
        fontweight="bold",
    )


def text_width(text: str, font_size: float, *, bold: bool = False) -> float:
    """The width in px of ``text`` in the charts' font, as matplotlib lays it out (inside :func:`render`,
    whose settings name the font)."""
    font = FontProperties(family="sans-serif", size=font_size, weight="bold" if bold else "normal")
    width, _, _ = text_to_path.get_text_width_height_descent(text, font, ismath=False)
    return float(width)


def fit(text: str, font_size: float, width: float, *, bold: bool = False) -> str:
    """``text``, cut short with "…" when it is wider than ``width`` px."""
    if text_width(text, font_size, bold=bold) <= width:
        return text
    low, high = 0, len(text)
    while low < high:  # the longest prefix that fits with the ellipsis
        middle = (low + high + 1) // 2
        if text_width(text[:middle] + "…", font_size, bold=bold) <= width:
            low = middle
        else:
            high = middle - 1
    return text[:low].rstrip() + "…"


class SeriesIds:
    """Element ids of a chart's series, ``<chart id>-series-<slug>``: unique in the chart even when two
    labels slug alike, and across charts as long as chart ids are."""

    def __init__(self, chart_id: str) -> None:
        self._prefix = f"{chart_id}-series-" if chart_id else "series-"
        self._taken: set[str] = set()

    def __call__(self, label: str) -> str:
        base = self._prefix + (re.sub(r"[^a-z0-9]+", "-", label.lower()).strip("-") or "series")
        ident, n = base, 1
        while ident in self._taken:
            n += 1
            ident = f"{base}-{n}"
        self._taken.add(ident)
        return ident


class Group(Artist):
    """Artists drawn inside one SVG group ``<g id="…">``, so one series' marks are found together.

    The artists are drawn in the order given and are not clipped to the axes (the charts set limits that
    hold every mark)."""

    def __init__(self, gid: str, artists: Sequence[Artist], zorder: float = 2.0) -> None:
        super().__init__()
        self.set_gid(gid)
        self.set_zorder(zorder)
        self._artists = list(artists)

    def draw(self, renderer: RendererBase) -> None:
        if not self.get_visible():
            return
        renderer.open_group("series", gid=self.get_gid())
        for artist in self._artists:
            artist.draw(renderer)
        renderer.close_group("series")


def add_group(axes: Axes, gid: str, artists: Sequence[Artist], zorder: float = 2.0) -> None:
    """Draw ``artists`` (in data coordinates of ``axes`` unless they set their own transform) as one group."""
    figure = axes.figure
    for artist in artists:
        if not artist.is_transform_set():
            artist.set_transform(axes.transData)
        artist.set_figure(figure)
    axes.add_artist(Group(gid, artists, zorder))


def message(figure: Figure, text: str, width: float = 640, height: float = 120) -> None:
    """A chart with nothing to draw: its title (drawn by the caller) over ``text``."""
    size(figure, width, height)
    figure.text(0.5, 0.4, text, ha="center", va="center", color=AXIS)


_PROLOG = re.compile(r"<\?xml[^>]*\?>|<!DOCTYPE[^>]*>|<!--.*?-->|<metadata>.*?</metadata>", re.S)
_ROOT = re.compile(r"<svg\b[^>]*>")
_VIEWBOX = re.compile(r'viewBox="0 0 ([\d.]+) ([\d.]+)"')
_DEFAULT_STYLE = re.compile(r"<defs>\s*<style[^>]*>\*\{[^}<]*\}</style>\s*</defs>")
_NUMBERED_GROUP = re.compile(r'<g id="[A-Za-z][\w.]*_\d+"(/?)>\n?')
_USE = re.compile(r"<use [^>]*>")
_USE_XY = re.compile(r' ([xy])="(-?[\d.]+)"')
_USE_RUN = re.compile(r"<g>\n((?:<use [^>]*/>\n)+)</g>")
_STYLE = re.compile(r' style="([^"]*)"')


def _round_use(match: re.Match[str]) -> str:
    return _USE_XY.sub(lambda m: f' {m[1]}="{float(m[2]):.1f}"'.replace('.0"', '"'), match[0])


def _hoist_style(match: re.Match[str]) -> str:
    """A group of marker copies all styled alike (a series' dots) with the style once, on the group."""
    styles = set(_STYLE.findall(match[1]))
    if len(styles) != 1 or match[1].count("<use ") < 2:
        return match[0]
    return f'<g style="{styles.pop()}">\n{_STYLE.sub("", match[1])}</g>'


def inline(svg: str, *, kind: str, title: str, chart_id: str) -> str:
    """Matplotlib's SVG file as an element to write inside HTML (see the module's docstring)."""
    svg = _PROLOG.sub("", svg)
    view = _VIEWBOX.search(svg)
    if view is None:  # matplotlib always writes one
        raise ValueError("matplotlib wrote an SVG without a viewBox")
    width, height = (round(float(v)) for v in view.groups())
    ident = f' id="{escape(chart_id)}"' if chart_id else ""
    root = (
        f'<svg xmlns="http://www.w3.org/2000/svg" xmlns:xlink="http://www.w3.org/1999/xlink"{ident} '
        f'class="chart {kind}-chart" role="img" aria-label="{escape(title)}" viewBox="0 0 {width} {height}" '
        f'width="{width}" height="{height}" stroke-linejoin="round" stroke-linecap="butt">'
        f"<title>{escape(title)}</title>"
    )
    svg = _ROOT.sub(lambda _: root, svg, count=1)
    svg = _DEFAULT_STYLE.sub("", svg, count=1)
    svg = _NUMBERED_GROUP.sub(lambda m: "" if m[1] else "<g>\n", svg)
    svg = _USE.sub(_round_use, re.sub(r"\n\s+", "\n", svg))
    return _USE_RUN.sub(_hoist_style, svg).strip()
