"""What every ``erp-ai`` command shares: the consoles, one-line refusals, readable help and the options."""

from __future__ import annotations

import inspect
import json
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from enum import StrEnum
from typing import TYPE_CHECKING, Annotated, Any, Literal

import typer
from rich.console import Console
from rich.markup import escape

# typer's own copy of click: the errors its parser raises (typer exports only BadParameter of them).
from typer._click.exceptions import NoArgsIsHelpError, UsageError
from typer.core import TyperCommand, TyperGroup

from shared.errors import (
    ConfigurationError,
    ConversationAccessDenied,
    ErpAiError,
    InputError,
    OperationError,
    StorageError,
)

if TYPE_CHECKING:
    from shared.erp.database import Erp

console = Console()
err_console = Console(stderr=True)

PACKAGE_LOGGERS = ("planner_mode", "toolcalling_mode", "shared", "benchmarks")
"""The project's loggers (:mod:`shared.logs`); ``--log-level`` configures these and no third-party one."""
SERVER_TOKEN_ENV = "ERP_AI_SERVER_TOKEN"


def _reflow(text: str | None) -> str | None:
    """``text`` with the line breaks inside each paragraph removed, so that rich re-wraps it to the terminal
    (docstrings are wrapped at the source's line length); a paragraph that starts with ``\\b`` is kept."""
    if not text:
        return text
    paragraphs = inspect.cleandoc(text).split("\n\n")
    return "\n\n".join(
        p if p.startswith("\b") else " ".join(line.strip() for line in p.splitlines()) for p in paragraphs
    )


class _Readable:
    """Help paragraphs re-wrapped to the terminal; flags shown without a ``<bool>`` type (no metavar); a
    command line the parser refuses (an unknown option or command, a value out of range) is one error line
    naming the help to read, exit 2, instead of typer's framed box."""

    help: str | None
    epilog: str | None

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.help = _reflow(self.help)
        self.epilog = _reflow(self.epilog)

    def get_params(self, ctx: Any) -> list[Any]:
        params: list[Any] = super().get_params(ctx)  # type: ignore[misc]
        for param in params:
            if getattr(param, "is_flag", False) and param.metavar is None:
                param.metavar = ""
        return params

    def make_context(self, info_name: str | None, args: list[str], *rest: Any, **kwargs: Any) -> Any:
        params: list[Any] = getattr(self, "params", [])
        as_json = "--json" in args and any("--json" in getattr(param, "opts", ()) for param in params)
        with _one_line_usage_errors(as_json=as_json):
            return super().make_context(info_name, args, *rest, **kwargs)  # type: ignore[misc]


@contextmanager
def _one_line_usage_errors(*, as_json: bool = False) -> Iterator[None]:
    """A parser error as :func:`fail`'s one line (kind ``usage``; as JSON too when the command line asks
    a command that has ``--json`` for it)."""
    try:
        yield
    except NoArgsIsHelpError:  # the help itself, printed by typer
        raise
    except UsageError as exc:
        where = exc.ctx.command_path if exc.ctx is not None else "erp-ai"
        message = " ".join(exc.format_message().split())
        with errors_as_json(as_json):
            raise fail(f"{message.rstrip('.')}. See '{where} --help'.", exc.exit_code, kind="usage") from None


class Command(_Readable, TyperCommand):
    """Every ``erp-ai`` command."""


class Group(_Readable, TyperGroup):
    """The root app and ``ops``."""

    def resolve_command(self, *args: Any, **kwargs: Any) -> Any:
        with _one_line_usage_errors():
            return super().resolve_command(*args, **kwargs)


ErrorKind = Literal["usage", "input", "access", "configuration", "storage"]
"""What a refused command's ``{"error": {"kind": ...}}`` says under ``--json``: an option the command cannot
honour, a bad question or conversation id, another user's conversation, a setting to change (a package, a
token, a port, an unknown user), a database that cannot be read or written."""

_json_errors: ContextVar[bool] = ContextVar("erp_ai_json_errors", default=False)
"""True while a command runs with ``--json``: a refusal is then also a JSON object on stdout."""


@contextmanager
def errors_as_json(enabled: bool) -> Iterator[None]:
    token = _json_errors.set(enabled)
    try:
        yield
    finally:
        _json_errors.reset(token)


