"""``erp-ai``: the one command-line entry point.

The CLI is the outermost layer: it may import every package, and nothing imports it. It lives in
``benchmarks/`` because that is the outermost package of the layout the user asked for
(``benchmarks → modes → shared``).
"""

from __future__ import annotations

import asyncio
import errno
import inspect
import json
import logging
import os
import socket
import sys
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from enum import StrEnum
from typing import TYPE_CHECKING, Annotated, Any, Literal

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table
from typer.core import TyperCommand, TyperGroup

from benchmarks.bench_cli import MaxTokensOpt, TimeoutOpt
from benchmarks.stand_ins.emulators.faults import FAULT_MODES
from shared.errors import (
    ConfigurationError,
    ConversationAccessDenied,
    ErpAiError,
    InputError,
    OperationError,
    StorageError,
)
from shared.events import AnswerDelta, TurnDone
from shared.llm.factory import DEFAULT_MAX_TOKENS, DEFAULT_TIMEOUT_S
from shared.security import DEMO_CALLER, Caller

if TYPE_CHECKING:
    from langchain_core.language_models import BaseChatModel

    from shared.engine import AssistantEngine
    from shared.erp.database import Erp
    from shared.turn import TurnResult

EXIT_CODES = (
    "Exit codes: 0 done (the turn answered); 1 the turn failed (the model, the provider or an operation: the "
    "answer says what happened); 2 refused before any model call: bad input, an option the mode ignores, "
    "configuration (a missing package or token, a port in use), an unknown user, another user's "
    "conversation, or a database that cannot be read or written. Errors are one line; --debug shows the "
    'traceback of unexpected ones. With --json, a refusal prints {"error": {"kind": ..., "message": '
    "...}} on stdout."
)
"""The exit codes of every command, in the root ``--help`` epilog."""


def _reflow(text: str | None) -> str | None:
    """``text`` with the line breaks inside each paragraph removed, so that rich re-wraps it to the terminal
    (docstrings are wrapped at the source's line length); a paragraph that starts with ``\\b`` is kept."""
    if not text:
        return text
    paragraphs = inspect.cleandoc(text).split("\n\n")
    return "\n\n".join(
        p if p.startswith("\b") else " ".join(line.strip() for line in p.splitlines()) for p in paragraphs
    )


def _untyped_flags(params: list[Any]) -> list[Any]:
    """Flags take no value: show no ``<bool>`` type for them in the help (an empty metavar)."""
    for param in params:
        if getattr(param, "is_flag", False) and param.metavar is None:
            param.metavar = ""
    return params


class _Command(TyperCommand):
    """Every ``erp-ai`` command: help paragraphs re-wrapped to the terminal, flags shown without a type."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.help = _reflow(self.help)
        self.epilog = _reflow(self.epilog)

    def get_params(self, ctx: Any) -> list[Any]:
        return _untyped_flags(super().get_params(ctx))


class _Group(TyperGroup):
    """The root app and ``ops``: as :class:`_Command`."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.help = _reflow(self.help)
        self.epilog = _reflow(self.epilog)

    def get_params(self, ctx: Any) -> list[Any]:
        return _untyped_flags(super().get_params(ctx))


app = typer.Typer(
    name="erp-ai",
    cls=_Group,
    help=(
        "Two-call planner vs native tool calling over one demo ERP. "
        'Start with `erp-ai bench` (the benchmark) or `erp-ai ask "¿Cuánto vendimos en 2025?"`.'
    ),
    epilog=EXIT_CODES,
    no_args_is_help=True,
    rich_markup_mode="rich",
    pretty_exceptions_enable=False,
)
ops_app = typer.Typer(
    cls=_Group,
    help="List or call the ERP's sales operations directly (no model involved).",
    no_args_is_help=True,
)
app.add_typer(ops_app, name="ops")

console = Console()
err_console = Console(stderr=True)

DEBUG_ENV = "ERP_AI_DEBUG"
_debug = False
"""Set by ``--debug`` (or ``ERP_AI_DEBUG=1``): let unexpected errors show their traceback."""

LOG_LEVEL_ENV = "ERP_AI_LOG_LEVEL"
PACKAGE_LOGGERS = ("planner_mode", "toolcalling_mode", "shared", "benchmarks")
"""The project's loggers (:mod:`shared.logs`); ``--log-level`` configures these and no third-party one."""


class LogLevel(StrEnum):
    DEBUG = "DEBUG"
    INFO = "INFO"
    WARNING = "WARNING"
    ERROR = "ERROR"
    CRITICAL = "CRITICAL"


class _CliLogHandler(logging.StreamHandler):  # type: ignore[type-arg]
    """The handler ``--log-level`` installs (a class of its own, so a second configuration replaces it)."""


