"""Reports from a results file: terminal table, ``report.md`` and a self-contained ``report.html``."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from benchmarks.cost import estimate_costs, load_pricing
from benchmarks.report.aggregate import (
    CategorySummary,
    GrowthCurve,
    ModeSummary,
    PairedComparison,
    Summary,
    TargetSummary,
    pass_hat_k,
    summarize,
)
from benchmarks.report.findings import OFFLINE_NOTICE, findings
from benchmarks.report.html import render_html
from benchmarks.report.markdown import render_markdown
from benchmarks.report.terminal import print_summary
from benchmarks.results import RunResults, read_results

__all__ = [
    "OFFLINE_NOTICE",
    "CategorySummary",
    "GrowthCurve",
    "ModeSummary",
    "PairedComparison",
    "ReportFiles",
    "Summary",
    "TargetSummary",
    "findings",
    "pass_hat_k",
    "print_summary",
    "render_html",
    "render_markdown",
    "summarize",
    "summarize_run",
    "write_reports",
]


@dataclass(frozen=True)
class ReportFiles:
    """Where the reports were written, and the figures they show."""

    markdown: Path
    html: Path
    summary: Summary


def summarize_run(results: RunResults) -> Summary:
    """The summary of a run as its reports show it: per target when it has several, with the run's
    prefix-cache setting (when an offline model ran)."""
    meta = results.meta
    return summarize(
        results.rows,
        meta.modes,
        targets=meta.run_targets,
        prompt_cache=meta.prompt_cache if meta.any_offline else None,
    )


def write_reports(
    results: RunResults | Path, out_dir: Path | None = None, *, pricing: Path | None = None
) -> ReportFiles:
    """Write ``report.md`` and ``report.html`` next to the results file (or into ``out_dir``).

    ``pricing`` is a user pricing file whose entries replace the packaged ones (see :mod:`benchmarks.cost`).
    """
    if isinstance(results, Path):
        target = out_dir or results.parent
        results = read_results(results)
    else:
        target = out_dir or Path(".")
    target.mkdir(parents=True, exist_ok=True)
    summary = summarize_run(results)
    cost = estimate_costs(results, load_pricing(pricing))
    markdown = target / "report.md"
    html = target / "report.html"
    markdown.write_text(render_markdown(results, summary, cost), encoding="utf-8")
    html.write_text(render_html(results, summary, cost), encoding="utf-8")
    return ReportFiles(markdown=markdown, html=html, summary=summary)
