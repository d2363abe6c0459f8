"""The report's charts, drawn by matplotlib as inline SVG: labelled, escaped, deterministic, small, one
group per series, tick labels that never overlap (benchmarks/report/charts/)."""

from __future__ import annotations

import itertools
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING

import matplotlib
import pytest

from benchmarks.report.charts import (
    MODE_COLOURS,
    BreakdownBar,
    TradeoffPoint,
    breakdown_chart,
    distribution_chart,
    grouped,
    line_chart,
    mode_colours,
    ms_tick,
    tradeoff_chart,
)
from benchmarks.stats import percentile

if TYPE_CHECKING:
    from matplotlib.typing import RcKeyType

SVG = "{http://www.w3.org/2000/svg}"
MODES = ["planner", "toolcalling", "toolcalling-full"]
HOSTILE = ["<script>alert(1)</script>", "a & b", "$x^2$", "50%"]
NAN, INF = float("nan"), float("inf")


def _turns(n: int, low: float, high: float) -> list[float]:
    """``n`` times spread evenly on a log scale from ``low`` to ``high`` ms, in a shuffled fixed order."""
    values = [low * (high / low) ** (i / max(n - 1, 1)) for i in range(n)]
    return [values[(i * 37) % n] for i in range(n)]


def _point(label: str, accuracy: float, latency: float, cost: float | None = None) -> TradeoffPoint:
    colour = MODE_COLOURS.get(label.rpartition(" · ")[2], "#7f7f7f")
    return TradeoffPoint(label, colour, accuracy, (accuracy - 0.08, accuracy + 0.06), latency, cost)


def _bar(label: str, first: float = 2100.0) -> BreakdownBar:
    return BreakdownBar(
        label, [("first tokens", first), ("writing", 3400.0), ("operations", 45.0), ("rest", 12.0)]
    )


CHARTS: dict[str, Callable[[str], str]] = {
    "distribution": lambda chart_id: distribution_chart(
        "Latency per turn, measured",
        [(m, MODE_COLOURS[m], _turns(40, 200, 9000 * (i + 1))) for i, m in enumerate(MODES)],
        x_label="time per turn, measured",
        chart_id=chart_id,
    ),
    "line": lambda chart_id: line_chart(
        "Input tokens per turn",
        {m: [1000.0 * (i + 1) * (j + 1) for j in range(50)] for i, m in enumerate(MODES)},
        x_label="turn",
        y_label="input tokens per turn",
        chart_id=chart_id,
    ),
    "tradeoff": lambda chart_id: tradeoff_chart(
        [_point("planner", 0.74, 8617, 0.42), _point("toolcalling", 0.37, 8757, 0.61)],
        latency_label="first answer token p50, measured",
        chart_id=chart_id,
    ),
    "breakdown": lambda chart_id: breakdown_chart(
        [_bar("planner"), _bar("toolcalling", 4100)], chart_id=chart_id
    ),
}
"""One sample chart of each kind, by kind, drawn with the chart id given."""


def _root(svg: str) -> ET.Element:
    return ET.fromstring(svg)


def _texts(svg: str) -> list[str]:
    return ["".join(node.itertext()) for node in _root(svg).iter(f"{SVG}text")]


def _group(svg: str, ident: str) -> ET.Element:
    found = [g for g in _root(svg).iter(f"{SVG}g") if g.get("id") == ident]
    assert len(found) == 1, f"one group {ident!r}"
    return found[0]


def _centred_lines(svg: str) -> dict[float, list[tuple[float, str]]]:
    """The centred texts (tick labels, titles) of each line of the chart: {y: [(x, text), ...]}."""
    lines: dict[float, list[tuple[float, str]]] = {}
    for node in _root(svg).iter(f"{SVG}text"):
        if "text-anchor: middle" in (node.get("style") or "") and node.get("x") is not None:
            lines.setdefault(round(float(node.get("y", "0")), 1), []).append(
                (float(node.get("x", "0")), "".join(node.itertext()))
            )
    return lines


def _width(text: str, size: float = 11.0) -> float:
    """A generous estimate of a label's width: 0.65 em a character (the charts' font averages less)."""
    return len(text) * size * 0.65