class _OneLineFormatter(logging.Formatter):
    """One line per record: an exception a record carries (``exc_info``, e.g. an operation's internal error
    with SQLAlchemy's SQL and parameters in its text) shows as its type and the first line of its message,
    and a hint that ``--debug`` shows the traceback; the stack of ``stack_info`` is left out too."""

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
    """Send the project's log records at ``level`` and above to stderr, one line each; return the undo.

    The library never configures logging (:mod:`shared.logs`); the CLI is an application, so it does, for
    the :data:`PACKAGE_LOGGERS` only: third-party libraries (httpx, LangChain) keep their own defaults.
    A record's exception traceback is shown with ``debug`` only (``--debug``); otherwise the record stays one
    line naming the exception. Calling it again replaces the handler instead of adding one. The returned
    function restores the loggers as they were: the CLI calls it when the command ends, so one process can
    run several commands (tests, an application calling :func:`main`) without records piling up on a stale
    stream.
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


class Mode(StrEnum):
    planner = "planner"
    toolcalling = "toolcalling"


class ContextPolicy(StrEnum):
    windowed = "windowed"
    full_history = "full_history"


class Provider(StrEnum):
    offline = "offline"
    ollama = "ollama"
    gemini = "gemini"
    openai = "openai"


class EmulatedProvider(StrEnum):
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
MemoryUrl = Annotated[
    str | None,
    typer.Option(
        "--memory-url",
        envvar="ERP_AI_MEMORY_URL",
        help="Conversation memory URL (default: the ERP database).",
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
ModeOpt = Annotated[Mode, typer.Option("--mode", help="Architecture that answers.")]
ContextOpt = Annotated[
    ContextPolicy, typer.Option("--context", help="Tool calling only: what context the agent gets.")
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
StructuredOpt = Annotated[
    bool, typer.Option("--structured", help="Tool calling only: structured final answer with memory/state.")
]
SERVER_TOKEN_ENV = "ERP_AI_SERVER_TOKEN"
ServerOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--server",
        help="Planner only: remote AI server URL (repeat for round-robin). The server's own model answers, "
        "so --provider, --model, --plan-model, --answer-model, --base-url, --latency-profile and "
        f"--max-tokens do not apply; its bearer token is read from ${SERVER_TOKEN_ENV}.",
    ),
]
LatencyOpt = Annotated[
    str | None,
    typer.Option("--latency-profile", help="Offline model only: simulate gpu-8b, cpu-8b or gemini-flash."),
]
NoStreamOpt = Annotated[
    bool,
    typer.Option(
        "--no-stream",
        help="Print the answer once the turn has ended, instead of as the model writes it.",
    ),
]

FINAL_ANSWER_RULE = "── final answer (it replaces the text above) ──"
"""Printed before the final answer when it differs from the text streamed (a failure after partial text)."""


ErrorKind = Literal["usage", "input", "access", "configuration", "storage"]
"""What a refused command's ``{"error": {"kind": ...}}`` says under ``--json``: an option the command cannot
honour, a bad question or conversation id, another user's conversation, a setting to change (a package, a
token, a port, an unknown user), a database that cannot be read or written."""

_json_errors: ContextVar[bool] = ContextVar("erp_ai_json_errors", default=False)
"""True while a command runs with ``--json``: a refusal is then also a JSON object on stdout."""


@contextmanager
def _errors_as_json(enabled: bool) -> Iterator[None]:
    token = _json_errors.set(enabled)
    try:
        yield
    finally:
        _json_errors.reset(token)


def _fail(message: str, code: int = 2, *, kind: ErrorKind = "configuration") -> typer.Exit:
    """Print ``message`` as one error line on stderr (under ``--json`` also ``{"error": {"kind", "message"}}``
    on stdout, so that a script tells a refusal from a turn and from a crash); return the exit to raise."""
    if _json_errors.get():
        typer.echo(json.dumps({"error": {"kind": kind, "message": message}}, ensure_ascii=False))
    err_console.print(f"[bold red]Error:[/] {escape(message)}", soft_wrap=True)
    return typer.Exit(code)


def _refuse(error: ErpAiError) -> typer.Exit:
    """:func:`_fail` with exit code 2 and the kind of ``error``."""
    kind: ErrorKind = "configuration"
    if isinstance(error, ConversationAccessDenied):
        kind = "access"
    elif isinstance(error, (InputError, OperationError)):  # OperationError: a request the ERP refused
        kind = "input"
    elif isinstance(error, StorageError):
        kind = "storage"
    return _fail(str(error), 2, kind=kind)


def _hint(text: str) -> None:
    """A dim hint on stderr, never wrapped: it may hold a command to copy."""
    err_console.print(f"[dim]{escape(text)}[/]", soft_wrap=True)


def _conversation_id(conversation: str | None) -> str:
    """The ``--conversation`` to continue, or a new id when the option is absent; an empty or blank id names
    nothing, so it is refused rather than replaced by a new conversation the user never hears of."""
    if conversation is None:
        return uuid.uuid4().hex
    if not conversation.strip():
        raise _fail(
            "--conversation is empty: give the id of the conversation to continue, or leave the option out "
            "to start a new one.",
            kind="input",
        )
    return conversation


_TOOLCALLING_ONLY = {"context": "--context", "structured": "--structured"}
_PLANNER_ONLY = {"plan_model": "--plan-model", "answer_model": "--answer-model"}
_LOCAL_MODEL_OPTIONS = {
    "provider": "--provider",
    "model": "--model",
    "plan_model": "--plan-model",
    "answer_model": "--answer-model",
    "base_url": "--base-url",
    "latency_profile": "--latency-profile",
    "max_tokens": "--max-tokens",
}
"""The options that build a model in this process: with ``--server`` the AI server's model answers instead."""


