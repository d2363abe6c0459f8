"""The charts' look: one colour per mode (Okabe–Ito), line dashes and marker shapes that survive grey-scale
print, fonts and sizes, and the matplotlib settings every chart is drawn under."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from matplotlib.typing import RcKeyType

MODE_COLOURS = {"planner": "#0072b2", "toolcalling": "#d55e00", "toolcalling-full": "#009e73"}
"""The usual modes' colours (Okabe–Ito, readable by colour-blind readers), the same in every report."""

PALETTE = ("#cc79a7", "#e69f00", "#56b4e9", "#7f7f7f", "#000000")
"""Colours for any other series, in order of appearance."""


def mode_colours(modes: Sequence[str]) -> dict[str, str]:
    """One colour per mode: the fixed colour of a known mode, else the next unused palette colour."""
    colours: dict[str, str] = {}
    spare = iter(PALETTE)
    for mode in modes:
        colours[mode] = MODE_COLOURS.get(mode) or next(spare, PALETTE[len(colours) % len(PALETTE)])
    return colours


DASHES: tuple[tuple[int, tuple[float, ...]], ...] = (
    (0, ()),
    (0, (7, 4)),
    (0, (3, 2)),
    (0, (8, 3, 2, 3)),
    (0, (1, 2)),
)
"""Line patterns per line-chart series (offset, on/off lengths; the first solid), so lines stay apart in
grey-scale print."""

MARKERS = ("o", "s", "D", "^", "v", "P", "X", "*", "<", ">")
"""Marker shapes per trade-off point, so two points of one colour (one mode in two runs) stay apart."""

FONTS = ("DejaVu Sans", "Arial", "Helvetica")
"""Matplotlib measures text with the first (it ships with it); a reader's browser without it takes a
narrower one, so nothing laid out around text ever overlaps."""

INK, MUTED, AXIS, GRID = "#111827", "#374151", "#6b7280", "#e5e7eb"
"""Text, tick labels, axis lines and grid lines."""

TITLE_SIZE, TEXT_SIZE, SMALL_SIZE = 14.0, 11.0, 10.0
"""Font sizes in px (1 pt of the figure is 1 px of the SVG): the title, axis and tick labels, small notes."""


def rc_params(salt: str) -> dict[RcKeyType, Any]:
    """The matplotlib settings of one chart: text kept as text and never read as markup or TeX, element
    ids salted with ``salt`` (so two charts on a page never share one), the house fonts and colours."""
    return {
        "svg.fonttype": "none",
        "svg.hashsalt": salt,
        "svg.id": None,
        "text.usetex": False,
        "text.parse_math": False,
        "axes.formatter.use_mathtext": False,
        "font.family": "sans-serif",
        "font.sans-serif": list(FONTS),
        "font.size": TEXT_SIZE,
        "text.color": INK,
        "axes.labelsize": TEXT_SIZE,
        "axes.labelcolor": INK,
        "axes.edgecolor": AXIS,
        "axes.linewidth": 0.8,
        "axes.spines.top": False,
        "axes.spines.right": False,
        "xtick.labelsize": TEXT_SIZE,
        "ytick.labelsize": TEXT_SIZE,
        "xtick.color": AXIS,
        "ytick.color": AXIS,
        "xtick.labelcolor": MUTED,
        "ytick.labelcolor": MUTED,
        "grid.color": GRID,
        "grid.linewidth": 0.8,
        "legend.fontsize": TEXT_SIZE,
        "legend.title_fontsize": SMALL_SIZE,
        "legend.frameon": False,
        "figure.facecolor": "white",
        "savefig.facecolor": "white",
        "savefig.bbox": None,
        "path.simplify": True,
    }
