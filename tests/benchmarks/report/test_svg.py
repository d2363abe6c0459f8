"""Inline SVG charts: labelled axes, round ticks, values on bars, a legend, one colour per mode (svg.py)."""

from __future__ import annotations

import itertools
import re

import pytest

from benchmarks.report.svg import (
    MODE_COLOURS,
    TICK_LABEL_PX,
    bar_chart,
    distribution_chart,
    grouped,
    line_chart,
    mode_colours,
    nice_ticks,
)

MODES = ["planner", "toolcalling", "toolcalling-full"]


@pytest.mark.parametrize(
    ("peak", "ticks"),
    [
        (1.76, [0.0, 0.5, 1.0, 1.5, 2.0]),
        (4605, [0.0, 1000.0, 2000.0, 3000.0, 4000.0, 5000.0]),
        (100, [0.0, 20.0, 40.0, 60.0, 80.0, 100.0]),
        (0, [0.0, 1.0]),
    ],
)
def test_ticks_are_round_start_at_zero_and_cover_the_peak(peak: float, ticks: list[float]) -> None:
    assert nice_ticks(peak) == ticks


def test_large_numbers_are_grouped_with_thin_spaces() -> None:
    assert grouped(1874) == "1874"
    assert grouped(15838) == "15\u202f838"


def test_known_modes_keep_their_colour_and_others_get_distinct_ones() -> None:
    colours = mode_colours(["toolcalling-full", "planner", "other", "another"])
    assert colours["planner"] == MODE_COLOURS["planner"]
    assert colours["toolcalling-full"] == MODE_COLOURS["toolcalling-full"]
    assert len(set(colours.values())) == 4


def test_a_bar_chart_labels_both_axes_and_writes_each_value_on_its_bar() -> None:
    svg = bar_chart(
        "Input tokens per turn (mean)",
        [("planner", 1874.0), ("toolcalling", 1771.0), ("toolcalling-full", 4605.0)],
        y_label="input tokens / turn",
        fmt=lambda v: f"{v:.0f}",
        chart_id="c",
    )
    assert re.search(r'class="axis-label x-label"[^>]*>mode<', svg)
    assert re.search(r'class="axis-label y-label"[^>]*>input tokens / turn<', svg)
    ticks = re.findall(r'class="tick">([^<]+)<', svg)
    assert {"0", "1000", "5000", *MODES} <= set(ticks), "y ticks from 0 to the rounded top, x ticks per mode"
    values = re.findall(r'class="value">([^<]+)<', svg)
    assert values == ["1874", "1771", "4605"]
    fills = dict(re.findall(r'fill="(#[0-9a-f]{6})" data-mode="([^"]+)"', svg))
    assert {mode: colour for colour, mode in fills.items()} == {m: MODE_COLOURS[m] for m in MODES}


def test_a_percentage_chart_can_fix_its_axis_at_100() -> None:
    svg = bar_chart("Accuracy", [("planner", 40.0)], y_label="% of turns passed", y_max=100)
    assert re.findall(r'class="tick">(\d+)<', svg)[-1] == "100"


def test_a_line_chart_has_labelled_axes_ticks_and_a_legend_naming_every_series() -> None:
    series = {mode: [1000.0 * (i + 1) * (j + 1) for j in range(50)] for i, mode in enumerate(MODES)}
    svg = line_chart("Input tokens per turn", series, x_label="turn", y_label="input tokens", chart_id="g")
    assert re.search(r'class="axis-label x-label"[^>]*>turn<', svg)
    assert re.search(r'class="axis-label y-label"[^>]*>input tokens<', svg)
    ticks = re.findall(r'class="tick">([^<]+)<', svg)
    assert {"1", "10", "25", "50"} <= set(ticks) and "0" in ticks
    legend = re.findall(r'data-legend="([^"]+)"', svg)
    assert legend == MODES
    assert "150\u202f000" in svg, "the legend gives each series' last value"
    lines = re.findall(r'<polyline fill="none" stroke="(#[0-9a-f]{6})"[^>]*data-series="([^"]+)"', svg)
    strokes = dict(lines)
    assert sorted(strokes.values()) == sorted(MODES)
    assert len(re.findall(r"stroke-dasharray", svg)) >= 2, "series differ by dash too, for grey-scale print"
    assert svg.count("<circle") == 150, "one point (with a tooltip) per turn and series"


def test_a_distribution_over_six_decades_labels_ticks_that_never_overlap() -> None:
    # two turns refused before any model call (half a millisecond) beside minutes-long real-model turns
    values = [0.5, 0.6, *(1_000.0 * s for s in range(2, 200, 7))]
    svg = distribution_chart(
        "Latency", [("planner", "#123456", values)], x_label="time per turn", chart_id="c"
    )

    labels = re.findall(
        r'<text x="([\d.]+)" y="[\d.]+" text-anchor="middle" class="tick">([^<]+)</text>', svg
    )
    xs = [float(x) for x, _ in labels]
    assert len(labels) >= 3 and all(b - a >= TICK_LABEL_PX for a, b in itertools.pairwise(xs))
    assert svg.count('class="grid"') > len(labels)  # the unlabelled ticks keep their grid lines
    assert {text for _, text in labels} >= {"1 ms", "1 s", "100 s"}
    assert "milliseconds" not in svg  # each tick says its own unit
