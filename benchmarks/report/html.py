"""``report.html``: one self-contained page (inline CSS and SVG, no script, no CDN) that prints on A4, of one
run or of several side by side, rendered from ``templates/report.html.j2`` and ``combined.html.j2``.

One run reads as one decision document, each figure shown once: the regime; the verdict; accuracy against
latency and cost; results per category; where the time goes; the failures with one example of each kind;
the summary (headline, findings, table); then the model matrix, the paired comparison, context growth,
pass^k, intervals over repetitions, cost per 1,000 turns, the provenance and every turn side by side. A
stand-in's turns have no accuracy, so its page shows none.

Several runs: every run's regime and a table of them, the same first sections with a row, point or column
per run, the comparison of two runs when given, then per run its findings, summary, paired comparison and
turns. Figures of different runs are never pooled or tested against each other.

Python builds the records (:mod:`~benchmarks.report.html_parts`, :mod:`~benchmarks.report.html_decision`,
:mod:`~benchmarks.report.html_figures`); the templates write every tag, with autoescape on: every field of
a results file is text. Only the charts' SVG (and the comparison section, itself rendered from a template)
is inserted as markup."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from benchmarks.cost import CostEstimate, estimate_costs
from benchmarks.report.charts import DISTRIBUTION_CAPTION, mode_colours
from benchmarks.report.cost_table import cost_caption, cost_rows, costs_of
from benchmarks.report.findings import OFFLINE_NOTICE, findings, pipeline_check
from benchmarks.report.html_decision import banner, categories_grid, regimes_grid, run_failures, verdict_view
from benchmarks.report.html_figures import growth_views, matrix_view, summary_view, time_view, tradeoff
from benchmarks.report.html_parts import (
    FILTERED_COLUMNS,
    failed_turn_keys,
    plain,
    turn_columns,
    turn_table,
)
from benchmarks.report.html_templates import html_environment
from benchmarks.report.matrix_table import MATRIX_CAPTION
from benchmarks.report.run_facts import CONVERSATION_STATE_POLICY, prefix_cache_text, provenance_rows
from benchmarks.report.runs import SIDE_BY_SIDE, ReportRun, combined_title
from benchmarks.report.runs import title as report_title
from benchmarks.report.splits import SPLITS_CAPTION
from benchmarks.report.summary import Summary
from benchmarks.report.tables import (
    INTERVALS_CAPTION,
    LATENCY_CAPTION,
    PERCENTILE_CAPTION,
    VALID_PLAN_CAPTION,
    interval_rows,
    paired_caption,
    paired_rows,
    pass_k_rows,
)
from benchmarks.report.time_breakdown import BREAKDOWN_CAPTION, CALLS_CAPTION
from benchmarks.report.verdict_table import VERDICT_CAPTION
from benchmarks.results import RunResults
from benchmarks.transcripts import TRANSCRIPTS_FILE, CallTranscript, TurnKey, read_transcripts

__all__ = ["render_combined_html", "render_html"]

SECTIONS = {
    "verdict": "Verdict",
    "tradeoff": "Accuracy against latency and cost",
    "categories": "Per category",
    "time": "Where the time goes",
    "failures": "Failures",
    "summary": "Summary",
    "matrix": "Model matrix",
    "paired": "Paired comparison",
    "growth": "Context growth",
    "pass-k": "pass^k",
    "intervals": "Intervals",
    "cost": "Cost",
    "provenance": "Provenance",
    "turn-by-turn": "Turn by turn",
}
"""Every section a page can have, in its order: id and table-of-contents entry."""

CAPTIONS = {
    "verdict": VERDICT_CAPTION,
    "splits": SPLITS_CAPTION,
    "distribution": DISTRIBUTION_CAPTION,
    "breakdown": BREAKDOWN_CAPTION,
    "calls": CALLS_CAPTION,
    "latency": LATENCY_CAPTION,
    "percentile": PERCENTILE_CAPTION,
    "valid_plan": VALID_PLAN_CAPTION,
    "matrix": MATRIX_CAPTION,
    "intervals": INTERVALS_CAPTION,
}
"""Captions the reports share, by name."""


def _render(template: str, **context: Any) -> str:
    page = html_environment().get_template(template)
    return page.render(captions=CAPTIONS, filtered_columns=FILTERED_COLUMNS, **context)


def _toc(present: Mapping[str, bool]) -> list[tuple[str, str]]:
    return [(anchor, name) for anchor, name in SECTIONS.items() if present.get(anchor, False)]


def render_html(
    results: RunResults,
    summary: Summary,
    cost: CostEstimate | Sequence[CostEstimate] | None = None,
    *,
    transcripts: Mapping[TurnKey, Sequence[CallTranscript]] | None = None,
) -> str:
    """The whole HTML report as one string (``cost`` defaults to the packaged pricing table's estimate, one
    per target); ``transcripts`` holds the model calls of failed turns, folded into their cells."""
    meta = results.meta
    costs = (costs_of(cost) if cost is not None else None) or estimate_costs(results)
    run = ReportRun("", results, summary, costs)
    colours = mode_colours(list(dict.fromkeys(m.mode for _, m in summary.cells())))
    structure_only = meta.offline and not summary.matrix  # a stand-in's turns have no accuracy to show
    paired = None if structure_only else paired_rows(summary)
    intervals = None if structure_only else interval_rows(summary)
    chart = tradeoff([run], colours)  # none for a stand-in's turns, run or target
    growth = growth_views(summary, colours)
    provenance = provenance_rows(meta)
    present = dict.fromkeys(SECTIONS, True) | {
        "tradeoff": chart is not None,
        "matrix": summary.matrix,
        "paired": paired is not None,
        "growth": bool(growth),
        "pass-k": not structure_only,
        "intervals": intervals is not None,
        "provenance": bool(provenance),
    }
    return _render(
        "report.html.j2",
        title=report_title(meta),
        banner=banner(run),
        meta=meta,
        prefix_cache=prefix_cache_text(meta),
        warmup=summary.warmup_turns,
        warnings=results.read_warnings,
        offline=f"{OFFLINE_NOTICE} {pipeline_check(summary).capitalize()}." if meta.offline else None,
        state_policy=CONVERSATION_STATE_POLICY,
        toc=_toc(present),
        verdict=verdict_view([run], colours),
        tradeoff=chart,
        categories=categories_grid([run], colours),
        time=time_view([run], colours),
        failures=run_failures([run], colours),
        summary=summary_view(summary, colours, accuracy=not structure_only),
        matrix=matrix_view(run),
        paired=plain(paired, "paired") if paired is not None else None,
        paired_caption=paired_caption(summary),
        growth=growth,
        pass_k=None if structure_only else plain(pass_k_rows(summary), "pass-k", colours=colours),
        intervals=plain(intervals, "intervals", colours=colours) if intervals is not None else None,
        repetitions=summary.repetitions,
        cost=plain(cost_rows(costs), "cost", colours=colours),
        cost_caption=cost_caption(costs),
        provenance=provenance,
        turns=turn_table(results, turn_columns(results, summary), colours, transcripts=transcripts),
    )


def _transcripts_of(run: ReportRun) -> dict[TurnKey, list[CallTranscript]] | None:
    """The model calls of the run's failed turns, from the transcripts file beside its results file."""
    if run.path is None:
        return None
    return read_transcripts(run.path.parent / TRANSCRIPTS_FILE, failed_turn_keys(run.results))