def _assert_no_overlap(svg: str) -> None:
    for line in _centred_lines(svg).values():
        placed = sorted(line)
        for (xa, a), (xb, b) in itertools.pairwise(placed):
            assert xb - xa >= (_width(a) + _width(b)) / 2, f"{a!r} and {b!r} overlap"


def _x_ticks(svg: str, pattern: str) -> list[tuple[float, str]]:
    """The x tick labels: the lowest line of centred texts that all look like ``pattern``."""
    lines = [
        (y, line) for y, line in _centred_lines(svg).items() if all(re.fullmatch(pattern, t) for _, t in line)
    ]
    assert lines
    return sorted(max(lines)[1])


def _paths(group: ET.Element) -> list[ET.Element]:
    """The paths a group draws (not the marker shapes it defines)."""
    return [path for path in group.iter(f"{SVG}path") if path.get("id") is None]


def _numbers(path: ET.Element) -> list[float]:
    return [float(v) for v in re.findall(r"-?[\d.]+", path.get("d", ""))]


# --- what the rest of the report uses --------------------------------------------------------------------


def test_known_modes_keep_their_colour_and_others_get_distinct_ones() -> None:
    colours = mode_colours(["toolcalling-full", "planner", "other", "another"])
    assert colours["planner"] == MODE_COLOURS["planner"] == "#0072b2"
    assert colours["toolcalling-full"] == MODE_COLOURS["toolcalling-full"]
    assert len(set(colours.values())) == 4


@pytest.mark.parametrize(
    ("value", "text"), [(0.5, "0.5 ms"), (250, "250 ms"), (999.6, "1 s"), (1500, "1.5 s"), (150_000, "150 s")]
)
def test_a_time_is_written_in_its_own_unit(value: float, text: str) -> None:
    assert ms_tick(value) == text


def test_large_numbers_are_grouped_with_thin_spaces() -> None:
    assert grouped(1874) == "1874"
    assert grouped(15838) == "15\u202f838"
    assert grouped(12.345, 1, group=True) == "12.3"


# --- every chart -----------------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", CHARTS)
def test_a_chart_is_an_inline_svg_element_named_for_readers_and_pages(kind: str) -> None:
    svg = CHARTS[kind]("chart-x")
    assert svg.startswith("<svg ") and svg.endswith("</svg>")
    assert not re.search(r"<\?xml|<!DOCTYPE|<!--|<metadata|<style|<script", svg)
    root = _root(svg)
    assert root.get("id") == "chart-x"
    assert root.get("class") == f"chart {kind}-chart"
    assert root.get("role") == "img"
    title = root.find(f"{SVG}title")
    assert title is not None and title.text == root.get("aria-label") and title.text
    assert root[0] is title, "the title is the first child"
    _, _, width, height = (float(v) for v in root.get("viewBox", "").split())
    assert (root.get("width"), root.get("height")) == (f"{width:.0f}", f"{height:.0f}"), "px, not pt"
    assert width <= 1100, "fits a 1,100 px page"
    assert root.find(f".//{SVG}text") is not None, "text stays text, not glyph outlines"


@pytest.mark.parametrize("kind", CHARTS)
def test_the_same_input_draws_the_same_bytes(kind: str) -> None:
    assert CHARTS[kind]("c") == CHARTS[kind]("c")


@pytest.mark.parametrize("kind", CHARTS)
def test_two_charts_on_a_page_share_no_element_id(kind: str) -> None:
    first, second = CHARTS[kind]("chart-a"), CHARTS[kind]("chart-b")
    ids = [set(re.findall(r'\bid="([^"]+)"', svg)) for svg in (first, second)]
    assert ids[0] and not ids[0] & ids[1]
    for svg, found in zip((first, second), ids, strict=True):
        assert len(re.findall(r'\bid="', svg)) == len(found), "and no id twice in one chart"


@pytest.mark.parametrize("kind", CHARTS)
def test_tick_labels_and_axis_titles_never_overlap(kind: str) -> None:
    _assert_no_overlap(CHARTS[kind]("c"))


