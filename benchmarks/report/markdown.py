"""``report.md`` of one run, or of several side by side (``erp-ai report RUN_A RUN_B …``), in the order of
its HTML twin: what the run is, the verdict, results per category, where the time goes, the failures, the
summary; then the model matrix, paired comparison, context growth, pass^k, intervals over repetitions, cost,
provenance and the failing turns. The Markdown is in ``templates/*.md.j2``, which print every value escaped
(:mod:`benchmarks.report.markdown_text`); this module gathers what they show from the table modules.

A stand-in's run (the offline model alone) shows no accuracy: its verdicts check the pipeline. A run with
several targets (models) adds the model matrix and a ``target`` column to every per-mode table; modes are
compared within a target, never across."""

from __future__ import annotations

from collections.abc import Sequence

from benchmarks.cost import CostEstimate, estimate_costs
from benchmarks.report.calibration import agreement_line
from benchmarks.report.cost_table import cost_caption, cost_rows, costs_of
from benchmarks.report.failure_groups import clip, example_text, failure_groups, why
from benchmarks.report.findings import findings, headline, ms_text, pipeline_check
from benchmarks.report.markdown_text import cell as cell  # re-exported with markdown_safe and render_table
from benchmarks.report.markdown_text import environment
from benchmarks.report.markdown_text import markdown_safe as markdown_safe
from benchmarks.report.markdown_text import render_table as render_table
from benchmarks.report.matrix_table import matrix_grids, targets_table
from benchmarks.report.run_facts import mode_description, prefix_cache_text, provenance_rows, who_ran
from benchmarks.report.runs import ReportRun, category_grid, combined_title, first_line, regimes_rows
from benchmarks.report.runs import title as report_title
from benchmarks.report.splits import decision, split_table
from benchmarks.report.summary import CategorySummary, Summary
from benchmarks.report.tables import (
    Table,
    failure_rows,
    growth_rows,
    growth_scenarios,
    interval_rows,
    paired_caption,
    paired_rows,
    pass_k_rows,
    percent_interval,
    summary_rows,
    without_accuracy,
)
from benchmarks.report.time_breakdown import breakdown_table, calls_table
from benchmarks.report.verdict import first_answer, latency
from benchmarks.report.verdict_table import runs_verdict_lines, verdict_table, verdict_title
from benchmarks.results import RunMeta, RunResults
from benchmarks.stats import percentile

__all__ = ["category_table", "header_text", "render_combined_markdown", "render_markdown"]

PERCENTILES = (5, 25, 50, 75, 95)


def header_text(meta: RunMeta, summary: Summary) -> str:
    """The line under the title: who ran (provider, or the targets), latency profile, prefix cache, size."""
    who, per = who_ran(meta), "target and mode" if meta.matrix else "mode"
    profile = f", latency profile `{meta.latency_profile}`" if meta.latency_profile else ""
    cache = f", {prefix_cache_text(meta)}" if meta.any_offline else ""  # only an offline model models one
    warmup = f", {meta.warmup} warm-up turn(s) left out" if summary.warmup_turns else ""
    return (
        f"{who[0].upper()}{who[1:]}{profile}{cache}; {meta.scenarios} scenarios, "
        f"{meta.turns} turns per {per}, {meta.repeat} repetition(s){warmup}; started {meta.started_at}."
    )


def category_table(runs: Sequence[ReportRun]) -> Table:
    """Categories as rows, every (run, target, mode) as a column: accuracy with its interval and the turns
    (model calls per turn for a structure run)."""
    columns, categories, cells = category_grid(runs)

    def text(run: ReportRun, c: CategorySummary | None) -> str:
        if c is None:
            return "–"
        if run.regime.structure_only:
            return f"{c.calls_mean:.1f} calls ({c.turns})"
        interval = percent_interval(c.accuracy_interval, 0)
        return f"{c.accuracy:.0%}" + (f" [{interval}]" if interval else "") + f" ({c.turns})"

    labeled = len(runs) > 1
    names = [
        " · ".join(part for part in (run.label if labeled else "", target or "", mode) if part)
        for run, target, mode in columns
    ]
    rows = [
        [category, *(text(run, cells.get((i, category))) for i, (run, _, _) in enumerate(columns))]
        for category in categories
    ]
    return ["category", *names], rows


