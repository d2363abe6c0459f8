"""Reports of a run with several targets (the model matrix) and the valid-plan rate, from rows built here
(benchmarks/report/*, benchmarks/cost.py)."""

from __future__ import annotations

from typing import Any

import pytest
from rich.console import Console

from benchmarks.cost import estimate_costs
from benchmarks.report import print_summary, render_html, render_markdown, summarize, summarize_run
from benchmarks.report.findings import findings, headline
from benchmarks.report.matrix_table import matrix_grids
from benchmarks.report.tables import summary_rows, valid_plan_cell
from benchmarks.results import RunMeta, RunResults, TurnRow
from benchmarks.targets import parse_targets
from tests.benchmarks.report.sample_results import turn_row

MODES = ["planner", "toolcalling"]


def _row(target: str, mode: str, turn: int, passed: bool = True, **values: Any) -> TurnRow:
    figures: dict[str, Any] = {"model_calls": 2, "input_tokens": 1000, "output_tokens": 100, **values}
    return turn_row(
        mode, passed=passed, why="answer lacks the total", target=target, scenario=f"s{turn}", **figures
    )


def _matrix_run() -> RunResults:
    """Target a: the planner passes every turn, tool calling fails 8 of 10; target b: the other way round.
    Pooled over targets the two modes would pass the same number of turns."""
    rows = []
    for turn in range(1, 11):
        rows.append(_row("a", "planner", turn))
        rows.append(_row("a", "toolcalling", turn, passed=turn > 8, model_calls=3))
        rows.append(_row("b", "planner", turn, passed=turn > 8))
        rows.append(_row("b", "toolcalling", turn, model_calls=3))
    meta = RunMeta(
        targets=parse_targets(["a=openai:gpt-4o-mini", "b=offline"]),
        provider="openai",
        model="gpt-4o-mini",
        modes=MODES,
        scenarios=10,
        turns=10,
        prompt_cache=True,
    )
    return RunResults(meta=meta, rows=rows)


def test_modes_are_compared_within_each_target_never_pooled() -> None:
    summary = summarize_run(_matrix_run())
    assert summary.matrix and summary.modes == [] and summary.paired == []
    a, b = summary.targets
    assert (a.target.name, b.target.name) == ("a", "b")
    [paired_a] = a.summary.paired
    [paired_b] = b.summary.paired
    assert paired_a.difference == pytest.approx(0.8) and paired_a.established
    assert paired_b.difference == pytest.approx(-0.8) and paired_b.established
    assert paired_a.pairs == paired_b.pairs == 10, "only the target's own turns are paired"
    assert [name for name, _ in summary.cells()] == ["a", "a", "b", "b"]


def test_the_grid_has_targets_as_rows_and_modes_as_columns() -> None:
    run = _matrix_run()
    summary = summarize_run(run)
    grids = {title: (header, rows) for title, header, rows in matrix_grids(summary, estimate_costs(run))}
    header, rows = grids["Accuracy (95% CI)"]
    assert header == ["target", "planner", "toolcalling"]
    assert rows[0][0] == "a" and rows[0][1].startswith("100.0% (") and rows[0][2].startswith("20.0% (")
    assert rows[1][0] == "b" and rows[1][1].startswith("20.0% (") and rows[1][2].startswith("100.0% (")
    assert grids["Model calls per turn (mean)"][1] == [["a", "2.00", "3.00"], ["b", "2.00", "3.00"]]
    assert "Cached share of input" not in grids and "Latency p50 ms, simulated" not in grids, "no such figure"
    assert grids["Valid plans"][1] == [["a", "n/a", "n/a"], ["b", "n/a", "n/a"]]


def test_each_target_is_priced_at_its_own_model() -> None:
    run = _matrix_run()
    costs = estimate_costs(run)
    assert [(c.target, c.model, c.local) for c in costs] == [
        ("a", "gpt-4o-mini", False),
        ("b", "offline-sales", True),
    ]
    usd = {title: rows for title, _, rows in matrix_grids(summarize_run(run), costs)}["USD per 1,000 turns"]
    # a: 1000 input, 100 output tokens per turn at 0.15 / 0.60 USD per million → 0.21 per 1,000 turns
    assert usd == [["a", "0.21", "0.21"], ["b", "0.00", "0.00"]]
    text = render_markdown(run, summarize_run(run), costs)
    assert "Prices: a: gpt-4o-mini: USD per million tokens from" in text and "b: local model" in text


