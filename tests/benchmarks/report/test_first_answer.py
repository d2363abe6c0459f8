"""Time to the first answer token in every report: p50/p95 beside total latency, measured and simulated, each
labelled; findings compare the modes on it (benchmarks/report/*)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from benchmarks.report import summarize, write_reports
from benchmarks.report.findings import findings
from benchmarks.report.readme import readme_block
from benchmarks.report.tables import LATENCY_CAPTION, interval_rows, summary_rows
from benchmarks.report.terminal import summary_table
from benchmarks.results import RunMeta, TurnRow, read_results
from tests.benchmarks.report.sample_results import turn_row, write_results

MODES = ["planner", "toolcalling"]


def _row(mode: str, turn: int, rep: int = 1, **kw: Any) -> TurnRow:
    return turn_row(mode, turn=turn, repetition=rep, model_calls=2, harness_ms=1.0, **kw)


def _streamed(rep: int = 1, *, profiled: bool = True) -> list[TurnRow]:
    """Ten turns per mode: planner's first token at 10…19 ms measured and 400…850 simulated; tool calling's
    at 20…29 ms and 1,000…1,450; one failed tool-calling turn streamed no answer."""
    rows = []
    for turn in range(1, 11):
        for mode, measured, simulated in (
            ("planner", 9 + turn, 350 + 50 * turn),
            ("toolcalling", 19 + turn, 950 + 50 * turn),
        ):
            failed = mode == "toolcalling" and turn == 10
            rows.append(
                _row(
                    mode,
                    turn,
                    rep,
                    model_ms=measured + 5,
                    total_ms=measured + 6,
                    simulated_model_ms=simulated * 2 if profiled else None,
                    first_answer_ms=None if failed else float(measured),
                    simulated_first_answer_ms=float(simulated) if profiled and not failed else None,
                    failed=failed,
                    failure="provider" if failed else None,
                )
            )
    return rows


def test_p50_and_p95_are_computed_over_the_turns_that_streamed_an_answer() -> None:
    summary = summarize(_streamed(), MODES)
    planner, tools = summary.modes

    assert (planner.first_answer_p50, planner.first_answer_p95) == pytest.approx((14.5, 18.55))
    assert (planner.simulated_first_answer_p50, planner.simulated_first_answer_p95) == pytest.approx(
        (625, 827.5)
    )
    assert tools.first_answer_p50 == pytest.approx(24.0)  # nine turns: the failed one streamed nothing
    assert tools.simulated_first_answer_p95 == pytest.approx(1380.0)


def test_without_streamed_rows_there_is_no_first_answer_figure_or_column() -> None:
    old = [
        r.model_copy(update={"first_answer_ms": None, "simulated_first_answer_ms": None}) for r in _streamed()
    ]
    summary = summarize(old, MODES)

    assert all(m.first_answer_p50 is None and m.simulated_first_answer_p95 is None for m in summary.modes)
    header, _ = summary_rows(summary)
    assert not any("first answer" in column for column in header)
    assert not any("first answer" in sentence for sentence in findings(summary))


def test_the_summary_table_puts_first_answer_beside_latency_measured_then_simulated() -> None:
    header, rows = summary_rows(summarize(_streamed(), MODES))

    start = header.index("latency p50 / p95 ms")
    assert header[start : start + 4] == [
        "latency p50 / p95 ms",
        "first answer p50 / p95 ms",
        "simulated p50 / p95 ms",
        "simulated first answer p50 / p95 ms",
    ]
    planner = dict(zip(header, rows[0], strict=True))
    assert planner["first answer p50 / p95 ms"] == "14.5 / 18.6"
    assert planner["simulated first answer p50 / p95 ms"] == "625.0 / 827.5"


def test_a_run_without_a_profile_shows_measured_first_answer_only() -> None:
    header, _ = summary_rows(summarize(_streamed(profiled=False), MODES))

    assert "first answer p50 / p95 ms" in header
    assert "simulated first answer p50 / p95 ms" not in header


def test_findings_compare_the_modes_on_time_to_first_answer_saying_which_figure_is_which() -> None:
    text = findings(summarize(_streamed(), MODES))

    [compare] = [s for s in text if s.startswith("planner: ")]
    assert (
        "first answer token 48% sooner simulated (625 vs 1,200 ms p50), "
        "40% sooner measured (14.5 vs 24 ms p50)" in compare
    )
    [figures] = [s for s in text if s.startswith("Time to the first answer token")]
    assert figures == (
        "Time to the first answer token, p50 / p95: planner 625 / 828 ms simulated, 14.5 / 18.6 ms measured; "
        "toolcalling 1,200 / 1,380 ms simulated, 24 / 27.6 ms measured."
    )
    targets = findings(summarize(_streamed(), MODES), targets=True)
    assert any("planner time to first answer at most toolcalling's: target met" in s for s in targets)


def test_repetitions_give_intervals_of_the_first_answer_medians() -> None:
    summary = summarize(_streamed(1) + _streamed(2), MODES)

    planner = summary.modes[0]
    assert planner.intervals["first_answer_p50"].contains(planner.first_answer_p50 or 0)
    assert planner.intervals["simulated_first_answer_p50"].contains(planner.simulated_first_answer_p50 or 0)
    table = interval_rows(summary)
    assert table is not None and {"first answer p50 ms", "simulated first answer p50 ms"} <= set(table[0])


@pytest.fixture
def streamed_results(tmp_path: Path) -> Path:
    meta = RunMeta(provider="offline", latency_profile="gpu-8b", modes=MODES, scenarios=1, turns=10)
    return write_results(tmp_path / "results.jsonl", meta, _streamed())


def test_markdown_html_and_readme_show_the_columns_and_say_what_they_measure(streamed_results: Path) -> None:
    files = write_reports(streamed_results)
    markdown = files.markdown.read_text(encoding="utf-8")
    html = files.html.read_text(encoding="utf-8")
    results = read_results(streamed_results)
    block = readme_block(results, summarize(results.rows, MODES))

    for text in (markdown, block):
        assert "| simulated first answer p50 / p95 ms |" in text and LATENCY_CAPTION in text
    assert "simulated first answer p50 / p95 ms" in html and "measured on this machine" in html
    chart = html.split('id="chart-first-answer-distribution"')[1].split("</svg>")[0]
    assert "Time to the first answer token, simulated (gpu-8b)" in chart, "the profile's clock, said"
    assert "p50 625 ms · p95 828 ms" in chart and "p50 1.2 s · p95 1.38 s" in chart


def test_the_terminal_table_has_first_answer_columns() -> None:
    summary = summarize(_streamed(), MODES)
    console = Console(width=120, record=True)
    console.print(summary_table(summary, RunMeta(latency_profile="gpu-8b", modes=MODES)))
    text = console.export_text()

    assert "1st" in text and "sim1st" in text
    assert "14.5" in text and "625" in text
