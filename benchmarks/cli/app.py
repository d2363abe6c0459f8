"""``erp-ai``: the typer app, every command registered on it (each lives in its own module of
:mod:`benchmarks.cli`), and the error lines and exit codes they share."""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Callable
from enum import StrEnum
from typing import Annotated

import typer
from rich.markup import escape

from benchmarks.cli import bench, chat, loadtest, reliability, report, rescore, servers, turns
from benchmarks.cli.common import PACKAGE_LOGGERS, Command, Group, err_console
from benchmarks.cli.ops import ops_app
from shared.errors import ErpAiError

EXIT_CODES = (
    "Exit codes: 0 done (the turn answered); 1 the turn failed (the model, the provider or an operation: the "
    "answer says what happened); 2 refused before any model call: bad input, an option the mode ignores, "
    "configuration (a missing package or token, a port in use), an unknown user, another user's "
    "conversation, or a database that cannot be read or written. Errors are one line; --debug shows the "
    'traceback of unexpected ones. With --json, a refusal prints {"error": {"kind": ..., "message": '
    "...}} on stdout."
)
"""The exit codes of every command, in the root ``--help`` epilog."""


app = typer.Typer(
    name="erp-ai",
    cls=Group,
    help=(
        "Two-call planner vs native tool calling over one demo ERP. "
        'Start with `erp-ai bench` (the benchmark) or `erp-ai ask "¿Cuánto vendimos en 2025?"`.'
    ),
    epilog=EXIT_CODES,
    no_args_is_help=True,
    rich_markup_mode="rich",
    pretty_exceptions_enable=False,
)

DEBUG_ENV = "ERP_AI_DEBUG"
_debug = False
"""Set by ``--debug`` (or ``ERP_AI_DEBUG=1``): let unexpected errors show their traceback."""

LOG_LEVEL_ENV = "ERP_AI_LOG_LEVEL"


class LogLevel(StrEnum):
    DEBUG = "DEBUG"
    INFO = "INFO"
    WARNING = "WARNING"
    ERROR = "ERROR"
    CRITICAL = "CRITICAL"


class _CliLogHandler(logging.StreamHandler):  # type: ignore[type-arg]
    """The handler ``--log-level`` installs (a class of its own, so a second configuration replaces it)."""


class _OneLineFormatter(logging.Formatter):
    """One line per record: an exception it carries (e.g. an operation's error with SQLAlchemy's SQL in its
    text) shows as its type and first message line, with a hint that ``--debug`` shows the traceback."""

    def format(self, record: logging.LogRecord) -> str:
        exc_info, exc_text, stack_info = record.exc_info, record.exc_text, record.stack_info
        record.exc_info = record.exc_text = record.stack_info = None
        try:
            line = super().format(record)
        finally:  # the record may reach other handlers, which format it as they like
            record.exc_info, record.exc_text, record.stack_info = exc_info, exc_text, stack_info
        if exc_info and exc_info[1] is not None:
            error = exc_info[1]
            first = (str(error).strip().splitlines() or [""])[0][:200]
            line += f" ({type(error).__name__}: {first}; --debug shows the traceback)"
        return line.replace("\n", " ")


LOG_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


def configure_logging(level: LogLevel | str, *, debug: bool = False) -> Callable[[], None]:
    """Send the :data:`PACKAGE_LOGGERS`' records at ``level`` and above to stderr, one line each (with
    tracebacks under ``debug``); return the function that restores the loggers as they were.

    The library never configures logging (:mod:`shared.logs`); third-party loggers keep their defaults.
    Calling it again replaces the handler instead of adding one; the CLI restores the loggers when the
    command ends, so one process can run several commands without records piling up on a stale stream.
    """
    handler = _CliLogHandler(sys.stderr)
    handler.setFormatter(logging.Formatter(LOG_FORMAT) if debug else _OneLineFormatter(LOG_FORMAT))
    loggers = [logging.getLogger(name) for name in PACKAGE_LOGGERS]
    previous = [(logger, logger.level) for logger in loggers]
    for logger in loggers:
        for old in [h for h in logger.handlers if isinstance(h, _CliLogHandler)]:
            logger.removeHandler(old)
        logger.addHandler(handler)
        logger.setLevel(str(level).upper())

    def restore() -> None:
        for logger, old_level in previous:
            logger.removeHandler(handler)
            logger.setLevel(old_level)

    return restore


def _print_version(value: bool) -> None:
    if value:
        from importlib.metadata import version

        typer.echo(f"erp-ai-harness {version('erp-ai-harness')}")
        raise typer.Exit()


@app.callback()
def _root(
    ctx: typer.Context,
    version: Annotated[
        bool,
        typer.Option("--version", callback=_print_version, is_eager=True, help="Show the version and exit."),
    ] = False,
    debug: Annotated[
        bool,
        typer.Option(
            "--debug", envvar=DEBUG_ENV, help="Show the full traceback of unexpected errors (ERP_AI_DEBUG=1)."
        ),
    ] = False,
    log_level: Annotated[
        LogLevel,
        typer.Option(
            "--log-level",
            envvar=LOG_LEVEL_ENV,
            case_sensitive=False,
            help="Log the project's records (one per turn at INFO, failures at WARNING) at this level and "
            f"above to stderr ({LOG_LEVEL_ENV}).",
        ),
    ] = LogLevel.WARNING,
) -> None:
    """Two-call planner vs native tool calling over one demo ERP."""
    global _debug
    _debug = debug
    ctx.call_on_close(configure_logging(log_level, debug=debug))


COMMANDS: dict[str, Callable[..., None]] = {
    "ask": turns.ask,
    "chat": chat.chat,
    "serve": servers.serve,
    "emulate": servers.emulate,
    "bench": bench.bench,
    "report": report.report,
    "rescore": rescore.rescore_command,
    "reliability": reliability.reliability,
    "compare": report.compare,
    "loadtest": loadtest.loadtest,
}
for _name, _command in COMMANDS.items():
    app.command(_name, cls=Command)(_command)
app.add_typer(ops_app, name="ops")
for _info in ops_app.registered_commands:
    _info.cls = Command


def main(argv: list[str] | None = None) -> None:
    """Console-script entry point: errors end in one line and exit code 2, unless ``--debug``.

    ``ErpAiError`` says what to do (a bad setting, a missing package, a database that cannot be opened);
    anything else is unexpected and names itself, with a hint to rerun with ``--debug`` for the traceback.
    """
    try:
        app(args=argv)
    except ErpAiError as exc:
        if _debug:
            raise
        err_console.print(f"[bold red]Error:[/] {escape(str(exc))}", soft_wrap=True)
        raise SystemExit(2) from None
    except Exception as exc:
        if _debug or os.environ.get(DEBUG_ENV, "") not in ("", "0"):
            raise
        err_console.print(
            f"[bold red]Unexpected error:[/] {escape(type(exc).__name__)}: {escape(str(exc)[:500])} "
            f"(rerun with --debug or {DEBUG_ENV}=1 for the traceback)",
            soft_wrap=True,
        )
        raise SystemExit(2) from None


if __name__ == "__main__":
    main()
