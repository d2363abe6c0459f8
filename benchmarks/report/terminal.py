"""The terminal summary table (rich): compact enough for an 80-column terminal."""

from __future__ import annotations

from rich import box
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from benchmarks.report.aggregate import Summary
from benchmarks.report.findings import OFFLINE_NOTICE, findings, headline
from benchmarks.results import RunMeta


def summary_table(summary: Summary, meta: RunMeta) -> Table:
    """Per mode: accuracy, calls, tokens, latency p50/p95 and time to the first answer token p50 ("1st"),
    measured, then simulated ("sim…") when profiled, and harness overhead."""
    simulated = any(m.simulated_p50 is not None for m in summary.modes)
    first = any(m.first_answer_p50 is not None for m in summary.modes)
    simulated_first = any(m.simulated_first_answer_p50 is not None for m in summary.modes)
    table = Table(
        title=f"erp-ai bench · {meta.provider} · per turn: calls, tokens in/out, latency, first answer token "
        "(1st) and harness ms",
        title_justify="left",
        box=box.SIMPLE_HEAD,
        pad_edge=False,
        collapse_padding=True,
    )
    columns = ["mode", "acc", "calls", "max", "in", "out", "p50", "p95"]
    columns += ["1st"] if first else []
    columns.append("harn")
    columns += ["sim50", "sim95"] if simulated else []
    columns += ["sim1st"] if simulated_first else []
    columns.append("fail")
    for i, column in enumerate(columns):
        table.add_column(column, justify="left" if i == 0 else "right", no_wrap=True)

    def ms(value: float | None, decimals: int) -> str:
        return "–" if value is None else f"{value:.{decimals}f}"

    for m in summary.modes:
        cells = [
            m.mode,
            f"{m.accuracy:.0%}",
            f"{m.calls_mean:.2f}",
            str(m.calls_max),
            f"{m.input_tokens_mean:.0f}",
            f"{m.output_tokens_mean:.0f}",
            f"{m.latency_p50:.1f}",
            f"{m.latency_p95:.1f}",
        ]
        cells += [ms(m.first_answer_p50, 1)] if first else []
        cells.append(f"{m.harness_p50:.2f}")
        cells += [ms(m.simulated_p50, 0), ms(m.simulated_p95, 0)] if simulated else []
        cells += [ms(m.simulated_first_answer_p50, 0)] if simulated_first else []
        cells.append(str(m.failed_turns))
        table.add_row(*cells)
    return table


def print_summary(console: Console, summary: Summary, meta: RunMeta) -> None:
    """Print the per-mode table, the headline, then the findings."""
    console.print(summary_table(summary, meta))
    top = headline(summary)
    if top:
        console.print(f"[bold]{escape(top)}[/bold]")
    for sentence in findings(summary, None):
        console.print(f"• {sentence}")
    if meta.offline:
        console.print(f"[yellow]{OFFLINE_NOTICE}[/yellow]")