def _given(ctx: typer.Context, name: str) -> bool:
    """Whether the option ``name`` was typed on the command line (not its default, not an environment
    variable, which may be set for several commands at once)."""
    source = ctx.get_parameter_source(name)
    return source is not None and source.name == "COMMANDLINE"


def _check_mode_options(ctx: typer.Context, mode: Mode, servers: list[str] | None) -> None:
    """Refuse, with exit 2 and one line, an option the chosen mode would silently ignore."""
    if mode is Mode.toolcalling:
        if servers:
            raise _fail(
                "--server applies to --mode planner only: the stateless AI server runs the planner's calls.",
                kind="usage",
            )
        for name, option in _PLANNER_ONLY.items():
            if _given(ctx, name):
                raise _fail(
                    f"{option} applies to --mode planner only: tool calling uses --model for every call.",
                    kind="usage",
                )
        return
    for name, option in _TOOLCALLING_ONLY.items():
        if _given(ctx, name):
            raise _fail(f"{option} applies to --mode toolcalling only; the planner ignores it.", kind="usage")
    if servers:
        for name, option in _LOCAL_MODEL_OPTIONS.items():
            if _given(ctx, name):
                raise _fail(
                    f"{option} does not apply with --server: the AI server's own model answers (choose it "
                    "when starting the server, erp-ai serve).",
                    kind="usage",
                )


_TOKEN_REFUSED = ("rejected the request: missing or wrong token", "answered HTTP 403")
"""How :class:`planner_mode.HttpAIClient` reports a 401 and a 403 of the AI server in a turn's errors."""


def _check_server_refusal(result: TurnResult) -> None:
    """A turn the AI server refused for its bearer token is a configuration error to fix (exit 2), not a
    provider failure to retry."""
    if result.failure == "provider" and any(
        mark in error for error in result.errors for mark in _TOKEN_REFUSED
    ):
        raise _fail(
            f"The AI server refused the request (missing or wrong bearer token): set {SERVER_TOKEN_ENV} to "
            "the token the server was started with (erp-ai serve --token).",
            kind="configuration",
        )


def _open_erp(db_url: str | None, demo: bool = False) -> Erp:
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


def _build_model(
    provider: Provider,
    model: str | None,
    base_url: str | None,
    latency_profile: str | None = None,
    *,
    max_tokens: int | None = DEFAULT_MAX_TOKENS,
    timeout: float | None = DEFAULT_TIMEOUT_S,
) -> BaseChatModel:
    from shared.llm.factory import build_chat_model

    return build_chat_model(
        provider.value,
        model=model,
        base_url=base_url,
        latency_profile=latency_profile,
        max_tokens=max_tokens,
        timeout=timeout,
    )


def _build_engine(**options: Any) -> tuple[AssistantEngine, Caller]:
    """The engine ``ask`` and ``chat`` use and the ERP user they run as; a configuration, storage or unknown
    user problem, or a conversation of another user, exits 2 with one sentence."""
    try:
        return _assemble_engine(**options)
    except ErpAiError as exc:
        raise _refuse(exc) from None


