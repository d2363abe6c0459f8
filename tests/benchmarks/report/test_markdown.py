"""report.md from its templates (benchmarks/report/markdown.py, markdown_text.py, templates/*.md.j2): the
sections in report.html's order, no accuracy for a stand-in, every recorded field printed inert, and the
Markdown written in the templates, not in Python."""

from __future__ import annotations

import ast
import inspect
import re
from types import ModuleType

from benchmarks.provenance import Provenance
from benchmarks.report import markdown, markdown_text
from benchmarks.report.markdown import render_combined_markdown, render_markdown, render_table
from benchmarks.report.runs import report_run, summarize_run
from benchmarks.results import RunMeta, RunResults, TurnRow
from shared.llm.usage import ModelCall
from tests.benchmarks.report.sample_results import MODES, rows, turn_row

REAL = RunMeta(
    provider="ollama",
    model="llama3.1:8b",
    modes=MODES,
    scenarios=1,
    turns=12,
    repeat=2,
    provenance=Provenance(git_commit="0123456789abcdef"),
)


def _rows(*, heldout: bool = False) -> list[TurnRow]:
    """The sample rows over two repetitions, each turn with its model calls (the second half of the turns on
    the held-out questions when ``heldout``)."""
    calls = [ModelCall(role="plan", ms=0.6, first_token_ms=0.2, input_tokens=1000, output_tokens=50)]
    return [
        row.model_copy(
            update={
                "repetition": repetition,
                "calls": calls,
                "split": "heldout" if heldout and row.turn > 6 else "suite",
            }
        )
        for row in rows()
        for repetition in (1, 2)
    ]


def _headings(text: str, level: str = "## ") -> list[str]:
    return [line.removeprefix(level) for line in text.splitlines() if line.startswith(level)]


def test_report_md_has_the_sections_of_report_html_in_its_order() -> None:
    results = RunResults(meta=REAL, rows=_rows())

    text = render_markdown(results, summarize_run(results))

    assert text.startswith(
        "# erp-ai-harness benchmark: which architecture for llama3.1:8b\n\n**Real-model run:"
    )
    assert _headings(text) == [
        "Which architecture for llama3.1:8b, and why",
        "Results per category",
        "Where the time goes",
        "Failures",
        "Summary",
        "Paired comparison",
        "Context growth on `conversacion-larga`",
        "pass^k (tau-bench)",
        "Intervals over 2 repetitions",
        "Cost per 1,000 turns",
        "Provenance",
        "Failing turns",
    ]
    time = text.split("## Where the time goes")[1].split("\n## ")[0]
    assert _headings(time, "### ") == ["Latency distributions", "Parts of a turn", "Model calls"]
    assert "### One example of each kind" in text.split("## Failures")[1].split("\n## ")[0]
    summary = text.split("## Summary\n\n")[1].split("\n## ")[0]
    assert summary.startswith("**Per turn:") and "\n- planner never exceeded" in summary
    assert summary.index("\n- ") < summary.index("| mode | turns | accuracy (95% CI) |")
    assert "\n\n\n" not in text and text.endswith("|\n") and not text.endswith("\n\n")


def test_a_stand_in_report_md_states_no_accuracy_figure_beyond_its_pipeline_check() -> None:
    meta = RunMeta(provider="offline", modes=MODES, scenarios=1, turns=12, repeat=2)
    results = RunResults(meta=meta, rows=_rows(heldout=True))

    text = render_markdown(results, summarize_run(results))

    assert "Pipeline check: 70 of 72 turns as the stand-in should." in text
    assert not re.search(r"\d% \(\d+(\.\d)?–", text), (
        "no accuracy with its interval (verdict, summary, splits)"
    )
    assert not re.search(r"\d% \[\d+–", text), "no accuracy per category"
    for said in ("% of turns", "more accurate", "passed only in", "passed exactly", "held-out accuracy"):
        assert said not in text, said
    for section in ("Paired comparison", "pass^k", "Intervals over"):
        assert not [heading for heading in _headings(text) if heading.startswith(section)]
    verdict = text.split("## Which architecture, and why: structure only (offline stand-in)")[1].split(
        "\n\n"
    )[1]
    assert all("| not measured (stand-in) |" in line for line in verdict.splitlines()[2:])
    assert "| long_conversation | 2.0 calls (24) | 3.0 calls (24) | 3.0 calls (24) |" in text