def test_charts_drawn_in_threads_are_the_ones_drawn_one_by_one() -> None:
    alone = {kind: draw("c") for kind, draw in CHARTS.items()}
    with ThreadPoolExecutor(max_workers=4) as pool:
        together = dict(zip(CHARTS, pool.map(lambda draw: draw("c"), CHARTS.values()), strict=True))
    assert together == alone


def test_settings_made_elsewhere_in_the_process_change_no_chart() -> None:
    alone = CHARTS["line"]("c")
    elsewhere: dict[RcKeyType, object] = {
        "xtick.major.size": 10.0,
        "legend.labelspacing": 3.0,
        "grid.linestyle": "--",
        "font.size": 30.0,
    }
    with matplotlib.rc_context(elsewhere):
        assert CHARTS["line"]("c") == alone
        after = {key: matplotlib.rcParams[key] for key in elsewhere}
        assert after == elsewhere and matplotlib.rcParams["svg.hashsalt"] is None, (
            "and leaves them as they were"
        )


def test_a_chart_is_the_same_in_another_process_and_needs_no_pyplot() -> None:
    script = (
        "import sys\n"
        "from tests.benchmarks.report.test_charts import CHARTS\n"
        "sys.stdout.write(CHARTS['distribution']('c'))\n"
        "assert 'matplotlib.pyplot' not in sys.modules\n"
    )
    root = Path(__file__).parents[3]
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True, cwd=root)
    assert run.stdout == CHARTS["distribution"]("c")


def test_labels_are_data_never_markup_or_maths() -> None:
    svgs = [
        distribution_chart(
            HOSTILE[0], [(h, "#000000", [1.0, 2.0]) for h in HOSTILE], x_label=HOSTILE[1], chart_id="d"
        ),
        line_chart(HOSTILE[2], {h: [1.0, 2.0] for h in HOSTILE}, x_label=HOSTILE[3], y_label=HOSTILE[0]),
        tradeoff_chart(
            [_point(h, 0.5, 100.0 * (i + 1), 0.1) for i, h in enumerate(HOSTILE)],
            latency_label=HOSTILE[2],
            chart_id="t",
        ),
        breakdown_chart([BreakdownBar(h, [(h, 10.0)]) for h in HOSTILE], chart_id="b", title=HOSTILE[0]),
    ]
    for svg in svgs:
        assert "<script" not in svg and "& " not in svg
        texts = " ".join(_texts(svg))
        for label in HOSTILE:
            assert label in texts, f"{label!r} written as it is"
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in svgs[0]
    assert _root(svgs[0]).get("aria-label") == HOSTILE[0]


# --- the distribution chart -------------------------------------------------------------------------------


def test_every_turn_is_a_dot_in_its_series_group() -> None:
    svg = distribution_chart(
        "Latency",
        [("planner", MODE_COLOURS["planner"], _turns(30, 100, 900)), ("toolcalling", "#d55e00", [5.0] * 7)],
        x_label="time per turn",
        chart_id="lat",
    )
    assert len(_group(svg, "lat-series-planner").findall(f".//{SVG}use")) == 30
    assert len(_group(svg, "lat-series-toolcalling").findall(f".//{SVG}use")) == 7
    assert f"fill: {MODE_COLOURS['planner']}" in ET.tostring(_group(svg, "lat-series-planner"), "unicode")


def test_the_box_spans_p25_to_p75_with_p50_marked_and_a_whisker_from_p5_to_p95() -> None:
    values = [50 + i / 2 for i in range(101)]
    svg = distribution_chart("Latency", [("planner", "#0072b2", values)], x_label="time", chart_id="c")
    ticks = _x_ticks(svg, r"[\d.]+ ms")
    (x0, zero), (x1, top) = ticks[0], ticks[-1]
    assert (zero, top) == ("0 ms", "100 ms")

    def x(ms: float) -> float:
        return x0 + (x1 - x0) * ms / 100

    whisker, box, p50, p95 = _paths(_group(svg, "c-series-planner"))
    assert _numbers(whisker)[::2] == pytest.approx(
        [x(percentile(values, 5)), x(percentile(values, 95))], abs=0.5
    )
    box_x = sorted(set(_numbers(box)[::2]))
    assert box_x == pytest.approx([x(percentile(values, 25)), x(percentile(values, 75))], abs=0.5)
    assert _numbers(p50)[::2] == pytest.approx([x(percentile(values, 50))] * 2, abs=0.5), "vertical, at p50"
    assert _numbers(p95)[::2] == pytest.approx([x(percentile(values, 95))] * 2, abs=0.5), "the whisker's end"
    assert "stroke-width: 3.5" in (p50.get("style") or ""), "p50 is the thick mark"
    assert f"p50 {ms_tick(percentile(values, 50))} · p95 {ms_tick(percentile(values, 95))}" in _texts(svg)