def test_the_markdown_report_shows_the_grid_and_each_targets_findings() -> None:
    run = _matrix_run()
    text = render_markdown(run, summarize_run(run))
    assert "Targets `a` (openai gpt-4o-mini), `b` (offline offline-sales)" in text
    assert "prefix cache modelled: yes" in text
    assert "Conversation state: every mode stores the state the ERP derives" in text
    assert text.index("## Summary") < text.index("### Target `a`") < text.index("## Model matrix")
    assert "### Target `a` (openai gpt-4o-mini)" in text
    section_a = text.split("### Target `a`")[1].split("### Target `b`")[0]
    assert "planner is more accurate than toolcalling by 80.0 points" in section_a
    section_b = text.split("### Target `b`")[1].split("### Every target and mode")[0]
    assert "toolcalling is more accurate than planner by 80.0 points" in section_b
    assert "| target | mode | turns | accuracy (95% CI) |" in text
    assert "|---|---|--:|" in text, "target and mode left-aligned, figures right"
    assert "| a | planner vs toolcalling | 10 |" in text
    failing = text.split("## Failing turns")[1]
    assert "| target | mode | scenario |" in failing and "| a | toolcalling | s1 |" in failing


def test_the_html_report_groups_by_target() -> None:
    run = _matrix_run()
    html = render_html(run, summarize_run(run))
    assert '<section id="matrix"><h2>Model matrix</h2>' in html and 'href="#matrix"' in html
    assert 'id="target-a"' in html and 'id="target-b"' in html
    tradeoff = html.split('id="chart-tradeoff"')[1].split("</svg>")[0]
    assert 'id="chart-tradeoff-series-a-planner"' in tradeoff and "a · toolcalling" in tradeoff
    assert "b · " not in tradeoff, "target b is the offline stand-in: its accuracy is no result"
    assert 'id="state-policy"' in html and "prefix cache modelled: yes" in html
    turns = html.split('id="turn-by-turn"')[1]
    assert turns.count("<th>a · ") == 2 and turns.count("<th>b · ") == 2


def test_the_terminal_names_the_target_of_each_row_and_finding() -> None:
    run = _matrix_run()
    console = Console(record=True, width=200)
    print_summary(console, summarize_run(run), run.meta)
    text = console.export_text()
    assert "erp-ai bench · 2 targets" in text
    assert any(line.split()[:2] == ["b", "toolcalling"] for line in text.splitlines())
    assert "Target a: planner: 2.0 calls/turn vs 3.0 for toolcalling" in " ".join(text.split())
    assert "Target b: Per turn: planner 2.00 model calls" in text
    top = headline(summarize_run(run))
    assert top is not None and top.startswith(
        "Model matrix, 2 targets × 2 modes, per turn: a: planner (2.00 calls"
    )


def test_valid_plan_rate_counts_the_turns_that_say() -> None:
    rows = [
        _row("default", "planner", 1, plan_valid=True),
        _row("default", "planner", 2, plan_valid=True),
        _row("default", "planner", 3, plan_valid=False),
        _row("default", "planner", 4, plan_valid=None),  # no model output was read
        _row("default", "toolcalling", 1),
    ]
    summary = summarize(rows, MODES)
    planner, tools = summary.modes
    assert (planner.plans_valid, planner.plans_checked) == (2, 3)
    assert planner.valid_plan_rate == pytest.approx(2 / 3)
    assert valid_plan_cell(planner) == "66.7% (2/3)"
    assert tools.valid_plan_rate is None and valid_plan_cell(tools) == "n/a"
    header, table = summary_rows(summary)
    column = header.index("valid plans")
    assert [row[column] for row in table] == ["66.7% (2/3)", "n/a"]
    assert "Valid-plan rate (requests for operations valid as written): planner 66.7% (2/3)." in findings(
        summary
    )


def test_without_recorded_plan_validity_there_is_no_valid_plan_finding() -> None:
    summary = summarize([_row("default", "planner", 1)], MODES)
    assert not any("Valid-plan" in sentence for sentence in findings(summary))


def test_one_target_keeps_the_one_target_report() -> None:
    rows = [r for r in _matrix_run().rows if r.target == "a"]
    meta = RunMeta(targets=parse_targets(["a=offline"]), modes=MODES, prompt_cache=False)
    run = RunResults(meta=meta, rows=rows)
    summary = summarize_run(run)
    assert not summary.matrix and [m.mode for m in summary.modes] == MODES
    text = render_markdown(run, summary)
    assert "## Model matrix" not in text and "| mode | turns |" in text
    assert "Provider `offline`, prefix cache modelled: no;" in text