HOSTILE = "a|b\n## Hacked <script>alert(1)</script> <!-- hidden \x1b[2J\x07 `c` | d"
"""A recorded field that would open a table cell, a heading, a tag, a comment and a terminal escape."""


def _hostile_results() -> RunResults:
    meta = RunMeta(
        provider="openai",
        model="m|<script>\x1b[31m",
        modes=["planner", "toolcalling"],
        provenance=Provenance(host=HOSTILE, notes=[HOSTILE]),
    )
    fields = {"scenario": HOSTILE, "category": HOSTILE, "user": HOSTILE, "answer": HOSTILE}
    failed = {"failed": True, "failure": "model_output", "errors": [HOSTILE]}
    return RunResults(
        meta=meta,
        rows=[
            turn_row("planner", **fields),
            turn_row("toolcalling", passed=False, why=HOSTILE, **fields, **failed),
        ],
    )


def _columns(line: str) -> int:
    """The table cell borders of a line: its pipes not escaped."""
    return len(re.findall(r"(?<!\\)\|", line))


def test_recorded_fields_come_out_inert_in_every_part_of_report_md() -> None:
    results = _hostile_results()
    runs = [report_run(results, HOSTILE), report_run(results, "b")]

    for text in (render_markdown(results, summarize_run(results)), render_combined_markdown(runs)):
        assert "<script" not in text and "<!--" not in text and "&lt;script>" in text
        assert "\x1b" not in text and "\x07" not in text
        assert text.count("Hacked") == text.count("a\\|b ## Hacked &lt;script>"), "one line, pipes escaped"
        lines = text.splitlines()
        tables: list[list[str]] = []
        for previous, line in zip(["", *lines], lines, strict=False):
            if line.startswith("|"):
                tables += [[line]] if not previous.startswith("|") else []
                tables[-1].append(line)
        assert tables and all(len({_columns(line) for line in table}) == 1 for table in tables)


def test_the_combined_report_md_follows_report_html_and_takes_the_comparison_verbatim() -> None:
    real = RunResults(meta=REAL, rows=_rows())
    offline = RunResults(meta=REAL.model_copy(update={"provider": "offline", "model": None}), rows=_rows())
    comparison = "## Changes from A to B\n\n| group | change |\n|---|---|\n| planner | a \\| b &lt;x> |"

    text = render_combined_markdown([report_run(real, "real"), report_run(offline, "gpu")], comparison)

    assert _headings(text) == [
        "Which architecture, and why: 2 runs side by side",
        "Results per category",
        "Where the time goes",
        "Failures, with one example of each kind",
        "Changes from A to B",
        "Run real",
        "Run gpu",
    ]
    assert f"\n\n{comparison}\n\n## Run real" in text
    gpu = text.split("## Run gpu")[1]
    assert "| mode | turns | calls/turn" in gpu and "accuracy" not in gpu, "a stand-in's own section too"
    assert "| real · planner | real · toolcalling |" in text.split("## Results per category")[1]
    assert "\n\n\n" not in render_combined_markdown([report_run(real, "real")])


def test_render_table_writes_one_line_per_row_with_every_cell_escaped() -> None:
    assert render_table(["mode", "a|b"], [["<script>", "x\ny"]]) == [
        "| mode | a\\|b |",
        "|---|--:|",
        "| &lt;script> | x y |",
    ]
    assert render_table(["target", "mode", "n"], [], align="lll")[1] == "|---|---|---|"


def _strings(module: ModuleType) -> list[str]:
    """The string constants of ``module``'s code, docstrings (strings standing as statements) left out."""
    tree = ast.parse(inspect.getsource(module))
    docstrings = {id(node.value) for node in ast.walk(tree) if isinstance(node, ast.Expr)}
    return [
        node.value
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings
    ]


def test_the_markdown_is_written_in_the_templates_not_joined_in_python() -> None:
    for module in (markdown, markdown_text):
        strings = _strings(module)
        assert not [text for text in strings if "\n" in text], f"{module.__name__} writes no line breaks"
        markup = re.compile(r"(#+ |\| |- |> |\*\*)")
        assert not [text for text in strings if markup.match(text)], f"{module.__name__} writes no Markdown"
