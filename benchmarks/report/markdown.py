"""``report.md``: the findings, the summary with accuracy intervals, the paired comparison, per-category
accuracy, pass^k, intervals over repetitions, cost per 1,000 turns, the growth curve's ends, the run's
provenance and the failing turns (the tables from :mod:`benchmarks.report.tables`).

A run with several targets (models) adds the model matrix and gives every per-mode table a ``target`` column;
each target's findings and paired comparisons are its own (modes are compared within a target, never
across)."""

from __future__ import annotations

from collections.abc import Sequence

from benchmarks.cost import CostEstimate, estimate_costs
from benchmarks.report.about import (
    CONVERSATION_STATE_POLICY,
    prefix_cache_text,
    provenance_rows,
    targets_table,
    targets_text,
)
from benchmarks.report.aggregate import Summary
from benchmarks.report.findings import OFFLINE_NOTICE, findings, headline
from benchmarks.report.markdown_decision import distribution_block, failure_examples_block, verdict_block
from benchmarks.report.matrix import MATRIX_CAPTION, matrix_grids
from benchmarks.report.md_table import cell, clip, render_table
from benchmarks.report.regime import first_line
from benchmarks.report.regime import title as report_title
from benchmarks.report.runs import ReportRun
from benchmarks.report.tables import (
    INTERVALS_CAPTION,
    LATENCY_CAPTION,
    PERCENTILE_CAPTION,
    VALID_PLAN_CAPTION,
    category_rows,
    cost_caption,
    cost_rows,
    costs_of,
    failure_rows,
    growth_rows,
    growth_scenarios,
    interval_rows,
    paired_caption,
    paired_rows,
    pass_k_rows,
    summary_rows,
)
from benchmarks.report.verdict import verdict_title
from benchmarks.results import RunMeta, RunResults

__all__ = ["cell", "clip", "header_text", "render_markdown", "render_table"]


def _failing_turns(results: RunResults, limit: int = 50) -> list[str]:
    """Failing turns, one row per (target, scenario, turn, repetition, reason) naming every mode that failed
    so (the target column only in a matrix)."""
    matrix = results.meta.matrix
    groups: dict[tuple[str, str, int, int, str], list[str]] = {}
    scenario_order: dict[str, int] = {}
    for r in results.scored_rows:
        scenario_order.setdefault(r.scenario, len(scenario_order))
        if not r.passed:
            why = "; ".join(r.score.details or r.errors) or "failed"
            if r.failure is not None:
                why = f"[{r.failure}] {why}"
            groups.setdefault((r.target, r.scenario, r.turn, r.repetition, why), []).append(r.mode)
    if not groups:
        return []
    targets = {t.name: i for i, t in enumerate(results.meta.run_targets)}
    ordered = sorted(
        groups.items(),
        key=lambda kv: (scenario_order[kv[0][1]], kv[0][3], kv[0][2], targets.get(kv[0][0], len(targets))),
    )
    shown = ordered[:limit]
    every = set(results.meta.modes or {r.mode for r in results.rows})

    def who(modes: list[str]) -> str:
        return "all modes" if len(every) > 1 and set(modes) >= every else ", ".join(modes)

    lines = ["", "## Failing turns", ""]
    lines += render_table(
        [*(["target"] if matrix else []), "mode", "scenario", "turn", "rep", "why"],
        [
            [*([target] if matrix else []), who(modes), s, str(t), str(rep), clip(why, 200)]
            for (target, s, t, rep, why), modes in shown
        ],
        align=("l" if matrix else "") + "llrrl",
    )
    if len(groups) > len(shown):
        lines += ["", f"… and {len(groups) - len(shown)} more (see report.html)."]
    return lines


def header_text(meta: RunMeta, summary: Summary) -> str:
    """The line under the title: who ran (provider, or the targets), latency profile, prefix cache, size."""
    warmup = f", {meta.warmup} warm-up turn(s) left out" if summary.warmup_turns else ""
    cache = prefix_cache_text(meta)
    if meta.matrix:
        who, per = f"Targets {targets_text(meta)}", "turns per target and mode"
    else:
        who = f"Provider `{meta.provider}`" + (f", model `{meta.model}`" if meta.model else "")
        per = "turns per mode"
    return (
        who
        + (f", latency profile `{meta.latency_profile}`" if meta.latency_profile else "")
        + (f", {cache}" if cache else "")
        + f"; {meta.scenarios} scenarios, {meta.turns} {per}, {meta.repeat} repetition(s){warmup}; "
        f"started {meta.started_at}."
    )


