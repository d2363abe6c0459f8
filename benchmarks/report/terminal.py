"""The terminal summary table (rich)."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

from benchmarks.report.aggregate import Summary
from benchmarks.report.findings import OFFLINE_NOTICE, findings
from benchmarks.report.markdown import summary_rows
from benchmarks.results import RunMeta


def print_summary(console: Console, summary: Summary, meta: RunMeta) -> None:
    """Print the per-mode table, then the findings."""
    header, rows = summary_rows(summary)
    table = Table(title=f"erp-ai bench · provider {meta.provider}", title_justify="left")
    for i, column in enumerate(header):
        table.add_column(column, justify="left" if i == 0 else "right", no_wrap=i == 0)
    for row in rows:
        table.add_row(*row)
    console.print(table)
    for sentence in findings(summary, None):
        console.print(f"• {sentence}")
    if meta.offline:
        console.print(f"[yellow]{OFFLINE_NOTICE}[/yellow]")
