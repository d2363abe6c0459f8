"""``report.md`` of several runs side by side (``erp-ai report RUN_A RUN_B …``), in the order of its HTML
twin (:mod:`benchmarks.report.html_combined`): every run's first line and regime, the verdict, the latency
distributions, results per category, one example of each kind of failure, then each run's own figures."""

from __future__ import annotations

from collections.abc import Sequence

from benchmarks.report.findings import findings
from benchmarks.report.markdown import header_text
from benchmarks.report.markdown_decision import distribution_block, failure_examples_block, verdict_block
from benchmarks.report.md_table import render_table
from benchmarks.report.regime import combined_title, first_line
from benchmarks.report.runs import SIDE_BY_SIDE, ReportRun, regimes_rows
from benchmarks.report.tables import Table, paired_caption, paired_rows, percent_interval, summary_rows
from benchmarks.report.verdict import verdict_title


def category_grid(runs: Sequence[ReportRun]) -> Table:
    """Categories as rows, every (run, target, mode) as a column: accuracy with its interval and the turns
    (calls per turn only for a structure run)."""
    labeled = len(runs) > 1
    columns = [(run, target, m.mode) for run in runs for target, m in run.summary.cells()]
    cells: dict[tuple[int, str], str] = {}
    for i, (run, target, mode) in enumerate(columns):
        summary = run.summary
        if target is not None:
            summary = next(t.summary for t in run.summary.targets if t.target.name == target)
        for c in summary.categories:
            if c.mode != mode:
                continue
            if run.regime.structure_only:
                cells[(i, c.category)] = f"{c.calls_mean:.1f} calls ({c.turns})"
            else:
                interval = percent_interval(c.accuracy_interval, 0)
                cells[(i, c.category)] = f"{c.accuracy:.0%} [{interval}] ({c.turns})"
    names = [
        " · ".join(part for part in (run.label if labeled else "", target or "", mode) if part)
        for run, target, mode in columns
    ]
    categories = sorted({category for _, category in cells})
    rows = [
        [category, *(cells.get((i, category), "–") for i in range(len(columns)))] for category in categories
    ]
    return ["category", *names], rows


def render_combined_markdown(runs: Sequence[ReportRun]) -> str:
    """The whole Markdown report of several runs."""
    lines = [f"# {combined_title(len(runs))}", ""]
    lines += [f"- **{run.label}**: {first_line(run.results.meta)}" for run in runs]
    lines += [""]
    lines += render_table(*regimes_rows(runs), align="l" * 8)
    lines += ["", SIDE_BY_SIDE, ""]
    lines += verdict_block(runs, verdict_title(runs))
    lines += distribution_block(runs)
    lines += ["## Results per category", ""]
    lines += render_table(*category_grid(runs))
    lines += [
        "",
        "Accuracy per category, Wilson 95% interval in brackets, turns in parentheses; a structure run "
        "(offline stand-in) shows model calls per turn instead.",
        "",
        "## Failures, with one example of each kind",
        "",
    ]
    for run in runs:
        examples = failure_examples_block(run)
        lines += [f"### {run.label}", "", *(examples or ["Every turn passed."]), ""]
    for run in runs:
        results, summary = run.results, run.summary
        lines += [f"## Run {run.label}", "", header_text(results.meta, summary), ""]
        if run.path is not None:
            lines += [f"Results: `{run.path}`.", ""]
        lines += [f"> **Warning:** {warning}." for warning in results.read_warnings]
        lines += [f"- {sentence}" for sentence in findings(summary, None)]
        lines += ["", *render_table(*summary_rows(summary)), ""]
        paired = paired_rows(summary)
        if paired is not None:
            lines += [*render_table(*paired), "", paired_caption(summary), ""]
    return "\n".join(lines).rstrip() + "\n"
