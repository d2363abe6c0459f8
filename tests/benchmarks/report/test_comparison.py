"""The comparison of two runs as a section of the combined report (benchmarks/report/comparison.py and its
templates): the same content in report.md and report.html, every field from a results file inert, and the
section only in a report of exactly two runs."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from benchmarks.cli.app import app
from benchmarks.compare import Comparison, compare_results
from benchmarks.report.comparison import render_comparison_html, render_comparison_markdown
from benchmarks.results import RunMeta, RunResults, TurnRow
from tests.benchmarks.report.sample_results import MODES, rows, turn_row, write_results

runner = CliRunner()

HOSTILE = "<img src=x onerror=alert(1)>|<!--`**x**`\n# hacked"
"""A run label, path, model name and score detail no report may render as markup, a table or a heading."""


def _results(failing: set[int], model: str = "m") -> RunResults:
    """Five turns per mode; tool calling fails ``failing``, each saying :data:`HOSTILE`."""
    records = [
        turn_row(
            mode, passed=mode == "planner" or turn not in failing, why=HOSTILE, turn=turn, scenario=HOSTILE
        )
        for mode in ("planner", "toolcalling")
        for turn in range(1, 6)
    ]
    return RunResults(
        meta=RunMeta(provider="openai", model=model, modes=["planner", "toolcalling"]), rows=records
    )


@pytest.fixture
def hostile() -> Comparison:
    model = HOSTILE.replace("\n", " ")  # a run line holds one line
    return compare_results(
        _results(set()),
        _results({2, 3}, model=model),
        path_a=Path(HOSTILE) / "results.jsonl",
        path_b=Path("b") / "results.jsonl",
        labels=(HOSTILE, "after"),
    )


def test_hostile_labels_paths_models_and_details_come_out_inert_in_markdown(hostile: Comparison) -> None:
    text = render_comparison_markdown(hostile)

    assert "<img" not in text and "<!--" not in text and "&lt;img src=x onerror=alert(1)>" in text
    assert not any(line.startswith("# hacked") for line in text.splitlines()), "no field starts a line"
    assert text.startswith(
        "## Changes from &lt;img src=x onerror=alert(1)>\\|&lt;!--`**x**` # hacked to after\n"
    )
    flips = [line for line in text.splitlines() if line.startswith("| fails |")]
    unescaped = [len(re.findall(r"(?<!\\)\|", line)) for line in flips]
    assert unescaped == [7, 7], "six cells each: a pipe inside a cell is escaped"


def test_hostile_labels_paths_models_and_details_come_out_inert_in_html(hostile: Comparison) -> None:
    html = render_comparison_html(hostile)

    assert html.startswith('<section id="comparison">') and html.rstrip().endswith("</section>")
    assert "<img" not in html and "<!--" not in html
    assert "&lt;img src=x onerror=alert(1)&gt;|&lt;!--`**x**`" in html
    assert html.count("<section") == 1 and html.count("</section>") == 1


def test_both_renderings_say_the_same() -> None:
    comparison = compare_results(_results(set()), _results({2, 3}))
    markdown, html = render_comparison_markdown(comparison), render_comparison_html(comparison)

    for sentence in (
        "Changes from A to B",
        "None: no mode or category lost accuracy",
        "Drops a paired test does not establish",
        "toolcalling · (all): accuracy 100.0% → 60.0%, McNemar p = 0.500.",
        "Exact McNemar test of newly passing vs newly failing turns per mode: toolcalling p = 0.500.",
    ):
        assert sentence in markdown and sentence in html, sentence
    cells = re.findall(r"<td[^>]*>([^<]*)</td>", html)
    assert "100.0% (57–100)" in cells and "60.0% (23–88)" in cells
    assert "| toolcalling | (all) | 5 / 5 | 100.0% (57–100) | 60.0% (23–88) |" in markdown


def _real(failing: set[int]) -> list[TurnRow]:
    """The sample run as a real model's, toolcalling failing ``failing``."""
    out = []
    for row in rows():
        if row.mode == "toolcalling" and row.turn in failing:
            row = row.model_copy(update={"score": row.score.model_copy(update={"passed": False})})
        out.append(row)
    return out


@pytest.fixture
def three_runs(tmp_path: Path) -> list[Path]:
    meta = RunMeta(provider="openai", model="m", modes=MODES, scenarios=1, turns=12)
    return [
        write_results(tmp_path / name / "results.jsonl", meta, _real(failing)).parent
        for name, failing in (("before", set()), ("after", {5, 6}), ("later", {5}))
    ]


def test_a_report_of_two_runs_holds_the_comparison_and_others_do_not(
    three_runs: list[Path], tmp_path: Path
) -> None:
    before, after, later = map(str, three_runs)
    for given, compared in (([before, after], True), ([before, after, later], False), ([before], False)):
        out = tmp_path / f"out-{len(given)}"
        result = runner.invoke(app, ["report", *given, "--out", str(out)], env={"COLUMNS": "200"})
        assert result.exit_code == 0, result.output
        markdown = (out / "report.md").read_text(encoding="utf-8")
        html = (out / "report.html").read_text(encoding="utf-8")
        assert ("## Changes from before to after" in markdown) is compared, given
        assert ('<section id="comparison">' in html) is compared, given
        assert ("Changes from before to after" in result.output) is compared, "printed on the terminal"
    markdown = (tmp_path / "out-2" / "report.md").read_text(encoding="utf-8")
    failures, changes, details = (
        markdown.index(h) for h in ("## Failures", "## Changes from", "## Run before")
    )
    assert failures < changes < details, "after the failures, before each run's details"
    assert "| fails | toolcalling | conversacion-larga | 6 | 1 |" in markdown


def test_a_hostile_run_folder_is_inert_in_both_reports(tmp_path: Path) -> None:
    meta = RunMeta(provider="openai", model="m", modes=MODES, scenarios=1, turns=12)
    hostile = tmp_path / "<img src=x onerror=alert(1)>|x"
    write_results(hostile / "results.jsonl", meta, _real(set()))
    write_results(tmp_path / "after" / "results.jsonl", meta, _real({5}))
    out = tmp_path / "out"

    args = ["report", str(hostile), str(tmp_path / "after"), "--out", str(out)]
    result = runner.invoke(app, args, env={"COLUMNS": "200"})

    assert result.exit_code == 0, result.output
    markdown = (out / "report.md").read_text(encoding="utf-8")
    section = markdown[markdown.index("## Changes from") :].split("\n## Run ")[0]
    assert "<img" not in section and "## Changes from &lt;img src=x onerror=alert(1)>\\|x to after" in section
    html = (out / "report.html").read_text(encoding="utf-8")
    section = html[html.index('<section id="comparison">') :].split("</section>")[0]
    assert (
        "<img" not in section
        and "<h2>Changes from &lt;img src=x onerror=alert(1)&gt;|x to after</h2>" in section
    )
