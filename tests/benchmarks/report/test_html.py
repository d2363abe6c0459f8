"""report.html reads as one decision document: its sections in order, each figure shown once, accuracy against
latency and cost for a real model only, where a turn's time goes, and every tag written by a template
(benchmarks/report/html.py, html_parts.py, html_decision.py, html_figures.py, templates/*.html.j2)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

import benchmarks.report
from benchmarks.report import render_combined_html, write_reports
from benchmarks.report.runs import combined_runs
from benchmarks.results import RunMeta, TurnRow, read_results
from shared.llm.usage import ModelCall
from tests.benchmarks.report.sample_results import MODES, rows, write_results

REAL_META = RunMeta(provider="ollama", model="llama3.1:8b", modes=MODES, scenarios=1, turns=12)
PRICED_META = RunMeta(provider="openai", model="gpt-4o-mini", modes=MODES, scenarios=1, turns=12)
STAND_IN_META = RunMeta(provider="offline", modes=MODES, scenarios=1, turns=12)


def _timed(row: TurnRow) -> TurnRow:
    """``row`` with its model calls recorded (call 1 waits 300 ms for its first token of 1,000 ms) and its
    first answer token at 1,200 ms."""
    calls = [ModelCall(role="plan", ms=1000, first_token_ms=300, input_tokens=row.input_tokens)]
    calls += [ModelCall(role="answer", ms=500, first_token_ms=100, output_tokens=50)] * (row.model_calls - 1)
    return row.model_copy(
        update={"calls": calls, "model_ms": 1500.0, "first_answer_ms": 1200.0, "operations_ms": 0.3}
    )


def _page(tmp_path: Path, meta: RunMeta, timed: bool = True) -> str:
    records = [_timed(row) for row in rows()] if timed else rows()
    path = write_results(tmp_path / meta.provider / "results.jsonl", meta, records)
    return write_reports(path).html.read_text(encoding="utf-8")


def _chart_ids(html: str) -> list[str]:
    return re.findall(r'<svg [^>]*\bid="([^"]+)"', html)


def _section(html: str, ident: str) -> str:
    return html.split(f'<section id="{ident}">')[1].split("</section>")[0]


def test_a_real_runs_page_reads_as_one_decision_document_in_order(tmp_path: Path) -> None:
    html = _page(tmp_path, REAL_META)
    order = [
        "verdict",
        "tradeoff",
        "categories",
        "time",
        "failures-section",
        "summary",
        "paired",
        "growth",
        "pass-k",
        "cost",
        "turn-by-turn",
    ]
    found = re.findall(r'<section (?:class="[^"]*" )?id="([^"]+)"', html)
    assert found == order
    toc = re.findall(r'href="#([^"]+)"', html.split('<nav class="toc">')[1].split("</nav>")[0])
    assert toc == [i.replace("-section", "") for i in order], "the contents list only the sections present"
    assert "findings-section" not in html and 'id="per-mode"' not in html


def test_each_figure_is_shown_once_and_no_card_repeats_the_tables(tmp_path: Path) -> None:
    html = _page(tmp_path, REAL_META)
    assert _chart_ids(html) == [
        "chart-tradeoff",
        "chart-latency-distribution",
        "chart-first-answer-distribution",
        "chart-time-breakdown",
        "chart-growth",
    ]
    assert 'class="card' not in html and "bar-chart" not in html and 'id="mode-legend"' not in html
    # tool calling passed 11 of 12 turns: the verdict, the summary table and the paired test say so
    verdict = html.split('id="verdict-table"')[1].split("</table>")[0]
    summary = _section(html, "summary")
    assert ">91.7%<" in verdict and "91.7% (64.6–98.5)" in summary.split('<table class="summary"')[1]


def test_accuracy_against_latency_and_cost_is_drawn_for_a_real_model_only(tmp_path: Path) -> None:
    real = _page(tmp_path, REAL_META)
    tradeoff = _section(real, "tradeoff")
    assert all(f'id="chart-tradeoff-series-{mode}"' in tradeoff for mode in MODES), "a point per mode"
    assert "time to the first answer token, p50, measured" in tradeoff, "the latency axis says which"
    assert "USD per 1,000 turns" not in tradeoff, "a local model has no price: no cost panel"
    priced = _section(_page(tmp_path, PRICED_META), "tradeoff")
    assert "estimated USD per 1,000 turns" in priced
    untimed = _section(_page(tmp_path / "old", REAL_META, timed=False), "tradeoff")
    assert "latency p50, measured" in untimed, "without a first answer token, the turn's latency"

    stand_in = _page(tmp_path, STAND_IN_META)
    assert 'id="tradeoff"' not in stand_in and 'id="chart-tradeoff"' not in stand_in
    assert 'href="#tradeoff"' not in stand_in


def test_where_the_time_goes_draws_the_breakdown_tables_medians(tmp_path: Path) -> None:
    time = _section(_page(tmp_path, REAL_META), "time")
    assert time.index("chart-latency-distribution") < time.index('id="chart-time-breakdown"')
    assert time.index('id="chart-time-breakdown"') < time.index('<table class="time-breakdown"')
    assert time.index('<table class="time-breakdown"') < time.index('<table class="model-calls"')
    assert all(f'id="chart-time-breakdown-series-{mode}"' in time for mode in MODES)
    chart = time.split('id="chart-time-breakdown"')[1].split("</svg>")[0]
    assert all(part in chart for part in ("first tokens", "writing", "operations", "rest"))
    planner = time.split('<table class="time-breakdown"')[1].split("planner</td>")[1].split("</tr>")[0]
    assert re.findall(r'class="num">([^<]+)<', planner)[2:4] == ["400", "1,100"], "first tokens, writing"
    untimed = _page(tmp_path / "old", REAL_META, timed=False)
    assert "chart-time-breakdown" not in untimed and '<table class="time-breakdown"' not in untimed


def test_a_stand_in_run_shows_its_structure_figures_once(results_path: Path) -> None:
    html = write_reports(results_path).html.read_text(encoding="utf-8")
    assert _chart_ids(html) == ["chart-latency-distribution", "chart-growth"], "no first answer was recorded"
    categories = _section(html, "categories").split("<table")[1]
    assert "calls/turn" in categories and "%" not in categories, "calls per category, no accuracy"


def test_several_runs_get_one_trade_off_chart_and_the_comparison_section(tmp_path: Path) -> None:
    real = write_results(tmp_path / "real" / "results.jsonl", REAL_META, [_timed(r) for r in rows()])
    stand_in = write_results(tmp_path / "offline" / "results.jsonl", STAND_IN_META, rows())
    runs = combined_runs([(path, read_results(path)) for path in (real, stand_in)])
    fragment = '<section id="comparison"><h2>Comparison of <b>two</b> runs</h2></section>'

    html = render_combined_html(runs, comparison=fragment)

    tradeoff = _section(html, "tradeoff")
    assert all(f'id="chart-tradeoff-series-real-{mode}"' in tradeoff for mode in MODES), "run · mode"
    assert "offline" not in tradeoff, "a structure run's points are left out"
    assert html.index('id="failures-section"') < html.index(fragment) < html.index('id="run-1-run"')
    toc = html.split('<nav class="toc">')[1].split("</nav>")[0]
    assert '<a href="#comparison">Comparison</a>' in toc and 'href="#tradeoff"' in toc
    assert 'id="comparison"' not in render_combined_html(runs)
    assert 'id="run-1-chart-time-breakdown"' in html and "run-2-chart-time-breakdown" not in html

    offline_only = render_combined_html(runs[1:])
    assert 'id="tradeoff"' not in offline_only and 'href="#tradeoff"' not in offline_only


HTML_TAG = re.compile(
    r"<(?:!doctype|html|head|body|style|header|nav|section|div|p|span|a|b|br|code|pre|details|summary|"
    r"table|thead|tbody|tr|th|td|col|colgroup|ul|ol|li|dl|dt|dd|h[1-6])[\s>/]",
    re.IGNORECASE,
)


def _strings_built(path: Path) -> list[str]:
    """The string literals of a module that are not docstrings."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
        and node.body
        and isinstance(node.body[0], ast.Expr)
    }
    return [
        node.value
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings
    ]


@pytest.mark.parametrize(
    "module",
    sorted(Path(benchmarks.report.__file__).parent.rglob("*.py")),
    ids=lambda path: path.name,
)
def test_no_python_module_of_the_reports_writes_html_tags(module: Path) -> None:
    assert [s for s in _strings_built(module) if HTML_TAG.search(s)] == []


def test_the_tag_check_finds_a_tag_built_in_python(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text('"""Writes ``<p>``."""\n\ndef f(x):\n    return f\'<td class="num">{x}</td>\'\n')
    assert [s for s in _strings_built(module) if HTML_TAG.search(s)] == ['<td class="num">']
