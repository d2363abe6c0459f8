"""``erp-ai rescore``: score a recorded run again with the current scorer and re-render its reports."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.markup import escape

from benchmarks.cli.bench import bench_error, read_run, rescore_recorded
from benchmarks.report import print_summary, write_reports
from benchmarks.report.runs import results_path
from benchmarks.rescore import ScenarioNotFound
from benchmarks.results import RESULTS_FILE, ResultsWriter
from benchmarks.scenario import ScenarioError
from benchmarks.transcripts import TRANSCRIPTS_FILE
from shared.errors import ConfigurationError, ErpAiError

RESCORED_DIR = "rescored"


def rescore_command(
    results: Annotated[
        Path, typer.Argument(help=f"A {RESULTS_FILE} written by `erp-ai bench`, or its folder.")
    ],
    out: Annotated[
        Path | None,
        typer.Option(
            help=f"Where to write the re-scored {RESULTS_FILE} and reports. Default: RESULTS/../rescored."
        ),
    ] = None,
    scenarios: Annotated[
        list[Path] | None,
        typer.Option(
            help="Scenario files the run used. Default: those its run line names, else the packaged suite."
        ),
    ] = None,
    db_url: Annotated[
        str | None, typer.Option(help="The ERP the run was scored against. Default: the demo ERP.")
    ] = None,
) -> None:
    """Score every recorded turn again with the current scorer, as the turn's user sees the ERP, and write
    the re-scored results and reports beside them, calling no model.

    A real-model run costs an hour; improving the scorer must not. The answers, operations, state, tokens
    and timings are kept as recorded; only the scores change. The terminal lists the turns whose verdict
    changed. Example: erp-ai rescore reports/latest
    """
    console = Console()
    results = results_path(results)
    run = read_run(console, results)
    target = out or results.parent / RESCORED_DIR
    written = target / RESULTS_FILE
    if written.resolve() == results.resolve():
        raise bench_error(console, f"{written} is the run being scored: give --out another folder")
    if not run.rows:
        raise bench_error(console, f"{results} holds no turn: nothing to re-score")
    try:
        rescored, summary = rescore_recorded(run, scenarios, db_url)
    except (ScenarioError, ScenarioNotFound, ErpAiError) as exc:
        raise bench_error(console, str(exc)) from None
    target.mkdir(parents=True, exist_ok=True)
    ResultsWriter(written).rewrite([rescored.meta, *rescored.rows])
    try:
        files = write_reports(rescored, target, transcripts=results.parent / TRANSCRIPTS_FILE)
    except ConfigurationError as exc:  # a report path that is a symbolic link
        raise bench_error(console, str(exc)) from None
    print_summary(console, files.summary, rescored.meta, rescored)
    console.print(
        f"{summary.turns} turns re-scored: {len(summary.now_passing)} now pass, "
        f"{len(summary.now_failing)} now fail"
    )
    for label in summary.now_passing:
        console.print(f"  [green]now passes[/green] {escape(label)}")
    for label in summary.now_failing:
        console.print(f"  [red]now fails[/red]  {escape(label)}")
    console.print(f"{written} · {files.markdown} · {files.html}")
