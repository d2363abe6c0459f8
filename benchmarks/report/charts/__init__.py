"""The report's charts, drawn by matplotlib and returned as inline ``<svg>`` elements for a self-contained
HTML page (no script, no CDN): a distribution chart, a line chart, accuracy against latency and cost, and
where a turn's time goes.

Every chart's root carries its id, ``class="chart <kind>-chart"``, ``role="img"``, an ``aria-label`` and a
``<title>``; every series' marks sit in a group ``<g id="<chart id>-series-<label slug>">``. Text stays
text (searchable, small) and labels are data, never markup or TeX. The same input gives the same bytes.
"""

from benchmarks.report.charts._breakdown import BreakdownBar, breakdown_chart
from benchmarks.report.charts._distribution import DISTRIBUTION_CAPTION, Series, distribution_chart
from benchmarks.report.charts._labels import grouped, ms_tick
from benchmarks.report.charts._line import line_chart
from benchmarks.report.charts._style import MODE_COLOURS, PALETTE, mode_colours
from benchmarks.report.charts._tradeoff import TradeoffPoint, tradeoff_chart

__all__ = [
    "DISTRIBUTION_CAPTION",
    "MODE_COLOURS",
    "PALETTE",
    "BreakdownBar",
    "Series",
    "TradeoffPoint",
    "breakdown_chart",
    "distribution_chart",
    "grouped",
    "line_chart",
    "mode_colours",
    "ms_tick",
    "tradeoff_chart",
]