def _assemble_engine(
    *,
    mode: Mode,
    context: ContextPolicy,
    structured: bool,
    provider: Provider,
    model: str | None,
    plan_model: str | None,
    answer_model: str | None,
    base_url: str | None,
    latency_profile: str | None,
    servers: list[str] | None,
    db_url: str | None,
    demo: bool,
    memory_url: str | None,
    max_tokens: int,
    timeout: float,
    user: str,
    conversation: str | None = None,
) -> tuple[AssistantEngine, Caller]:
    from shared.erp.users import caller_for
    from shared.memory.store import open_memory_store
    from shared.operations.sales import sales_registry

    erp = _open_erp(db_url, demo)
    caller = caller_for(erp, user)
    store = open_memory_store(memory_url or db_url)
    if conversation is not None:  # another user's conversation is refused before anything else happens
        store.check_access(conversation, caller.user_id)
    registry = sales_registry()
    if mode is Mode.planner:
        from planner_mode import HttpAIClient, InProcessAIClient, PlannerAI, PlannerEngine

        ai: Any
        if servers:
            # The server answers when its model is done, and the model's own timeout bounds each read of a
            # streamed reply, not the whole call: give the request room beyond one model timeout.
            ai = HttpAIClient(servers, token=os.environ.get(SERVER_TOKEN_ENV), timeout=2 * timeout)
        else:
            limits: dict[str, Any] = {"max_tokens": max_tokens, "timeout": timeout}
            planner_model = _build_model(provider, plan_model or model, base_url, latency_profile, **limits)
            writer_model = (
                _build_model(provider, answer_model, base_url, latency_profile, **limits)
                if answer_model
                else None
            )
            ai = InProcessAIClient(PlannerAI(planner_model, writer_model))
        return PlannerEngine(registry, erp, store, ai), caller
    from toolcalling_mode import ToolCallingEngine

    engine = ToolCallingEngine(
        registry,
        erp,
        store,
        _build_model(provider, model, base_url, latency_profile, max_tokens=max_tokens, timeout=timeout),
        policy=context.value,
        structured=structured,
    )
    return engine, caller


def _print_text(text: str, *, end: str = "\n") -> None:
    """Model text, verbatim: never rich markup, emoji codes or highlighting, never re-wrapped."""
    console.print(text, end=end, markup=False, highlight=False, emoji=False, soft_wrap=True)


def _print_turn(result: TurnResult, *, show_details: bool) -> None:
    _print_text(result.answer)
    if show_details:
        _print_details(result)


async def _astream_turn(
    engine: AssistantEngine,
    conversation_id: str,
    message: str,
    caller: Caller,
    *,
    check: Callable[[TurnResult], None] | None = None,
) -> TurnResult:
    """Run one turn through ``engine.astream``, printing the answer's text as it arrives; return the result.

    When the turn ends, the reader must be looking at its final answer (:mod:`shared.events`): if the text
    shown is that answer (or ends with it, after a tool-calling preamble), a newline ends it; if it differs
    (the turn failed after some text was shown), the final answer follows :data:`FINAL_ANSWER_RULE`; if no
    text was shown, the answer is printed whole. Raises ``ConversationAccessDenied`` before printing anything.
    ``check`` sees the result before its end is printed, and may raise to replace that end with an error.
    """
    shown: list[str] = []
    result: TurnResult | None = None
    stream = engine.astream(conversation_id, message, caller=caller)
    try:
        async for event in stream:
            if isinstance(event, AnswerDelta) and event.text:
                _print_text(event.text, end="")
                shown.append(event.text)
            elif isinstance(event, TurnDone):
                result = event.result
    finally:
        close = getattr(stream, "aclose", None)
        if close is not None:
            await close()
    if result is None:  # an engine bug: say so rather than leave the reader with half an answer
        raise RuntimeError(f"{engine.mode}: the event stream ended without the turn's result")
    if check is not None:
        check(result)
    _end_streamed_answer("".join(shown), result.answer)
    return result


def _end_streamed_answer(shown: str, answer: str) -> None:
    if not shown:
        _print_text(answer)
        return
    console.print()
    final = answer.strip()
    if shown.strip() == final or (final and shown.rstrip().endswith(final)):
        return
    console.print(f"[dim]{FINAL_ANSWER_RULE}[/]")
    _print_text(answer)


def _print_details(result: TurnResult) -> None:
    table = Table(title="Turn details", show_lines=False)
    table.add_column("operation")
    table.add_column("parameters")
    table.add_column("result / error", overflow="fold")
    for op in result.operations:
        outcome = op.error if op.error else json.dumps(op.result, ensure_ascii=False)[:200]
        table.add_row(
            *(escape(cell) for cell in (op.funcion, json.dumps(op.parametros, ensure_ascii=False), outcome))
        )
    if result.plan is not None:
        console.print_json(json.dumps(result.plan, ensure_ascii=False))
    if result.operations:
        console.print(table)
    simulated = (
        f", simulated model {result.simulated_model_ms:.0f} ms"
        if result.simulated_model_ms is not None
        else ""
    )
    console.print(
        f"[dim]{result.mode}: {result.model_calls} model call(s), {result.input_tokens} in / "
        f"{result.output_tokens} out tokens, model {result.model_ms:.1f} ms{simulated}, "
        f"harness {result.harness_ms:.1f} ms[/]"
    )
    for error in result.errors:
        console.print(f"[yellow]warning:[/] {escape(error)}")


