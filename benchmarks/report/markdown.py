"""``report.md`` of one run, or of several side by side (``erp-ai report RUN_A RUN_B …``), in the order of
its HTML twin: the verdict, the latency distributions as percentiles, then the findings and every table
(from the table modules), the provenance and the failing turns.

A run with several targets (models) adds the model matrix and gives every per-mode table a ``target`` column;
each target's findings and paired comparisons are its own (modes are compared within a target, never
across)."""

from __future__ import annotations

import re
from collections.abc import Sequence

from benchmarks.cost import CostEstimate, estimate_costs
from benchmarks.report.calibration import agreement_line
from benchmarks.report.cost_table import cost_caption, cost_rows, costs_of
from benchmarks.report.failure_groups import clip, example_text, failure_groups, why
from benchmarks.report.findings import OFFLINE_NOTICE, findings, headline, ms_text, pipeline_check
from benchmarks.report.matrix_table import MATRIX_CAPTION, matrix_grids, targets_table
from benchmarks.report.run_facts import (
    CONVERSATION_STATE_POLICY,
    mode_description,
    prefix_cache_text,
    provenance_rows,
    who_ran,
)
from benchmarks.report.runs import (
    SIDE_BY_SIDE,
    ReportRun,
    category_grid,
    combined_title,
    first_line,
    regimes_rows,
)
from benchmarks.report.runs import title as report_title
from benchmarks.report.splits import SPLITS_CAPTION, decision, split_table
from benchmarks.report.summary import CategorySummary, Summary
from benchmarks.report.tables import (
    INTERVALS_CAPTION,
    LATENCY_CAPTION,
    PERCENTILE_CAPTION,
    VALID_PLAN_CAPTION,
    Table,
    category_rows,
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
from benchmarks.report.time_breakdown import BREAKDOWN_CAPTION, CALLS_CAPTION, breakdown_table, calls_table
from benchmarks.report.verdict import first_answer, latency
from benchmarks.report.verdict_table import VERDICT_CAPTION, runs_verdict_lines, verdict_table, verdict_title
from benchmarks.results import RunMeta, RunResults
from benchmarks.stats import percentile

_TAG_OPENING = re.compile(r"<(?=[A-Za-z!/?])")
"""A ``<`` that could open an HTML tag, comment or declaration (``p < 0.001`` cannot)."""


def markdown_safe(text: str) -> str:
    """``text`` with every ``<`` that could open a tag written as ``&lt;`` (shown the same): no recorded field
    can open an HTML tag or comment in a Markdown file (``<script>``, a ``<!--`` that would hide the rest, a
    README marker)."""
    return _TAG_OPENING.sub("&lt;", text)


def cell(text: str) -> str:
    """Text safe inside a Markdown table cell: one line, pipes escaped."""
    return " ".join(text.split()).replace("|", "\\|")


_LABELS = frozenset({"mode", "category", "failure kind", "base vs other"})
"""Columns that name a row when they follow a ``target`` column."""


def render_table(header: list[str], rows: list[list[str]], align: str = "") -> list[str]:
    """A Markdown table; ``align`` has one ``l``/``r`` per column (default: the columns that name a row, such
    as ``target`` then ``mode``, left; figures right)."""
    if not align:
        labels = 1
        while labels < len(header) - 1 and header[labels - 1] == "target" and header[labels] in _LABELS:
            labels += 1
        align = "l" * labels + "r" * (len(header) - labels)
    rule = "|" + "|".join("--:" if a == "r" else "---" for a in align) + "|"
    lines = ["| " + " | ".join(cell(h) for h in header) + " |", rule]
    lines += ["| " + " | ".join(cell(c) for c in row) + " |" for row in rows]
    return lines


PERCENTILES = (5, 25, 50, 75, 95)

DISTRIBUTION_MD_CAPTION = (
    "Percentiles of the per-turn times in ms (interpolated between the two closest turns). Simulated times "
    "are the latency profile's model time (plus harness time for latency); measured ones are wall time on "
    "the run's machine. report.html draws each distribution."
)


def verdict_block(runs: Sequence[ReportRun], title: str) -> list[str]:
    """``## <title>``: the verdict table, each run's sentences, the scorer check and the modes."""
    lines = [f"## {title}", ""]
    lines += render_table(*verdict_table(runs_verdict_lines(runs)))
    lines += ["", VERDICT_CAPTION, ""]
    for run in runs:
        verdict = decision(run.results, run.summary, run.regime, run.results.meta.model)
        if len(runs) > 1:
            lines += [f"**{run.label}** ({run.regime.kind}):", ""]
        lines += [f"- **{sentence}**" for sentence in verdict.leads]
        lines += [f"- {sentence}" for sentence in verdict.details]
        lines.append("")
        splits = split_table(run.results) if not run.regime.structure_only else None
        if splits is not None:
            lines += [*render_table(*splits), "", SPLITS_CAPTION, ""]
    lines += [agreement_line(), ""]
    modes = list(dict.fromkeys(m.mode for run in runs for _, m in run.summary.cells()))
    lines += [f"- `{mode}`: {mode_description(mode)}" for mode in modes]
    return [*lines, ""]


def distribution_block(runs: Sequence[ReportRun]) -> list[str]:
    """``## Latency distributions``: p5, p25, p50, p75 and p95 of latency and first answer per mode."""
    header = [
        *(["run"] if len(runs) > 1 else []),
        "mode",
        "figure",
        "clock",
        "turns",
        *(f"p{q} ms" for q in PERCENTILES),
    ]
    rows = []
    for run in runs:
        lead = [run.label] if len(runs) > 1 else []
        simulated, clock = run.regime.simulated, run.regime.clock
        latencies, firsts = run.per_cell(latency(simulated)), run.per_cell(first_answer(simulated))
        for (name, _, latency_values), (_, _, first_values) in zip(latencies, firsts, strict=True):
            for figure, values in (("latency", latency_values), ("first answer", first_values)):
                if values:
                    figures = [ms_text(percentile(values, q)) for q in PERCENTILES]
                    rows.append([*lead, name, figure, clock, str(len(values)), *figures])
    numbers = 1 + len(PERCENTILES)
    lines = ["## Latency distributions", ""]
    lines += render_table(header, rows, align="l" * (len(header) - numbers) + "r" * numbers)
    return [*lines, "", DISTRIBUTION_MD_CAPTION, ""]


def failure_examples_block(run: ReportRun, limit: int = 200) -> list[str]:
    """One example of each kind of failed turn, per mode (``[]`` when every turn passed)."""
    groups = failure_groups(run.results.scored_rows)
    matrix = run.summary.matrix
    lines = []
    for group in groups:
        who = f"{group.target} · {group.mode}" if matrix else group.mode
        count = len(group.turns)
        lines.append(
            f"- **{who} · {group.kind}** ({count} turn{'s' if count != 1 else ''}): "
            f"{example_text(group.example, limit)}"
        )
    return lines


def _failing_turns(results: RunResults, limit: int = 50) -> list[str]:
    """Failing turns, one row per (target, scenario, turn, repetition, reason) naming every mode that failed
    so (the target column only in a matrix)."""
    matrix = results.meta.matrix
    groups: dict[tuple[str, str, int, int, str], list[str]] = {}
    scenario_order: dict[str, int] = {}
    for r in results.scored_rows:
        scenario_order.setdefault(r.scenario, len(scenario_order))
        if not r.passed:
            reason = why(r) if r.failure is None else f"[{r.failure}] {why(r)}"
            groups.setdefault((r.target, r.scenario, r.turn, r.repetition, reason), []).append(r.mode)
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
            [*([target] if matrix else []), who(modes), s, str(t), str(rep), clip(reason, 200)]
            for (target, s, t, rep, reason), modes in shown
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
    who = who_ran(meta)
    per = "turns per target and mode" if meta.matrix else "turns per mode"
    return (
        who[0].upper()
        + who[1:]
        + (f", latency profile `{meta.latency_profile}`" if meta.latency_profile else "")
        + (f", {cache}" if cache else "")
        + f"; {meta.scenarios} scenarios, {meta.turns} {per}, {meta.repeat} repetition(s){warmup}; "
        f"started {meta.started_at}."
    )


def _findings_lines(summary: Summary, *, accuracy: bool = True) -> list[str]:
    """The headline in bold and the findings as a list (without accuracy when ``accuracy`` is false: a
    stand-in's turns); per target (a subsection each) for a matrix."""
    lines: list[str] = []
    top = headline(summary, accuracy=accuracy)
    if top:
        lines += [f"**{top}**", ""]
    if not summary.matrix:
        return lines + [f"- {sentence}" for sentence in findings(summary, None, accuracy=accuracy)]
    for entry in summary.targets:
        lines += [f"### Target `{entry.target.name}` ({entry.target.label})", ""]
        own = headline(entry.summary)
        if own:
            lines += [f"**{own}**", ""]
        lines += [f"- {sentence}" for sentence in findings(entry.summary, None)]
        lines.append("")
    return lines[:-1]


def _section(title: str, table: Table | None, caption: str = "") -> list[str]:
    """``## <title>``, the table and its caption, after a blank line; nothing without the table."""
    if table is None:
        return []
    return ["", f"## {title}", "", *render_table(*table), *(["", caption] if caption else [])]


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
    structure_only = meta.offline and not summary.matrix  # a stand-in's verdicts check the pipeline only
    if meta.offline:
        lines += [f"> **Note.** {OFFLINE_NOTICE} {pipeline_check(summary).capitalize()}.", ""]
    lines += [CONVERSATION_STATE_POLICY, ""]
    lines += verdict_block([run], verdict_title([run]))
    lines += distribution_block([run])
    lines += ["## Findings", ""]
    lines += _findings_lines(summary, accuracy=not structure_only)
    if summary.matrix:
        lines += ["", "## Model matrix", ""]
        lines += render_table(*targets_table(meta), align="llll")
        lines += ["", MATRIX_CAPTION]
        for title, header, rows in matrix_grids(summary, costs):
            lines += ["", f"### {title}", ""]
            lines += render_table(header, rows)
    summary_caption = (
        f"{LATENCY_CAPTION} {PERCENTILE_CAPTION} Accuracy intervals are Wilson 95% intervals, counting turns "
        f"as independent trials. {VALID_PLAN_CAPTION}"
    )
    summary_table = summary_rows(summary)
    if structure_only:
        summary_table = without_accuracy(summary_table)
    lines += _section("Summary", summary_table, summary_caption)
    if not structure_only:
        lines += _section("Paired comparison", paired_rows(summary), paired_caption(summary))
    lines += _section("Where the time goes", breakdown_table(results.rows), BREAKDOWN_CAPTION)
    lines += _section("Model calls", calls_table(results.rows), CALLS_CAPTION)
    kinds = "Kinds as defined in `docs/failures.md`; a failed turn never passes."
    lines += _section("Failures per kind", failure_rows(summary), kinds)
    examples = failure_examples_block(run)
    if examples:
        lines += ["", "### One example of each kind", "", *examples]
    if not structure_only:
        category = "Share of turns passed, Wilson 95% interval in brackets, turns in parentheses."
        lines += _section("Accuracy per category", category_rows(summary), category)
        lines += _section("pass^k (tau-bench)", pass_k_rows(summary))
        intervals = f"Intervals over {summary.repetitions} repetitions"
        lines += _section(intervals, interval_rows(summary), INTERVALS_CAPTION)
    lines += _section("Cost per 1,000 turns", cost_rows(costs), cost_caption(costs))
    growth = ", ".join(f"`{name}`" for name in growth_scenarios(summary))
    lines += _section(f"Context growth on {growth}", growth_rows(summary))
    provenance = provenance_rows(meta)
    if provenance:
        lines += ["", "## Provenance", ""]
        lines += render_table(["what", "value"], [[k, v] for k, v in provenance], align="ll")
    lines += _failing_turns(results)
    return markdown_safe("\n".join(lines) + "\n")


def category_table(runs: Sequence[ReportRun]) -> Table:
    """Categories as rows, every (run, target, mode) as a column: accuracy with its interval and the turns
    (calls per turn only for a structure run)."""
    columns, categories, cells = category_grid(runs)

    def text(run: ReportRun, c: CategorySummary | None) -> str:
        if c is None:
            return "–"
        if run.regime.structure_only:
            return f"{c.calls_mean:.1f} calls ({c.turns})"
        return f"{c.accuracy:.0%} [{percent_interval(c.accuracy_interval, 0)}] ({c.turns})"

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
    lines += render_table(*category_table(runs))
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
    return markdown_safe("\n".join(lines).rstrip() + "\n")