@pytest.mark.parametrize(
    ("largest", "scale"), [(1999.0, "linear scale"), (2000.0, "log scale"), (200_000.0, "log scale")]
)
def test_the_axis_is_logarithmic_from_a_twentyfold_span(largest: float, scale: str) -> None:
    svg = distribution_chart(
        "Latency", [("planner", "#0072b2", [100.0, largest])], x_label="time per turn", chart_id="c"
    )
    assert f"time per turn ({scale})" in _texts(svg)


def test_a_distribution_over_six_decades_labels_ticks_that_never_overlap() -> None:
    # two turns refused before any model call (half a millisecond) beside minutes-long real-model turns
    values = [0.5, 0.6, *(1_000.0 * s for s in range(2, 200, 7))]
    svg = distribution_chart(
        "Latency", [("planner", "#123456", values)], x_label="time per turn", chart_id="c"
    )
    labels = _x_ticks(svg, r"[\d.,]+ m?s")
    assert [text for _, text in labels] == ["1 ms", "10 ms", "100 ms", "1 s", "10 s", "100 s"]
    grid_lines = svg.count("stroke: #e5e7eb")
    assert grid_lines > len(labels), "the unlabelled ticks keep their grid lines"
    _assert_no_overlap(svg)
    assert "milliseconds" not in svg, "each tick says its own unit"


def test_a_series_without_turns_says_so_and_the_chart_survives_no_series_at_all() -> None:
    svg = distribution_chart(
        "Latency",
        [("planner", "#0072b2", [10.0, 20.0]), ("toolcalling", "#d55e00", [])],
        x_label="time",
        chart_id="c",
    )
    assert "no turn has this figure" in _texts(svg)
    assert 'id="c-series-toolcalling"' not in svg
    assert _root(distribution_chart("Latency", [], x_label="time", chart_id="e")).get("id") == "e"


def test_values_that_are_not_finite_are_left_out() -> None:
    svg = distribution_chart(
        "Latency",
        [("planner", "#0072b2", [NAN, 10.0, INF, 30.0, -INF]), ("x", "#000000", [NAN])],
        x_label="time",
        chart_id="c",
    )
    assert len(_group(svg, "c-series-planner").findall(f".//{SVG}use")) == 2
    assert not re.search(r"\b(nan|inf)\b", svg, re.IGNORECASE)
    assert "no turn has this figure" in _texts(svg)


def test_three_modes_of_300_turns_stay_small() -> None:
    series = [(m, MODE_COLOURS[m], _turns(300, 400, 90_000 * (i + 1))) for i, m in enumerate(MODES)]
    svg = distribution_chart("Latency", series, x_label="time per turn", chart_id="c")
    assert len(svg.encode()) < 100_000


# --- the line chart ---------------------------------------------------------------------------------------


def test_a_line_chart_has_a_line_per_series_and_a_legend_with_its_last_value() -> None:
    series = {m: [1000.0 * (i + 1) * (j + 1) for j in range(50)] for i, m in enumerate(MODES)}
    svg = line_chart("Input tokens", series, x_label="turn", y_label="input tokens", chart_id="g")
    texts = _texts(svg)
    assert {"turn", "input tokens", "value at turn 50"} <= set(texts)
    assert {"planner: 50\u202f000", "toolcalling: 100\u202f000", "toolcalling-full: 150\u202f000"} <= set(
        texts
    )
    assert {"1", "10", "25", "50"} <= {t for _, t in _x_ticks(svg, r"\d+")}
    for mode in MODES:
        style = _group(svg, f"g-series-{mode}").find(f".//{SVG}path")
        assert style is not None and f"stroke: {MODE_COLOURS[mode]}" in (style.get("style") or "")
    assert svg.count("stroke-dasharray") >= 2, "series differ by dash too, for grey-scale print"