def _run_section(run: ReportRun, colours: Mapping[str, str]) -> dict[str, Any]:
    """One run's details: its first line, settings, findings, summary, paired comparison and turns."""
    results, summary = run.results, run.summary
    accuracy = not run.regime.structure_only  # a stand-in's verdicts check the pipeline only
    paired = paired_rows(summary) if accuracy else None
    return {
        "run": run,
        "banner": banner(run, anchored=False),
        "prefix_cache": prefix_cache_text(results.meta),
        "findings": findings(summary, None, accuracy=accuracy),
        "summary": summary_view(summary, colours, accuracy=accuracy).table,
        "paired": plain(paired, "paired") if paired is not None else None,
        "paired_caption": paired_caption(summary),
        "turns": turn_table(
            results, turn_columns(results, summary), colours, run.anchor, _transcripts_of(run)
        ),
    }


def render_combined_html(runs: Sequence[ReportRun], comparison: str | None = None) -> str:
    """The page of several runs (each a :class:`ReportRun` with its own id prefix); ``comparison`` is the
    comparison of two of them, an HTML section (``id="comparison"``) placed after the opening sections."""
    colours = mode_colours(list(dict.fromkeys(m.mode for run in runs for _, m in run.summary.cells())))
    chart = tradeoff(runs, colours)
    opening = ("verdict", "tradeoff", "categories", "time", "failures")
    toc = _toc({anchor: anchor != "tradeoff" or chart is not None for anchor in opening})
    toc += [("comparison", "Comparison")] if comparison is not None else []
    toc += [(f"{run.anchor}run", f"run {run.label}") for run in runs]
    return _render(
        "combined.html.j2",
        title=combined_title(len(runs)),
        banners=[banner(run, labeled=True) for run in runs],
        regimes=regimes_grid(runs),
        side_by_side=SIDE_BY_SIDE,
        toc=toc,
        verdict=verdict_view(runs, colours),
        tradeoff=chart,
        categories=categories_grid(runs, colours),
        time=time_view(runs, colours),
        failures=run_failures(runs, colours),
        comparison=comparison,
        runs=[_run_section(run, colours) for run in runs],
    )
