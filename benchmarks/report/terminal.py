"""The terminal summary table (rich): compact enough for an 80-column terminal."""

from __future__ import annotations

from collections.abc import Sequence

from rich import box
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from benchmarks.report.findings import OFFLINE_NOTICE, findings, headline, ms_text, pipeline_check
from benchmarks.report.runs import ReportRun, first_line, regime_of
from benchmarks.report.splits import decision
from benchmarks.report.summary import ModeSummary, Summary, tokens_text
from benchmarks.report.tables import Column, mode_table
from benchmarks.report.verdict_table import runs_verdict_lines
from benchmarks.results import RunMeta, RunResults


def summary_table(summary: Summary, meta: RunMeta) -> Table:
    """Per mode (and target, in a matrix): accuracy, calls, tokens, latency p50/p95 and time to the first
    answer token p50 ("1st"), measured, then simulated ("sim…") when profiled, harness overhead and the
    valid-plan rate ("plan", – when the engines did not record it). Times in ms as the findings write them
    (one decimal under 100, grouped from there), so the table fits 80 columns."""
    modes = [m for _, m in summary.cells()]
    simulated = any(m.simulated_p50 is not None for m in modes)
    first = any(m.first_answer_p50 is not None for m in modes)
    simulated_first = any(m.simulated_first_answer_p50 is not None for m in modes)
    who = f"{len(summary.targets)} targets" if summary.matrix else meta.provider
    table = Table(
        title=f"erp-ai bench · {who} · per turn: calls, tokens in/out, latency, first answer token "
        "(1st), harness ms and valid plans",
        title_justify="left",
        box=box.SIMPLE_HEAD,
        pad_edge=False,
        collapse_padding=True,
    )

    def ms(value: float | None) -> str:
        return "–" if value is None else ms_text(value)

    def plan(m: ModeSummary) -> str:
        return "–" if m.valid_plan_rate is None else f"{m.valid_plan_rate:.0%}"

    columns: list[Column | None] = [
        None if meta.offline else ("acc", lambda m: f"{m.accuracy:.0%}"),  # a stand-in's is no result
        ("calls", lambda m: f"{m.calls_mean:.2f}"),
        ("max", lambda m: str(m.calls_max)),
        ("in", lambda m: tokens_text(m, m.input_tokens_mean)),
        ("out", lambda m: tokens_text(m, m.output_tokens_mean)),
        ("p50", lambda m: ms(m.latency_p50)),
        ("p95", lambda m: ms(m.latency_p95)),
        ("1st", lambda m: ms(m.first_answer_p50)) if first else None,
        ("harn", lambda m: ms(m.harness_p50)),
        ("sim50", lambda m: ms(m.simulated_p50)) if simulated else None,
        ("sim95", lambda m: ms(m.simulated_p95)) if simulated else None,
        ("sim1st", lambda m: ms(m.simulated_first_answer_p50)) if simulated_first else None,
        ("plan", plan),
        ("fail", lambda m: str(m.failed_turns)),
    ]
    header, rows = mode_table(summary, [c for c in columns if c is not None])
    labels = 2 if summary.matrix else 1
    for i, column in enumerate(header):  # a narrow or piped output wraps a cell, never cuts it
        label = i < labels  # a mode's or target's name stays whole; a figure may fold
        table.add_column(column, justify="left" if label else "right", overflow="fold", no_wrap=label)
    for row in rows:
        table.add_row(*row)
    return table


def print_table(console: Console, table: Table) -> None:
    """Print ``table`` whole: a terminal's width folds a long cell onto more lines; output that is not a
    terminal (a pipe, a CI log, a file) is as wide as the table needs, so no figure is folded either."""
    if console.is_terminal:
        console.print(table)
        return
    needed = console.measure(table, options=console.options.update(max_width=10_000)).maximum
    if needed <= console.width:
        console.print(table)
        return
    # print() never renders wider than its console: the table gets a console of its own width
    Console(file=console.file, width=needed, no_color=console.no_color, highlight=False).print(table)


def print_summary(
    console: Console, summary: Summary, meta: RunMeta, results: RunResults | None = None
) -> None:
    """Print the per-mode table, the headline, the verdict a reader should act on (on the held-out questions
    when ``results`` holds both sets; not for a stand-in), then the findings (each target's, for a matrix)."""
    print_table(console, summary_table(summary, meta))
    accuracy = not meta.offline  # a stand-in's verdicts check the pipeline; they are no result
    top = headline(summary, accuracy=accuracy)
    if top:
        console.print(f"[bold]{escape(top)}[/bold]")
    if results is not None and accuracy and not summary.matrix:
        for lead in decision(results, summary, regime_of(meta), meta.model).leads:
            console.print(f"[bold]Verdict:[/bold] {escape(lead)}")
    for sentence in findings(summary, None, accuracy=accuracy):
        console.print(f"• {escape(sentence)}")
    if meta.offline:
        console.print(f"[yellow]{OFFLINE_NOTICE}[/yellow]")
        console.print(pipeline_check(summary))


def print_combined(console: Console, runs: Sequence[ReportRun]) -> None:
    """Print each run's first line, a compact verdict table (one row per run and mode: accuracy, calls,
    input tokens, latency and first answer p50, failed turns; ``*`` marks simulated times), the verdicts."""
    for run in runs:
        console.print(f"[bold]{escape(run.label)}[/bold]: {escape(first_line(run.results.meta))}")
    table = Table(box=box.SIMPLE_HEAD, pad_edge=False, collapse_padding=True)
    for i, column in enumerate(("run", "mode", "acc", "calls", "in", "p50 ms", "1st ms", "fail")):
        table.add_column(column, justify="left" if i < 2 else "right", no_wrap=i < 2)
    for line in runs_verdict_lines(runs):
        m, regime = line.mode, line.regime
        simulated = regime.simulated and m.simulated_p50 is not None
        latency = m.simulated_p50 if simulated else m.latency_p50
        first = m.simulated_first_answer_p50 if simulated else m.first_answer_p50
        mark = "*" if simulated else ""
        table.add_row(
            escape(line.run),
            escape(m.mode if line.target is None else f"{line.target}·{m.mode}"),
            "–" if regime.structure_only else f"{m.accuracy:.0%}",
            f"{m.calls_mean:.2f}",
            tokens_text(m, m.input_tokens_mean),
            "–" if latency is None else f"{ms_text(latency)}{mark}",
            "–" if first is None else f"{ms_text(first)}{mark}",
            str(m.failed_turns),
        )
    print_table(console, table)
    for run in runs:
        verdict = decision(run.results, run.summary, run.regime, run.results.meta.model)
        for sentence in verdict.leads:
            console.print(f"• {escape(run.label)}: {escape(sentence)}")