def fail(message: str, code: int = 2, *, kind: ErrorKind = "configuration") -> typer.Exit:
    """Print ``message`` as one error line on stderr (under ``--json`` also ``{"error": {"kind", "message"}}``
    on stdout, so that a script tells a refusal from a turn and from a crash); return the exit to raise."""
    if _json_errors.get():
        typer.echo(json.dumps({"error": {"kind": kind, "message": message}}, ensure_ascii=False))
    err_console.print(f"[bold red]Error:[/] {escape(message)}", soft_wrap=True)
    return typer.Exit(code)


def refuse(error: ErpAiError) -> typer.Exit:
    """:func:`fail` with exit code 2 and the kind of ``error``."""
    kind: ErrorKind = "configuration"
    if isinstance(error, ConversationAccessDenied):
        kind = "access"
    elif isinstance(error, (InputError, OperationError)):  # OperationError: a request the ERP refused
        kind = "input"
    elif isinstance(error, StorageError):
        kind = "storage"
    return fail(str(error), 2, kind=kind)


def given(ctx: typer.Context, name: str) -> bool:
    """Whether the option ``name`` was typed on the command line (not its default, not an environment
    variable, which may be set for several commands at once)."""
    source = ctx.get_parameter_source(name)
    return source is not None and source.name == "COMMANDLINE"


def open_erp(db_url: str | None, demo: bool = False) -> Erp:
    """The ERP a command works on: the demo at the default location or with ``--demo``, else ``--db-url`` as
    it is (the least surprising rule: an existing database of yours is never written to by opening it)."""
    from shared.erp.database import missing_erp_tables, open_demo_erp, open_erp

    if db_url is None or demo:
        return open_demo_erp(db_url)
    erp = open_erp(db_url)
    missing = missing_erp_tables(erp)
    if missing:  # the sales operations and the ERP's users read them
        erp.engine.dispose()
        raise ConfigurationError(
            f"The database at --db-url has no ERP sales tables ({', '.join(missing)}): the CLI's operations "
            "need the demo ERP's schema. Give --demo to create the demo in a new database."
        )
    return erp


class Provider(StrEnum):
    offline = "offline"
    ollama = "ollama"
    gemini = "gemini"
    openai = "openai"


DbUrl = Annotated[
    str | None,
    typer.Option(
        "--db-url",
        envvar="ERP_AI_DB_URL",
        help="ERP database URL ($ERP_AI_DB_URL), opened as it is: nothing is created or seeded in it unless "
        "--demo is given. Without it: the demo ERP in ./.erp-ai/erp.sqlite3, seeded on first use.",
    ),
]
DemoOpt = Annotated[
    bool,
    typer.Option(
        "--demo",
        help="Create and seed the demo ERP at --db-url if that database is new (one that holds other tables "
        "is refused, never seeded). Implied without --db-url.",
    ),
]
UserOpt = Annotated[
    str,
    typer.Option(
        "--user",
        "-u",
        envvar="ERP_AI_USER",
        help="The ERP user the turn runs as (demo users: gerente, ana, bruno); it owns the conversations it "
        "starts and sees only what its role allows.",
    ),
]
ProviderOpt = Annotated[Provider, typer.Option("--provider", "-p", help="Model provider.")]
ModelOpt = Annotated[
    str | None, typer.Option("--model", "-m", help="Model name (provider default if omitted).")
]
BaseUrlOpt = Annotated[
    str | None, typer.Option("--base-url", help="Provider base URL (Ollama host, OpenAI-compatible server…).")
]
PlanModelOpt = Annotated[
    str | None, typer.Option("--plan-model", help="Planner only: model for call 1 (default: --model).")
]
AnswerModelOpt = Annotated[
    str | None, typer.Option("--answer-model", help="Planner only: model for call 2 (default: --model).")
]
MaxTokensOpt = Annotated[
    int,
    typer.Option(
        "--max-tokens",
        envvar="ERP_AI_MAX_TOKENS",
        min=1,
        help="Output cap of every model call (plan, answer, each agent step), in tokens.",
    ),
]
TimeoutOpt = Annotated[
    float,
    typer.Option(
        "--timeout",
        envvar="ERP_AI_TIMEOUT",
        min=0.001,
        help="Timeout of every model request, in seconds (a timed-out turn fails with kind 'timeout').",
    ),
]