@app.command()
def ask(
    ctx: typer.Context,
    message: Annotated[str, typer.Argument(help='The user\'s question, e.g. "¿Cuánto vendimos en 2025?".')],
    mode: ModeOpt = Mode.planner,
    conversation: Annotated[
        str | None,
        typer.Option("--conversation", "-c", help="Continue this conversation id (new one if omitted)."),
    ] = None,
    context: ContextOpt = ContextPolicy.windowed,
    structured: StructuredOpt = False,
    provider: ProviderOpt = Provider.offline,
    model: ModelOpt = None,
    plan_model: PlanModelOpt = None,
    answer_model: AnswerModelOpt = None,
    base_url: BaseUrlOpt = None,
    latency_profile: LatencyOpt = None,
    server: ServerOpt = None,
    db_url: DbUrl = None,
    demo: DemoOpt = False,
    memory_url: MemoryUrl = None,
    max_tokens: MaxTokensOpt = DEFAULT_MAX_TOKENS,
    timeout: TimeoutOpt = DEFAULT_TIMEOUT_S,
    user: UserOpt = DEMO_CALLER.user_id,
    as_json: Annotated[
        bool,
        typer.Option("--json", help="Print the whole TurnResult as JSON when the turn ends (no stream)."),
    ] = False,
    details: Annotated[
        bool, typer.Option("--details", help="Show plan, operations and call counts.")
    ] = False,
    no_stream: NoStreamOpt = False,
) -> None:
    """Answer one question (one turn) in planner or tool-calling mode.

    The answer is printed as the model writes it (--no-stream: when the turn ends); should the turn fail
    after part of it was shown, the final message follows a separator. The conversation lives in the ERP's
    SQLite memory, so a later `erp-ai ask --conversation ID "¿Y cuánto compró?"` in a new process continues
    it. The ERP is the demo in ./.erp-ai/ (seeded on first use), or --db-url as it is (--demo seeds a new
    database there). Exit codes: 0 answered, 1 the turn failed (the model, the provider or an operation),
    2 bad input, an option the mode ignores, configuration or storage (no model was asked); with --json a
    refusal is {"error": {"kind": ..., "message": ...}} on stdout.
    """
    with _errors_as_json(as_json):
        _check_mode_options(ctx, mode, server)  # before anything is opened or paid for
        conversation_id = _conversation_id(conversation)
        try:
            from shared.inputs import check_turn_input

            check_turn_input(conversation_id, message)
        except InputError as exc:
            raise _refuse(exc) from None
        engine, caller = _build_engine(
            mode=mode,
            context=context,
            structured=structured,
            provider=provider,
            model=model,
            plan_model=plan_model,
            answer_model=answer_model,
            base_url=base_url,
            latency_profile=latency_profile,
            servers=server,
            db_url=db_url,
            demo=demo,
            memory_url=memory_url,
            max_tokens=max_tokens,
            timeout=timeout,
            user=user,
            conversation=conversation,
        )
        check = _check_server_refusal if server else None
        try:
            if as_json or no_stream:
                result = engine.ask(conversation_id, message, caller=caller)
            else:
                result = asyncio.run(_astream_turn(engine, conversation_id, message, caller, check=check))
        except ConversationAccessDenied as exc:
            raise _refuse(exc) from None
        if check is not None:
            check(result)
    if as_json:
        typer.echo(result.model_dump_json(indent=2))
    else:
        if no_stream:
            _print_turn(result, show_details=details)
        elif details:
            _print_details(result)
        if conversation is None and result.recorded:  # a turn that recorded nothing left nothing to continue
            _hint(f"conversation: {conversation_id} (continue with --conversation {conversation_id})")
    if result.failure is not None:  # the answer is an apology: let scripts notice
        err_console.print(
            f"[yellow]The turn failed ({result.failure}): {escape('; '.join(result.errors))}[/]",
            soft_wrap=True,
        )
        raise typer.Exit(2 if result.failure in ("input", "storage") else 1)


CHAT_COMMANDS = {
    "/details": "show or hide the plan, operations and call counts after each answer",
    "/new": "start a new conversation",
    "/help": "list these commands",
    "/quit": "leave (also /exit, /salir, Ctrl+D)",
}
"""The chat's commands; any other message that starts with ``/`` is refused, not sent to the model."""
_QUIT = ("/quit", "/exit", "/salir")


