"""``report.html`` of several runs side by side (``erp-ai report RUN_A RUN_B …``): one self-contained page.

Reading order: every run's first line (what its figures measure) and a table of the regimes (provider, model,
latency profile, prefix cache), the verdict table with one row per run and mode, each run's verdict
sentences, the scorer check and what each mode is, the latency distributions, results per category, the
failures with one example of each kind, then per run its findings, summary and paired comparison and its
turns side by side. Figures of different runs are never pooled or tested against each other: every
comparison is between the modes of one run (and one target)."""

from __future__ import annotations

from collections.abc import Sequence
from html import escape

from benchmarks.report.findings import findings
from benchmarks.report.html_categories import categories_section
from benchmarks.report.html_decision import (
    distribution_section,
    regime_banner,
    regimes_table,
    verdict_section,
)
from benchmarks.report.html_failures import failures_section
from benchmarks.report.html_parts import PAGE_CLOSE, page_open, table
from benchmarks.report.html_turns import turn_columns, turn_table
from benchmarks.report.markdown import header_text
from benchmarks.report.regime import combined_title
from benchmarks.report.runs import SIDE_BY_SIDE, ReportRun
from benchmarks.report.svg import mode_colours
from benchmarks.report.tables import paired_caption, paired_rows, summary_rows

_SECTIONS = (
    ("verdict", "Verdict"),
    ("latency-distribution", "Latency distributions"),
    ("categories", "Per category"),
    ("failures", "Failures"),
)


def _run_section(run: ReportRun, colours: dict[str, str]) -> str:
    """One run's details: its first line, settings, findings, summary, paired comparison and turns."""
    results, summary = run.results, run.summary
    parts = [
        f'<section class="run" id="{run.anchor}run"><h2>Run {escape(run.label)}</h2>',
        regime_banner(run, anchored=False),
        f'<p class="meta">{escape(header_text(results.meta, summary).replace("`", ""))}'
        + (f" Results: <code>{escape(str(run.path))}</code>." if run.path is not None else "")
        + "</p>",
        *(f'<p class="notice read-warning"><b>Warning:</b> {escape(w)}.</p>' for w in results.read_warnings),
        '<ul class="findings">' + "".join(f"<li>{escape(s)}</li>" for s in findings(summary, None)) + "</ul>",
        f"<h3>Summary of {escape(run.label)}</h3>",
        table(*summary_rows(summary), css_class="summary", colours=colours),
    ]
    paired = paired_rows(summary)
    if paired is not None:
        parts += [
            f"<h3>Paired comparison of {escape(run.label)}</h3>",
            table(*paired, css_class="paired"),
            f'<p class="caption">{escape(paired_caption(summary))}</p>',
        ]
    parts.append(
        f'<h3 id="{run.anchor}turn-by-turn">Turns of {escape(run.label)}</h3>'
        + turn_table(results, turn_columns(results, summary), colours, run.anchor)
        + "</section>"
    )
    return "".join(parts)


def render_combined_html(runs: Sequence[ReportRun]) -> str:
    """The page of several runs (each a :class:`ReportRun` with its own id prefix)."""
    modes = list(dict.fromkeys(m.mode for run in runs for _, m in run.summary.cells()))
    colours = mode_colours(modes)
    heading = combined_title(len(runs))
    toc = [f'<a href="#{anchor}">{escape(text)}</a>' for anchor, text in _SECTIONS]
    toc += [f'<a href="#{run.anchor}run">run {escape(run.label)}</a>' for run in runs]
    parts = [
        page_open(heading),
        f"<header><h1>{escape(heading)}</h1>",
        '<ul class="regimes" id="regimes">'
        + "".join(f"<li>{regime_banner(run, labeled=True)}</li>" for run in runs)
        + "</ul>",
        regimes_table(runs),
        f'<p class="meta">{escape(SIDE_BY_SIDE)}</p>',
        f'<nav class="toc">{" ".join(toc)}</nav></header>',
        verdict_section(runs, colours),
        distribution_section(runs, colours),
        categories_section(runs, colours),
        failures_section(runs, colours),
        *(_run_section(run, colours) for run in runs),
        PAGE_CLOSE,
    ]
    return "\n".join(parts)
