"""The terminal summary: every cell whole however narrow the pipe, and no accuracy for a stand-in."""

from __future__ import annotations

import io
import itertools
from pathlib import Path

from rich.console import Console

from benchmarks.report import print_summary, summarize
from benchmarks.results import RunMeta
from tests.benchmarks.report.sample_results import MODES, rows, write_results


def printed(meta: RunMeta, width: int) -> str:
    """What ``print_summary`` writes to a pipe (not a terminal) ``width`` columns wide."""
    out = io.StringIO()
    print_summary(Console(file=out, width=width, force_terminal=False), summarize(rows(), MODES), meta)
    return out.getvalue()


def test_a_stand_in_run_shows_no_accuracy_only_whether_the_pipeline_did_what_it_should() -> None:
    text = printed(RunMeta(modes=MODES), width=200)

    shown = text.replace("not a language model's accuracy", "")  # the notice says what is not measured
    assert " acc " not in shown and "accura" not in shown and "passed" not in shown
    assert "pipeline check: 35 of 36 turns as the stand-in should" in text


def test_a_real_model_run_shows_its_accuracy() -> None:
    text = printed(RunMeta(modes=MODES, provider="openai", model="m"), width=200)

    assert " acc " in text and "pipeline check" not in text


def test_a_narrow_pipe_gets_every_cell_whole() -> None:
    text = printed(RunMeta(modes=MODES, provider="openai", model="m"), width=60)

    assert "…" not in text
    lines = text.splitlines()
    rule = next(i for i, line in enumerate(lines) if "───" in line)  # under the header; rows until a blank
    rows = [line.split() for line in itertools.takewhile(str.strip, lines[rule + 1 :])]
    assert [row[0] for row in rows] == MODES, "one line per mode: no name or figure folded onto another"
    assert {len(row) for row in rows} == {len(lines[rule - 1].split())}, "every row holds every column"


def test_a_stand_in_runs_report_md_shows_no_accuracy_either(tmp_path: Path) -> None:
    from benchmarks.report import write_reports

    offline = write_results(tmp_path / "results.jsonl", RunMeta(modes=MODES), rows())
    markdown = write_reports(offline).markdown.read_text(encoding="utf-8")

    for section in ("## Paired comparison", "## pass^k", "## Intervals"):
        assert section not in markdown
    categories = markdown.split("## Results per category")[1].split("\n## ")[0]
    assert "| long_conversation | 2.0 calls (12) | 3.0 calls (12) | 3.0 calls (12) |" in categories
    summary = markdown.split("## Summary")[1].split("\n## ")[0]
    [header] = [line for line in summary.splitlines() if line.startswith("| mode |")]
    assert "accuracy" not in header  # the summary table: no accuracy column
    assert "Pipeline check: 35 of 36 turns as the stand-in should." in markdown


def test_a_stand_in_run_over_both_sets_states_no_accuracy_among_its_verdicts_figures(tmp_path: Path) -> None:
    from benchmarks.report import write_reports

    both = [r.model_copy(update={"split": "heldout"}) if r.turn > 6 else r for r in rows()]
    files = write_reports(write_results(tmp_path / "results.jsonl", RunMeta(modes=MODES), both))

    for text in (files.markdown.read_text(encoding="utf-8"), files.html.read_text(encoding="utf-8")):
        assert "tuning suite: Accuracy" not in text and "structure only" in text
