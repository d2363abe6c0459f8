"""``erp-ai reliability``: the fault matrix (:mod:`benchmarks.reliability`), printed or put in a README."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from benchmarks.cli.bench import bench_error
from benchmarks.cli.common import PACKAGE_LOGGERS
from benchmarks.report.readme import update_readme


def reliability(
    ctx: typer.Context,
    readme: Annotated[
        Path | None,
        typer.Option(help="Also write the matrix into this README's marked reliability block."),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print every cell as one JSON line.")] = False,
    progress: Annotated[
        bool, typer.Option(help="Show the progress bar (on stderr, when it is a terminal).")
    ] = True,
) -> None:
    """Run the fault matrix: every offline and emulator fault × both modes × in process, AI server, Ollama.

    Each cell asks one question in a conversation with history and reports the failure kind, whether the
    conversation was left untouched, the calls and tokens counted, and whether a benchmark run with the
    same fault went on. Offline and loopback only; about half a minute. The faults make turns fail on
    purpose, so their per-turn warnings are not logged unless --log-level is given.
    """
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

    from benchmarks.reliability import (
        README_BLOCK,
        matrix_limits,
        matrix_markdown,
        matrix_plan,
        readme_block,
        run_matrix,
    )

    console = Console()
    status = Console(stderr=True)
    total = len(matrix_plan())
    with (
        _quiet_logs(unless=_log_level_given(ctx)),
        Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            console=status,
            disable=not progress or not status.is_terminal,  # off a terminal a bar is only noise
        ) as bar,
    ):
        task = bar.add_task("fault matrix", total=total)
        cells = run_matrix(on_cell=lambda cell: bar.advance(task))
    if as_json:
        for cell in cells:
            typer.echo(cell.model_dump_json())
    else:
        # soft_wrap: a Markdown table row is one line, whatever the terminal's width (or a pipe's 80 columns)
        console.print(
            f"{len(cells)} cells, {matrix_limits()}.", markup=False, highlight=False, soft_wrap=True
        )
        console.print(matrix_markdown(cells), markup=False, highlight=False, soft_wrap=True)
    if readme is not None:
        try:
            update_readme(readme, README_BLOCK, readme_block(cells))
        except (OSError, ValueError) as exc:
            raise bench_error(console, str(exc)) from None
        console.print(f"reliability matrix written to {readme}")


def _log_level_given(ctx: typer.Context) -> bool:
    """Whether ``erp-ai --log-level`` (or ``ERP_AI_LOG_LEVEL``) chose a level."""
    source = ctx.find_root().get_parameter_source("log_level")
    return source is not None and source.name in ("COMMANDLINE", "ENVIRONMENT")


@contextmanager
def _quiet_logs(*, unless: bool) -> Iterator[None]:
    """Raise the project's loggers to ERROR inside the block (``unless`` the user chose a level): a failing
    turn logs a WARNING, and the fault matrix fails dozens of turns on purpose."""
    loggers = [] if unless else [logging.getLogger(name) for name in PACKAGE_LOGGERS]
    levels = [logger.level for logger in loggers]
    for logger in loggers:
        logger.setLevel(max(logger.getEffectiveLevel(), logging.ERROR))
    try:
        yield
    finally:
        for logger, level in zip(loggers, levels, strict=True):
            logger.setLevel(level)