def _structure(runs: Sequence[ReportRun]) -> str:
    """Which runs are structure runs, whose categories show model calls: ``all``, ``some`` or ``none``."""
    structure = sum(run.regime.structure_only for run in runs)
    return "all" if structure == len(runs) else "some" if structure else "none"


def distributions(runs: Sequence[ReportRun]) -> Table:
    """p5, p25, p50, p75 and p95 of latency and of the first answer per (run and) mode."""
    labeled = len(runs) > 1
    header = [*(["run"] if labeled else []), "mode", "figure", "clock", "turns"]
    rows = [
        [*([run.label] if labeled else []), name, figure, run.regime.clock, str(len(values))]
        + [ms_text(percentile(values, q)) for q in PERCENTILES]
        for run in runs
        for (name, _, latencies), (_, _, firsts) in zip(
            run.per_cell(latency(run.regime.simulated)),
            run.per_cell(first_answer(run.regime.simulated)),
            strict=True,
        )
        for figure, values in (("latency", latencies), ("first answer", firsts))
        if values
    ]
    return [*header, *(f"p{q} ms" for q in PERCENTILES)], rows


def failure_examples(run: ReportRun, limit: int = 200) -> list[tuple[str, str, int, str]]:
    """One example of each kind of not-passed turn per (target and) mode: who, the kind, how many turns and
    the first of them (``[]`` when every turn passed)."""
    matrix = run.summary.matrix
    return [
        (f"{g.target} · {g.mode}" if matrix else g.mode, g.kind, len(g.turns), example_text(g.example, limit))
        for g in failure_groups(run.results.scored_rows)
    ]


def failing_turns(results: RunResults, limit: int = 50) -> tuple[Table, int] | None:
    """The failing turns, one row per (target, scenario, turn, repetition, reason) naming every mode that
    failed so (the target column only in a matrix), at most ``limit`` rows, and how many more there are;
    ``None`` when every turn passed."""
    matrix = results.meta.matrix
    groups: dict[tuple[str, str, int, int, str], list[str]] = {}
    scenario_order: dict[str, int] = {}
    for r in results.scored_rows:
        scenario_order.setdefault(r.scenario, len(scenario_order))
        if not r.passed:
            reason = why(r) if r.failure is None else f"[{r.failure}] {why(r)}"
            groups.setdefault((r.target, r.scenario, r.turn, r.repetition, reason), []).append(r.mode)
    if not groups:
        return None
    targets = {t.name: i for i, t in enumerate(results.meta.run_targets)}
    ordered = sorted(
        groups.items(),
        key=lambda kv: (scenario_order[kv[0][1]], kv[0][3], kv[0][2], targets.get(kv[0][0], len(targets))),
    )
    every = set(results.meta.modes or {r.mode for r in results.rows})

    def who(modes: list[str]) -> str:
        return "all modes" if len(every) > 1 and set(modes) >= every else ", ".join(modes)

    rows = [
        [*([target] if matrix else []), who(modes), scenario, str(turn), str(rep), clip(reason, 200)]
        for (target, scenario, turn, rep, reason), modes in ordered[:limit]
    ]
    header = [*(["target"] if matrix else []), "mode", "scenario", "turn", "rep", "why"]
    return (header, rows), len(groups) - len(rows)


