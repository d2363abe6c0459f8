"""The parts of the first screen: category coverage (benchmarks/report/readme.py), the distribution chart
(charts/), failure groups with one example each (failure_groups.py) and the links and filters that lead from a
figure to its turns (html_decision.py, html_parts.py)."""

from __future__ import annotations

import re
from pathlib import Path

from benchmarks.report import write_reports
from benchmarks.report.charts import distribution_chart, ms_tick
from benchmarks.report.failure_groups import WRONG_ANSWER, example_text, failure_groups
from benchmarks.report.readme import category_coverage, coverage_text
from benchmarks.results import RunMeta
from benchmarks.scenario import Scenario, ScenarioTurn
from tests.benchmarks.report.sample_results import MODES, rows, turn_row, write_results


def _scenario(ident: str, category: str, turns: int) -> Scenario:
    return Scenario(id=ident, category=category, turns=[ScenarioTurn(user=f"q{i}") for i in range(turns)])


def test_coverage_counts_the_suite_turns_each_category_ran_and_names_the_missing_ones() -> None:
    suite = [_scenario("a", "articulo", 3), _scenario("b", "small_talk", 2), _scenario("c", "follow_up", 4)]
    ran = [
        turn_row(mode, category="articulo", scenario="a", turn=turn, repetition=rep)
        for mode in ("planner", "toolcalling")
        for turn in (1, 2)
        for rep in (1, 2)
    ] + [turn_row("planner", category="follow_up", scenario="c", turn=1)]
    assert [(c.category, c.run_turns, c.suite_turns) for c in category_coverage(ran, suite)] == [
        ("articulo", 2, 3),
        ("follow_up", 1, 4),
        ("small_talk", 0, 2),
    ]
    assert coverage_text(ran, suite) == (
        "Scenario categories covered (turns run of the packaged scenarios', tuning suite and held-out "
        "questions together): articulo 2/3, follow_up 1/4; "
        "not covered: small_talk."
    )


def test_the_distribution_chart_has_a_row_per_series_and_a_log_axis_for_wide_spans() -> None:
    wide = distribution_chart(
        "t", [("planner", "#000", [5.0, 9.0, 40.0]), ("toolcalling", "#111", [900.0, 150_000.0])],
        x_label="ms", chart_id="c",
    )  # fmt: skip
    assert 'id="c-series-planner"' in wide and 'id="c-series-toolcalling"' in wide
    assert "(log scale)" in wide and ">100 ms<" in wide and ">100 s<" in wide
    narrow = distribution_chart("t", [("planner", "#000", [10.0, 20.0, 30.0])], x_label="ms", chart_id="d")
    assert "(linear scale)" in narrow and ">0 ms<" in narrow
    assert "p50 20 ms · p95 29 ms" in narrow
    assert [ms_tick(v) for v in (0.25, 999.4, 1500.0, 150_000.0)] == ["0.25 ms", "999 ms", "1.5 s", "150 s"]


def test_failed_turns_are_grouped_by_kind_with_one_example_each() -> None:
    records = rows()
    records[5] = records[5].model_copy(
        update={"score": records[5].score.model_copy(update={"passed": False})}
    )
    groups = failure_groups(records)
    assert [(g.mode, g.kind, len(g.turns)) for g in groups] == [
        ("planner", WRONG_ANSWER, 1),
        ("toolcalling", "provider", 1),
    ]
    example = example_text(groups[1].example)
    assert example.startswith("conversacion-larga · turn 3: “¿Cuánto vendimos en 2003? <b>” → “(no answer)”")
    assert example.endswith(": the turn failed")


def test_figures_link_to_the_turns_they_count_and_the_turn_table_filters(tmp_path: Path) -> None:
    path = write_results(
        tmp_path / "results.jsonl", RunMeta(provider="ollama", modes=MODES, turns=12), rows()
    )
    html = write_reports(path).html.read_text(encoding="utf-8")
    ids = set(re.findall(r'\sid="([^"]+)"', html))
    links = set(re.findall(r'href="#([^"]+)"', html))
    assert links <= ids, sorted(links - ids)
    failures = html.split('id="failures-section"')[1].split("</section>")[0]
    assert 'href="#turn-conversacion-larga-3-c1"' in failures, "the example links to tool calling's cell"
    assert "toolcalling · provider</span> (1 turn). Example: conversacion-larga · turn 3" in failures
    verdict = html.split('id="verdict-table"')[1].split("</table>")[0]
    assert 'href="#turns-fail-c1"' in verdict and 'href="#failures"' in verdict
    assert 'href="#category-long_conversation"' in html.split('id="categories"')[1]
    row = re.search(r'<tr id="turn-conversacion-larga-3" class="([^"]+)"', html)
    assert row is not None and row.group(1).split() == ["ok-c0", "ok-c2"], "failed only in column 1"
    assert 'class="filter-anchor fail-c1" id="turns-fail-c1"' in html
    assert ".filter-anchor.fail-c1:target~table.turns tr.ok-c1{display:none}" in html
