"""A results file that is cut short, or holds fewer turns than its run planned, is never reported as complete.

``erp-ai report`` reads what is there, says on the terminal and in each report's header what is missing (a
cut last line, the rows read, the planned turns against those read), and refuses to publish it into a
README; a file with no complete record is a one-line error (exit 2).
"""

from __future__ import annotations

from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from benchmarks.results import RunMeta, read_results
from tests.benchmarks.report.sample_results import turn_row, write_results

runner = CliRunner()
MODES = ["planner", "toolcalling"]
TURNS = 3
"""Scenario turns per mode of the run written below: 6 scored turns planned."""


@pytest.fixture
def results_file(tmp_path: Path) -> Path:
    """A whole run's file: the run line, then 3 turns of each of 2 modes."""
    meta = RunMeta(provider="offline", modes=MODES, scenarios=1, turns=TURNS)
    answer = "En 2025 se vendieron ₲850.000.000."
    records = [turn_row(mode, turn=turn, answer=answer) for mode in MODES for turn in range(1, TURNS + 1)]
    return write_results(tmp_path / "run" / "results.jsonl", meta, records)


def cut(path: Path, keep: int) -> Path:
    """A copy of ``path`` cut after ``keep`` bytes, as ``head -c`` would."""
    copy = path.with_name("cut.jsonl")
    copy.write_bytes(path.read_bytes()[:keep])
    return copy


def test_a_whole_file_reads_without_warnings(results_file: Path) -> None:
    results = read_results(results_file)
    assert len(results.rows) == 6 and results.planned_turns == 6
    assert results.read_warnings == [] and not results.incomplete_last_line


def test_a_cut_last_line_is_reported_with_the_rows_read_and_the_planned_turns(results_file: Path) -> None:
    data = results_file.read_bytes()
    last_line_start = data.rstrip(b"\n").rfind(b"\n") + 1
    results = read_results(cut(results_file, last_line_start + 40))

    assert results.incomplete_last_line and len(results.rows) == 5
    assert results.read_warnings == [
        "results file ends in an incomplete line: 5 rows read",
        "the header gives the run's plan, 6 scored turns (3 per mode and repetition); the file holds 5 of "
        "them (planner 3, toolcalling 2), and every figure is computed from those",
    ]


def test_a_cut_inside_a_utf8_character_is_an_incomplete_line_not_an_encoding_error(
    results_file: Path,
) -> None:
    data = results_file.read_bytes()
    inside = data.rindex("₲".encode()) + 1  # between the bytes of one character
    results = read_results(cut(results_file, inside))
    assert results.incomplete_last_line and len(results.rows) == 5


def test_a_line_that_is_not_json_in_the_middle_is_skipped_and_named(results_file: Path) -> None:
    lines = results_file.read_text(encoding="utf-8").splitlines(keepends=True)
    lines[2] = lines[2][:30] + "\n"  # line 3: a torn record, followed by whole ones
    results_file.write_text("".join(lines), encoding="utf-8")
    results = read_results(results_file)
    assert results.skipped_lines == [3] and not results.incomplete_last_line
    assert "lines 3 of the results file are not JSON records and were skipped" in results.read_warnings


def test_the_report_of_a_cut_file_warns_on_the_terminal_and_in_both_headers_but_is_not_published(
    app: typer.Typer, results_file: Path, tmp_path: Path
) -> None:
    partial = cut(results_file, results_file.stat().st_size - 25)
    out = tmp_path / "report"

    result = runner.invoke(app, ["report", str(partial), "--out", str(out)], env={"COLUMNS": "200"})

    assert result.exit_code == 0, result.output
    assert "warning: results file ends in an incomplete line: 5 rows read" in result.output
    markdown = (out / "report.md").read_text(encoding="utf-8").splitlines()
    assert markdown[2].startswith("**Structure run:"), "what the figures measure comes first"
    assert markdown[4].startswith("Provider `offline`") and "3 turns per mode" in markdown[4]
    assert markdown[6] == "> **Warning:** results file ends in an incomplete line: 5 rows read."
    assert markdown[8].startswith("> **Warning:** the header gives the run's plan, 6 scored turns")
    assert "| planner | 3 |" in "\n".join(markdown) and "| toolcalling | 2 |" in "\n".join(markdown)
    html = (out / "report.html").read_text(encoding="utf-8")
    assert "<b>Warning:</b> results file ends in an incomplete line: 5 rows read." in html
    readme = tmp_path / "README.md"
    readme.write_text("# Title\n", encoding="utf-8")
    result = runner.invoke(app, ["report", str(partial), "--readme", str(readme)], env={"COLUMNS": "200"})
    assert result.exit_code == 2 and "incomplete results file" in result.output
    assert readme.read_text(encoding="utf-8") == "# Title\n"


@pytest.mark.parametrize(
    "content", [b"", b"\n\n  \n", b'{"kind": "run", "provi'], ids=["empty", "blank", "cut"]
)
def test_a_file_with_no_complete_record_is_a_one_line_error(
    app: typer.Typer, tmp_path: Path, content: bytes
) -> None:
    path = tmp_path / "results.jsonl"
    path.write_bytes(content)
    result = runner.invoke(app, ["report", str(path)], env={"COLUMNS": "200"})
    assert result.exit_code == 2
    assert result.output.strip().splitlines() == [
        f"Error: {path} holds no complete record: nothing to report"
    ]
    assert not (tmp_path / "report.md").exists()