def _findings_lines(summary: Summary) -> list[str]:
    """The headline in bold and the findings as a list; per target (a subsection each) for a matrix."""
    lines: list[str] = []
    top = headline(summary)
    if top:
        lines += [f"**{top}**", ""]
    if not summary.matrix:
        return lines + [f"- {sentence}" for sentence in findings(summary, None)]
    for entry in summary.targets:
        lines += [f"### Target `{entry.target.name}` ({entry.target.label})", ""]
        own = headline(entry.summary)
        if own:
            lines += [f"**{own}**", ""]
        lines += [f"- {sentence}" for sentence in findings(entry.summary, None)]
        lines.append("")
    return lines[:-1]


def render_markdown(
    results: RunResults, summary: Summary, cost: CostEstimate | Sequence[CostEstimate] | None = None
) -> str:
    """The whole Markdown report (``cost`` defaults to the packaged pricing table's estimate, one per
    target)."""
    meta = results.meta
    costs = costs_of(cost) if cost is not None else estimate_costs(results)
    run = ReportRun("", results, summary, costs)
    lines = [f"# {report_title(meta)}", "", f"**{first_line(meta)}**", "", header_text(meta, summary), ""]
    lines += [line for warning in results.read_warnings for line in (f"> **Warning:** {warning}.", "")]
    if meta.offline:
        lines += [f"> **Note.** {OFFLINE_NOTICE}", ""]
    lines += [CONVERSATION_STATE_POLICY, ""]
    lines += verdict_block([run], verdict_title([run]))
    lines += distribution_block([run])
    lines += ["## Findings", ""]
    lines += _findings_lines(summary)
    if summary.matrix:
        lines += ["", "## Model matrix", ""]
        lines += render_table(*targets_table(meta), align="llll")
        lines += ["", MATRIX_CAPTION]
        for title, header, rows in matrix_grids(summary, costs):
            lines += ["", f"### {title}", ""]
            lines += render_table(header, rows)
    lines += ["", "## Summary", ""]
    lines += render_table(*summary_rows(summary))
    lines += [
        "",
        f"{LATENCY_CAPTION} {PERCENTILE_CAPTION} Accuracy intervals are Wilson 95% intervals, counting turns "
        f"as independent trials. {VALID_PLAN_CAPTION}",
        "",
    ]
    paired = paired_rows(summary)
    if paired is not None:
        lines += ["## Paired comparison", ""]
        lines += render_table(*paired)
        lines += ["", paired_caption(summary), ""]
    failures = failure_rows(summary)
    if failures is not None:
        lines += ["## Failures per kind", ""]
        lines += render_table(*failures)
        lines += ["", "Kinds as defined in `docs/failures.md`; a failed turn never passes.", ""]
    examples = failure_examples_block(run)
    if examples:
        lines += ["### One example of each kind", "", *examples, ""]
    lines += ["## Accuracy per category", ""]
    lines += render_table(*category_rows(summary))
    lines += ["", "Share of turns passed, Wilson 95% interval in brackets, turns in parentheses.", ""]
    lines += ["## pass^k (tau-bench)", ""]
    lines += render_table(*pass_k_rows(summary))
    intervals = interval_rows(summary)
    if intervals is not None:
        lines += ["", f"## Intervals over {summary.repetitions} repetitions", ""]
        lines += render_table(*intervals)
        lines += ["", INTERVALS_CAPTION]
    lines += ["", "## Cost per 1,000 turns", ""]
    lines += render_table(*cost_rows(costs))
    lines += ["", cost_caption(costs)]
    growth = growth_rows(summary)
    if growth is not None:
        names = ", ".join(f"`{name}`" for name in growth_scenarios(summary))
        lines += ["", f"## Context growth on {names}", ""]
        lines += render_table(*growth)
    provenance = provenance_rows(meta)
    if provenance:
        lines += ["", "## Provenance", ""]
        lines += render_table(["what", "value"], [[k, v] for k, v in provenance], align="ll")
    lines += _failing_turns(results)
    return "\n".join(lines) + "\n"