def _verdict(runs: Sequence[ReportRun]) -> dict[str, object]:
    """The verdict section: its table, each run's verdict (on the held-out questions when it has them) with
    its suite/held-out split (none for a structure run), the scorer check and the modes."""
    modes = dict.fromkeys(m.mode for run in runs for _, m in run.summary.cells())
    return {
        "title": verdict_title(runs),
        "table": verdict_table(runs_verdict_lines(runs)),
        "runs": [
            (
                run,
                decision(run.results, run.summary, run.regime, run.results.meta.model),
                None if run.regime.structure_only else split_table(run.results),
            )
            for run in runs
        ],
        "agreement": agreement_line(),
        "modes": [(mode, mode_description(mode)) for mode in modes],
    }


def render_markdown(
    results: RunResults, summary: Summary, cost: CostEstimate | Sequence[CostEstimate] | None = None
) -> str:
    """The whole Markdown report (``cost`` defaults to the packaged pricing table's estimate, one per
    target)."""
    meta = results.meta
    costs = costs_of(cost) if cost is not None else estimate_costs(results)
    run = ReportRun("", results, summary, costs)
    accuracy = not (meta.offline and not summary.matrix)  # a stand-in's verdicts check the pipeline only
    template = environment().get_template("report.md.j2")
    return template.render(
        title=report_title(meta),
        first_line=first_line(meta),
        header=header_text(meta, summary),
        warnings=results.read_warnings,
        pipeline_check=pipeline_check(summary).capitalize() if meta.offline else "",
        verdict=_verdict([run]),
        categories=category_table([run]),
        category_structure=_structure([run]),
        distributions=distributions([run]),
        breakdown=breakdown_table(results.rows),
        calls=calls_table(results.rows),
        failures=failure_rows(summary),
        examples=failure_examples(run),
        headline=headline(summary, accuracy=accuracy),
        sentences=[] if summary.matrix else findings(summary, None, accuracy=accuracy),
        targets=[(t.target, headline(t.summary), findings(t.summary, None)) for t in summary.targets],
        summary=summary_rows(summary) if accuracy else without_accuracy(summary_rows(summary)),
        accuracy=accuracy,
        matrix=targets_table(meta) if summary.matrix else None,
        grids=matrix_grids(summary, costs),
        paired=paired_rows(summary) if accuracy else None,
        paired_caption=paired_caption(summary),
        growth=growth_rows(summary),
        growth_scenarios=growth_scenarios(summary),
        pass_k=pass_k_rows(summary) if accuracy else None,
        intervals=interval_rows(summary) if accuracy else None,
        repetitions=summary.repetitions,
        cost=cost_rows(costs),
        cost_caption=cost_caption(costs),
        provenance=(["what", "value"], provenance_rows(meta)) if meta.provenance else None,
        failing=failing_turns(results),
    )


def _run_section(run: ReportRun) -> dict[str, object]:
    """One run's part of a combined report: its first line and failure examples, then its own section (the
    settings, warnings, findings, summary and paired comparison; no accuracy for a structure run)."""
    results, summary = run.results, run.summary
    accuracy = not run.regime.structure_only
    return {
        "label": run.label,
        "first_line": first_line(results.meta),
        "examples": failure_examples(run),
        "header": header_text(results.meta, summary),
        "path": run.path,
        "warnings": results.read_warnings,
        "sentences": findings(summary, None, accuracy=accuracy),
        "summary": summary_rows(summary) if accuracy else without_accuracy(summary_rows(summary)),
        "paired": paired_rows(summary) if accuracy else None,
        "paired_caption": paired_caption(summary),
    }


def render_combined_markdown(runs: Sequence[ReportRun], comparison: str | None = None) -> str:
    """The whole Markdown report of several runs; ``comparison``, the Markdown section comparing two runs
    (already escaped), follows the failures."""
    template = environment().get_template("combined.md.j2")
    return template.render(
        title=combined_title(len(runs)),
        runs=[_run_section(run) for run in runs],
        regimes=regimes_rows(runs),
        verdict=_verdict(runs),
        categories=category_table(runs),
        category_structure=_structure(runs),
        distributions=distributions(runs),
        comparison=comparison,
    )