def test_a_gap_in_a_line_does_not_stop_its_legend() -> None:
    svg = line_chart("Tokens", {"planner": [1.0, NAN, 3.0, INF]}, x_label="turn", y_label="tokens")
    assert "planner: 3" in _texts(svg)
    assert "no values to draw" in _texts(line_chart("Tokens", {}, x_label="turn", y_label="tokens"))


def test_a_long_line_labels_its_last_turn_without_crowding_the_round_one_before() -> None:
    svg = line_chart("Tokens", {"planner": [float(i) for i in range(1020)]}, x_label="turn", y_label="tokens")
    assert [t for _, t in _x_ticks(svg, r"\d+")] == ["1", "500", "1020"]


# --- accuracy against latency and cost --------------------------------------------------------------------


def test_the_cost_panel_is_drawn_only_when_every_point_is_priced() -> None:
    priced = [_point("planner", 0.74, 8617, 0.42), _point("toolcalling", 0.37, 8757, 0.61)]
    both = tradeoff_chart(priced, latency_label="latency p50", chart_id="t")
    assert "estimated USD per 1,000 turns (linear scale)" in _texts(both)
    assert _texts(both).count("% of turns passed (95% interval)") == 2
    assert {"t-series-planner", "t-series-planner-cost"} <= set(re.findall(r'id="([^"]+)"', both))

    one_unpriced = [priced[0], _point("toolcalling", 0.37, 8757)]
    latency_only = tradeoff_chart(one_unpriced, latency_label="latency p50", chart_id="t")
    assert not any("USD" in text for text in _texts(latency_only))
    assert _texts(latency_only).count("% of turns passed (95% interval)") == 1
    assert int(_root(latency_only).get("width", "0")) < int(_root(both).get("width", "0"))


def test_each_point_is_named_with_its_figures_even_when_points_coincide() -> None:
    points = [_point("run-a · planner", 0.74, 8617, 0.42), _point("run-b · planner", 0.74, 8617, 0.42)]
    svg = tradeoff_chart(points, latency_label="latency p50", chart_id="t")
    texts = _texts(svg)
    assert "run-a · planner: 74%, 8.62 s, $0.42 / 1,000 turns" in texts
    assert "run-b · planner: 74%, 8.62 s, $0.42 / 1,000 turns" in texts
    for run in ("run-a", "run-b"):
        assert _group(svg, f"t-series-{run}-planner").findall(f".//{SVG}use"), "each point in its own group"
    _assert_no_overlap(svg)


def test_the_interval_is_a_vertical_bar_through_the_point() -> None:
    svg = tradeoff_chart([_point("planner", 0.5, 1000.0)], latency_label="latency p50", chart_id="t")
    group = _group(svg, "t-series-planner")
    x1, y1, x2, y2 = _numbers(_paths(group)[0])
    assert x1 == x2 and y1 != y2, "vertical"
    *caps, point = group.findall(f".//{SVG}use")
    assert sorted(float(cap.get("y", "0")) for cap in caps) == pytest.approx(sorted([y1, y2]), abs=0.1)
    assert float(point.get("x", "0")) == pytest.approx(x1, abs=0.1)
    assert min(y1, y2) < float(point.get("y", "0")) < max(y1, y2)


@pytest.mark.parametrize(("slowest", "scale"), [(9000.0, "linear scale"), (600_000.0, "log scale")])
def test_latency_is_on_a_log_axis_when_the_points_span_twentyfold(slowest: float, scale: str) -> None:
    svg = tradeoff_chart(
        [_point("planner", 0.7, 8617), _point("toolcalling", 0.4, slowest)],
        latency_label="latency p50",
        chart_id="t",
    )
    assert f"latency p50 ({scale})" in _texts(svg)
    _assert_no_overlap(svg)


@pytest.mark.parametrize(("cheapest", "scale"), [(0.1, "log scale"), (0.0, "linear scale")])
def test_cost_is_on_a_log_axis_when_it_spans_twentyfold_unless_a_model_is_free(
    cheapest: float, scale: str
) -> None:
    points = [_point("planner", 0.7, 8617, cheapest), _point("toolcalling", 0.4, 9000, 30.0)]
    svg = tradeoff_chart(points, latency_label="latency p50", chart_id="t")
    assert f"estimated USD per 1,000 turns ({scale})" in _texts(svg)
    _assert_no_overlap(svg)