@app.command()
def chat(
    ctx: typer.Context,
    mode: ModeOpt = Mode.planner,
    conversation: Annotated[
        str | None, typer.Option("--conversation", "-c", help="Continue this conversation id.")
    ] = None,
    context: ContextOpt = ContextPolicy.windowed,
    structured: StructuredOpt = False,
    provider: ProviderOpt = Provider.offline,
    model: ModelOpt = None,
    plan_model: PlanModelOpt = None,
    answer_model: AnswerModelOpt = None,
    base_url: BaseUrlOpt = None,
    latency_profile: LatencyOpt = None,
    server: ServerOpt = None,
    db_url: DbUrl = None,
    demo: DemoOpt = False,
    memory_url: MemoryUrl = None,
    max_tokens: MaxTokensOpt = DEFAULT_MAX_TOKENS,
    timeout: TimeoutOpt = DEFAULT_TIMEOUT_S,
    user: UserOpt = DEMO_CALLER.user_id,
    details: Annotated[bool, typer.Option("--details", help="Show details after every answer.")] = False,
    no_stream: NoStreamOpt = False,
) -> None:
    """Chat interactively with the assistant; answers are printed as the model writes them.

    Type /details to toggle the plan, operations and call counts, /new for a new conversation, /help for the
    commands, /quit to leave. A conversation of another user, an option the mode ignores or an empty
    --conversation is refused before the chat starts (exit 2).
    """
    _check_mode_options(ctx, mode, server)
    conversation_id = _conversation_id(conversation)
    engine, caller = _build_engine(
        mode=mode,
        context=context,
        structured=structured,
        provider=provider,
        model=model,
        plan_model=plan_model,
        answer_model=answer_model,
        base_url=base_url,
        latency_profile=latency_profile,
        servers=server,
        db_url=db_url,
        demo=demo,
        memory_url=memory_url,
        max_tokens=max_tokens,
        timeout=timeout,
        user=user,
        conversation=conversation,
    )
    console.print(
        f"[bold]erp-ai chat[/] ({engine.mode}) — conversation {conversation_id}. "
        f"Commands: {', '.join(CHAT_COMMANDS)}.",
        soft_wrap=True,
    )
    check = _check_server_refusal if server else None
    # One event loop for the whole session: an HTTP AI client keeps its connections to the loop it opened.
    with asyncio.Runner() as loop:
        _chat_loop(engine, caller, conversation_id, loop, details=details, stream=not no_stream, check=check)


def _chat_loop(
    engine: AssistantEngine,
    caller: Caller,
    conversation_id: str,
    loop: asyncio.Runner,
    *,
    details: bool,
    stream: bool,
    check: Callable[[TurnResult], None] | None = None,
) -> None:
    while True:
        try:
            message = console.input("[bold cyan]tú>[/] ").strip()
        except (EOFError, KeyboardInterrupt):
            console.print()
            break
        if not message:
            continue
        if message.startswith("/"):
            command = message.split()[0]
            if command in _QUIT:
                break
            if command == "/details":
                details = not details
                console.print(f"[dim]details {'on' if details else 'off'}[/]")
            elif command == "/new":
                conversation_id = uuid.uuid4().hex
                console.print(f"[dim]new conversation {conversation_id}[/]", soft_wrap=True)
            elif command == "/help":
                for name, what in CHAT_COMMANDS.items():
                    console.print(f"  {name}  {escape(what)}", highlight=False)
            else:
                console.print(f"unknown command {escape(command)}, /help lists them", highlight=False)
            continue
        console.print("[bold green]erp>[/] ", end="")
        try:
            if stream:
                result = loop.run(_astream_turn(engine, conversation_id, message, caller, check=check))
            else:
                result = engine.ask(conversation_id, message, caller=caller)
                if check is not None:
                    check(result)
        except ConversationAccessDenied as exc:
            console.print()
            raise _refuse(exc) from None
        except typer.Exit:  # the AI server refused the token: end the prompt's line, then leave
            console.print()
            raise
        if not stream:
            _print_text(result.answer)
        if details:
            _print_details(result)


SERVE_KEEP_ALIVE_S = 5
"""``erp-ai serve``: an idle keep-alive connection is closed after this many seconds (uvicorn's
``timeout_keep_alive``)."""
SERVE_MAX_HEADER_BYTES = 8 * 1024
"""``erp-ai serve``: how much of a request's line and headers is buffered while they arrive (uvicorn's
``h11_max_incomplete_event_size``, h11 only); a client that sends more without ending them is answered 400."""
SERVE_MAX_CONCURRENCY = 1024
"""``erp-ai serve``: connections and requests one worker holds at once (uvicorn's ``limit_concurrency``);
beyond it a request is answered 503. Above ``erp-ai loadtest``'s 512 conversations on one server."""
SERVE_SHUTDOWN_S = 10
"""``erp-ai serve``: how long Ctrl+C waits for open connections (uvicorn's ``timeout_graceful_shutdown``)."""

