"""The tuning suite and the held-out questions side by side, and a verdict that rests on the held-out set
(:mod:`benchmarks.report.splits`), in report.md and the README's real-model block; the failure table counts
the answers refused for claiming an action."""

from __future__ import annotations

import io

from rich.console import Console

from benchmarks.report.markdown import render_markdown
from benchmarks.report.readme import readme_block
from benchmarks.report.runs import regime_of, summarize_run
from benchmarks.report.splits import HELDOUT_PREFIX, decision, split_table
from benchmarks.report.terminal import print_summary
from benchmarks.results import RunMeta, RunResults, TurnRow
from tests.benchmarks.report.sample_results import turn_row

REAL = RunMeta(provider="openai", model="qwen-test", modes=["planner", "toolcalling"])


def _rows(split: str, planner_passes: int, toolcalling_passes: int, turns: int = 10) -> list[TurnRow]:
    return [
        turn_row(mode, passed=turn < passes, scenario=f"{split}-{turn}", split=split, why="wrong")
        for turn in range(turns)
        for mode, passes in (("planner", planner_passes), ("toolcalling", toolcalling_passes))
    ]


def _results(*parts: list[TurnRow]) -> RunResults:
    return RunResults(meta=REAL, rows=[row for part in parts for row in part])


def test_a_run_with_both_sets_shows_each_modes_accuracy_on_each() -> None:
    results = _results(_rows("suite", 9, 3), _rows("heldout", 6, 4))
    splits = split_table(results)
    assert splits is not None
    header, rows = splits
    assert header == ["mode", "suite accuracy", "held-out accuracy", "held-out − suite"]
    assert [row[0] for row in rows] == ["planner", "toolcalling"]
    assert rows[0][1].startswith("90.0%") and rows[0][2].startswith("60.0%") and rows[0][3] == "-30.0 points"
    assert rows[1][3] == "+10.0 points"


def test_the_verdict_rests_on_the_heldout_questions_and_keeps_the_suites_test_among_its_details() -> None:
    # On the suite planner wins 10 to 0; on the held-out questions the modes tie.
    results = _results(_rows("suite", 10, 0), _rows("heldout", 5, 5))
    verdict = decision(results, summarize_run(results), regime_of(REAL), REAL.model)
    assert verdict.leads and all(lead.startswith(HELDOUT_PREFIX) for lead in verdict.leads)
    assert "planner is the better choice" not in " ".join(verdict.leads)
    assert any(detail.startswith("tuning suite: Accuracy on 10 paired turns") for detail in verdict.details)


def test_a_run_of_one_set_has_no_split_table_and_an_unprefixed_verdict() -> None:
    results = _results(_rows("suite", 9, 3))
    assert split_table(results) is None
    verdict = decision(results, summarize_run(results), regime_of(REAL), REAL.model)
    assert not any(lead.startswith(HELDOUT_PREFIX) for lead in verdict.leads)


def test_report_md_and_the_readme_block_show_both_sets() -> None:
    results = _results(_rows("suite", 9, 3), _rows("heldout", 6, 4))
    summary = summarize_run(results)
    for text in (render_markdown(results, summary), readme_block(results, summary)):
        assert "| mode | suite accuracy | held-out accuracy | held-out − suite |" in text
        assert HELDOUT_PREFIX in text


def test_the_failure_table_counts_the_answers_refused_for_a_claimed_action() -> None:
    claimed = turn_row(
        "planner",
        passed=False,
        why="failed",
        failed=True,
        failure="ungrounded",
        claimed_actions=["Se envió."],
    )
    results = _results(
        [claimed, turn_row("toolcalling", passed=False, why="failed", failed=True, failure="ungrounded")]
    )
    text = render_markdown(results, summarize_run(results))
    assert "| ungrounded | 1 | 1 |" in text
    assert "| … of which an action claimed | 1 | 0 |" in text


def test_the_terminal_states_the_verdict_on_the_heldout_questions_and_a_stand_in_states_none() -> None:
    results = _results(_rows("suite", 10, 0), _rows("heldout", 5, 5))
    for meta, says in ((REAL, True), (REAL.model_copy(update={"provider": "offline"}), False)):
        out = io.StringIO()
        run = results.model_copy(update={"meta": meta})
        print_summary(Console(file=out, width=300, force_terminal=False), summarize_run(run), meta, run)
        verdicts = [line for line in out.getvalue().splitlines() if line.startswith("Verdict: ")]
        assert bool(verdicts) is says
        assert all(line.startswith(f"Verdict: {HELDOUT_PREFIX}") for line in verdicts)