def test_a_narrow_axis_over_many_decades_labels_every_other_power_of_ten() -> None:
    points = [_point("planner", 0.7, 0.2), _point("toolcalling", 0.4, 5_000_000)]
    svg = tradeoff_chart(points, latency_label="latency p50", chart_id="t")
    labels = _x_ticks(svg, r"[\d.,]+ m?s")
    assert [text for _, text in labels] == ["0.1 ms", "10 ms", "1 s", "100 s", "10,000 s"]
    _assert_no_overlap(svg)


def test_points_that_are_not_finite_are_left_out_and_no_points_draw_a_note() -> None:
    points = [_point("a", NAN, 10.0, 1.0), _point("b", 0.5, INF, 1.0), _point("c", 0.5, 10.0, NAN)]
    svg = tradeoff_chart(points, latency_label="latency", chart_id="t")
    assert re.findall(r'id="(t-series-[^"]+)"', svg) == ["t-series-c"], "and c has no cost panel"
    assert "no point to draw" in _texts(tradeoff_chart([], latency_label="latency", chart_id="t"))


# --- where the time goes ----------------------------------------------------------------------------------


def _fills(svg: str, ident: str) -> list[str]:
    """The fill colour of each part of a bar, in order."""
    paths = _paths(_group(svg, ident))
    return [re.findall(r"fill: (#[0-9a-f]{6})", p.get("style") or "")[0] for p in paths]


def test_a_part_of_the_time_keeps_its_colour_in_every_chart() -> None:
    one = breakdown_chart(
        [BreakdownBar("planner", [("first tokens", 10.0), ("writing", 20.0)])], chart_id="a"
    )
    other = breakdown_chart(
        [BreakdownBar("planner", [("writing", 20.0), ("first tokens", 10.0)])], chart_id="b"
    )
    assert _fills(one, "a-series-planner") == _fills(other, "b-series-planner")[::-1]
    alone = breakdown_chart([BreakdownBar("x", [("queue", 5.0)])], chart_id="q")
    second = breakdown_chart([BreakdownBar("x", [("network", 1.0), ("queue", 5.0)])], chart_id="q")
    assert _fills(alone, "q-series-x")[0] == _fills(second, "q-series-x")[1], "an unusual part too"


def test_a_bar_stacks_its_parts_from_zero_and_names_them_in_a_legend() -> None:
    svg = breakdown_chart([_bar("planner"), _bar("qwen · toolcalling", 4100)], chart_id="b")
    texts = _texts(svg)
    assert {"first tokens", "writing", "operations", "rest"} <= set(texts)
    assert {"planner", "qwen · toolcalling"} <= set(texts)
    assert "median time per turn, by part (linear scale)" in texts
    assert {"2.1 s", "3.4 s", "4.1 s"} <= set(texts), "a part's time written inside it when it fits"
    lefts = [min(_numbers(p)[::2]) for p in _paths(_group(svg, "b-series-planner"))]
    assert lefts == sorted(lefts) and len(set(lefts)) == 4, "parts side by side, in order"
    assert _x_ticks(svg, r"[\d.]+ m?s")[0][1] == "0 ms"


def test_parts_that_are_not_a_time_are_left_out() -> None:
    svg = breakdown_chart(
        [BreakdownBar("planner", [("writing", NAN), ("rest", -1.0), ("operations", 5.0)])], chart_id="b"
    )
    assert len(_paths(_group(svg, "b-series-planner"))) == 1
    assert "no time to draw" in _texts(breakdown_chart([], chart_id="b"))


def test_no_chart_breaks_on_empty_series() -> None:
    for svg in (
        line_chart("t", {"planner": []}, x_label="x", y_label="y"),
        distribution_chart("t", [("planner", "#000000", [])], x_label="x", chart_id="d"),
        breakdown_chart([BreakdownBar("planner", [])], chart_id="b"),
    ):
        assert _root(svg).tag == f"{SVG}svg"