SERVE_HELP = f"""Run the stateless AI server (POST /ai/analyze, POST /ai/respond, GET /healthz, /docs).

Needs the 'server' extra (FastAPI, uvicorn): pip install 'erp-ai-harness\\[server]'.

Slow and idle clients: a keep-alive connection idle for {SERVE_KEEP_ALIVE_S} s is closed; a request's line
and headers are buffered up to {SERVE_MAX_HEADER_BYTES // 1024} KiB while they arrive (a client that sends
more without ending them is answered 400); each worker holds at most {SERVE_MAX_CONCURRENCY:,} connections
and requests at once (more are answered 503); Ctrl+C waits at most {SERVE_SHUTDOWN_S} s for open connections.
uvicorn has no timeout for reading a request's headers or body (a client that stalls mid-request holds its
connection): in front of untrusted clients, put a reverse proxy that has them (nginx: client_header_timeout,
client_body_timeout).

A port outside 1-65535, no worker, or an address that cannot be bound (a port in use, a port below 1024
without the privilege, an unknown host) is refused before the server starts (exit 2).
"""


def _bind_problem(host: str, port: int) -> str | None:
    """Why uvicorn could not listen on ``host:port`` (tried as uvicorn binds), or ``None`` if it can."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError as exc:
            if exc.errno == errno.EADDRINUSE:
                return (
                    f"Cannot listen on {host}:{port}: port {port} is already in use (another server listens "
                    "there). Stop it, or choose another --port."
                )
            if exc.errno == errno.EACCES:
                return (
                    f"Cannot listen on {host}:{port}: permission denied (ports below 1024 need privileges). "
                    "Choose --port 1024 or above."
                )
            return f"Cannot listen on {host}:{port} ({exc.strerror or exc}). Check --host."
    return None


@app.command(help=SERVE_HELP)
def serve(
    host: Annotated[str, typer.Option(help="Interface to bind.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(min=1, max=65535, help="TCP port.")] = 8000,
    workers: Annotated[
        int, typer.Option(min=1, help="uvicorn worker processes (the server is stateless).")
    ] = 1,
    provider: ProviderOpt = Provider.offline,
    model: ModelOpt = None,
    plan_model: PlanModelOpt = None,
    answer_model: AnswerModelOpt = None,
    base_url: BaseUrlOpt = None,
    token: Annotated[
        str | None,
        typer.Option(envvar=SERVER_TOKEN_ENV, help="Require this bearer token on /ai/* requests."),
    ] = None,
    max_tokens: MaxTokensOpt = DEFAULT_MAX_TOKENS,
    timeout: TimeoutOpt = DEFAULT_TIMEOUT_S,
) -> None:
    from shared.extras import require_extra

    try:
        require_extra("server", "erp-ai serve")
    except ErpAiError as exc:
        raise _refuse(exc) from None
    problem = _bind_problem(host, port)  # uvicorn would log its startup, then exit 3 with a traceback
    if problem is not None:
        raise _fail(problem)
    import uvicorn

    settings = {
        "ERP_AI_PROVIDER": provider.value,
        "ERP_AI_MODEL": model,
        "ERP_AI_PLAN_MODEL": plan_model,
        "ERP_AI_ANSWER_MODEL": answer_model,
        "ERP_AI_BASE_URL": base_url,
        SERVER_TOKEN_ENV: token,
        "ERP_AI_MAX_TOKENS": str(max_tokens),
        "ERP_AI_TIMEOUT": str(timeout),
    }
    for key, value in settings.items():
        if value is not None:
            os.environ[key] = value
        else:
            os.environ.pop(key, None)
    try:
        from planner_mode.server import app_from_env, bind_warning

        app_from_env()  # fail fast on a bad provider configuration, before uvicorn forks workers
    except ErpAiError as exc:
        raise _refuse(exc) from None
    warning = bind_warning(host, token or "")
    if warning:
        err_console.print(f"[bold yellow]Warning:[/] {escape(warning)}", soft_wrap=True)
    uvicorn.run(
        "planner_mode.server:app_from_env",
        factory=True,
        host=host,
        port=port,
        workers=workers,
        timeout_keep_alive=SERVE_KEEP_ALIVE_S,
        h11_max_incomplete_event_size=SERVE_MAX_HEADER_BYTES,
        limit_concurrency=SERVE_MAX_CONCURRENCY,
        timeout_graceful_shutdown=SERVE_SHUTDOWN_S,
    )


@app.command()
def emulate(
    kind: Annotated[EmulatedProvider, typer.Argument(help="Which provider's wire protocol to speak.")],
    host: Annotated[str, typer.Option(help="Interface to bind.")] = "127.0.0.1",
    port: Annotated[
        int | None,
        typer.Option(help="TCP port (default: 11434 for ollama, 8089 for gemini, 8080 for openai)."),
    ] = None,
    fault: Annotated[
        list[str] | None,
        typer.Option(
            "--fault",
            metavar="KIND[:COUNT]",
            help="Inject a fault into the next COUNT model requests (no COUNT: every later one); repeat the "
            f"option for a sequence, e.g. --fault http_500:2 --fault slow. Kinds: {', '.join(FAULT_MODES)}.",
        ),
    ] = None,
) -> None:
    """Serve the Ollama, Gemini or OpenAI-compatible wire protocol locally, backed by the offline model.

    The real ChatOllama / ChatGoogleGenerativeAI / ChatOpenAI clients (and `erp-ai bench --provider
    ollama|gemini|openai --base-url …`; OpenAI's base URL ends in /v1) can then be tried without the real
    service. Output caps are honoured (Ollama `num_predict`, Gemini `maxOutputTokens`, OpenAI `max_tokens`);
    `--fault` reproduces what real models and servers do wrong.
    """
    from benchmarks.stand_ins.emulators import DEFAULT_PORTS, EmulatorFaults, run_emulator

    try:
        faults = EmulatorFaults.from_specs(fault or [])
    except ValueError as exc:
        raise _fail(f"--fault: {exc}", kind="usage") from None
    port = DEFAULT_PORTS[kind.value] if port is None else port
    console.print(f"[bold]{kind.value} emulator[/] on http://{host}:{port} (Ctrl+C to stop)")
    if faults.sequence:
        console.print(f"faults: {escape(faults.describe())}")
    run_emulator(kind.value, host=host, port=port, faults=faults)


@ops_app.command("list")
def ops_list(
    as_json: Annotated[bool, typer.Option("--json", help="Print the catalog as JSON.")] = False,
    user: UserOpt = DEMO_CALLER.user_id,
    db_url: DbUrl = None,
    demo: DemoOpt = False,
) -> None:
    """List the sales operations the user may run, with their parameters."""
    from shared.erp.users import caller_for
    from shared.operations.sales import sales_registry

    try:
        caller = caller_for(_open_erp(db_url, demo), user)
    except ErpAiError as exc:
        with _errors_as_json(as_json):
            raise _refuse(exc) from None
    catalog = sales_registry().catalog(caller)
    if as_json:
        typer.echo(json.dumps([spec.model_dump() for spec in catalog], ensure_ascii=False, indent=2))
        return
    table = Table(title="Sales operations")
    table.add_column("name", style="bold")
    table.add_column("parameters")
    table.add_column("description", overflow="fold")
    for spec in catalog:
        required = set(spec.parameters.get("required", []))
        params = ", ".join(
            f"{name}{'' if name in required else '?'}" for name in spec.parameters.get("properties", {})
        )
        table.add_row(spec.name, params, spec.description)
    console.print(table)


@ops_app.command("call")
def ops_call(
    name: Annotated[str, typer.Argument(help="Operation name, e.g. ventas_anuales.")],
    params: Annotated[
        str, typer.Argument(help="Parameters as a JSON object, e.g. '{\"anio\": 2025}'.")
    ] = "{}",
    db_url: DbUrl = None,
    demo: DemoOpt = False,
    user: UserOpt = DEMO_CALLER.user_id,
) -> None:
    """Call one operation against the ERP as a user (their permissions and customers) and print the result.

    The result is JSON on stdout; so is a refusal (exit 2): {"error": {"kind": ..., "message": ...}}.
    """
    with _errors_as_json(True):
        _ops_call(name, params, db_url=db_url, demo=demo, user=user)


def _ops_call(name: str, params: str, *, db_url: str | None, demo: bool, user: str) -> None:
    from shared.erp.users import caller_for
    from shared.operations.sales import sales_registry

    try:
        parsed = json.loads(params)
    except json.JSONDecodeError as exc:
        raise _fail(
            f"PARAMS is not valid JSON ({exc.msg}); pass an object like '{{\"anio\": 2025}}'.", kind="input"
        ) from None
    except (RecursionError, ValueError):  # nested past the interpreter's limit, or a huge integer
        raise _fail(
            "PARAMS nests too deeply or holds a number too large; pass a flat JSON object.", kind="input"
        ) from None
    if not isinstance(parsed, dict):
        raise _fail(f"PARAMS must be a JSON object, not {type(parsed).__name__}.", kind="input")
    try:
        erp = _open_erp(db_url, demo)
        try:
            result = sales_registry().execute(erp, name, parsed, caller=caller_for(erp, user))
        finally:
            erp.engine.dispose()
    except ErpAiError as exc:
        raise _refuse(exc) from None
    typer.echo(json.dumps(result, ensure_ascii=False, indent=2))


def _register_benchmark_commands() -> None:
    from benchmarks.bench_cli import register
    from benchmarks.loadtest_cli import register as register_loadtest

    register(app)
    register_loadtest(app)


_register_benchmark_commands()


def _readable_help(*typers: typer.Typer) -> None:
    """Give every command :class:`_Command` (help re-wrapped, untyped flags), also those other modules
    register, unless one chose its own class (typer's default is ``TyperCommand``)."""
    for each in typers:
        for info in each.registered_commands:
            if info.cls in (None, TyperCommand):
                info.cls = _Command


_readable_help(app, ops_app)


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
