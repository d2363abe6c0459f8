"""``erp-ai``: the one command-line entry point.

The CLI is the outermost layer: it may import every package, and nothing imports it. It lives in
``benchmarks/`` because that is the outermost package of the layout the user asked for
(``benchmarks → modes → shared``).
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import sys
import uuid
from collections.abc import Callable
from enum import StrEnum
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from benchmarks.bench_cli import MaxTokensOpt, TimeoutOpt
from shared.emulators.faults import FAULT_MODES
from shared.errors import ConfigurationError, ConversationAccessDenied, ErpAiError, InputError
from shared.events import AnswerDelta, TurnDone
from shared.llm.factory import DEFAULT_MAX_TOKENS, DEFAULT_TIMEOUT_S
from shared.security import DEMO_CALLER, Caller

if TYPE_CHECKING:
    from langchain_core.language_models import BaseChatModel

    from shared.engine import AssistantEngine
    from shared.erp.database import Erp
    from shared.turn import TurnResult

app = typer.Typer(
    name="erp-ai",
    help=(
        "Two-call planner vs native tool calling over one demo ERP. "
        'Start with `erp-ai bench` (the benchmark) or `erp-ai ask "¿Cuánto vendimos en 2025?"`.'
    ),
    no_args_is_help=True,
    rich_markup_mode="rich",
    pretty_exceptions_enable=False,
)
ops_app = typer.Typer(
    help="List or call the ERP's sales operations directly (no model involved).", no_args_is_help=True
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


def configure_logging(level: LogLevel | str) -> Callable[[], None]:
    """Send the project's log records at ``level`` and above to stderr, one line each; return the undo.

    The library never configures logging (:mod:`shared.logs`); the CLI is an application, so it does, for
    the :data:`PACKAGE_LOGGERS` only: third-party libraries (httpx, LangChain) keep their own defaults.
    Calling it again replaces the handler instead of adding one. The returned function restores the loggers
    as they were: the CLI calls it when the command ends, so one process can run several commands (tests,
    an application calling :func:`main`) without records piling up on a stale stream.
    """
    handler = _CliLogHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
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
    ctx.call_on_close(configure_logging(log_level))


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
ServerOpt = Annotated[
    list[str] | None,
    typer.Option("--server", help="Planner only: remote AI server URL (repeat for round-robin)."),
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


def _fail(message: str, code: int = 1) -> typer.Exit:
    err_console.print(f"[bold red]Error:[/] {escape(message)}", soft_wrap=True)
    return typer.Exit(code)


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
    user problem exits 2 with one sentence."""
    try:
        return _assemble_engine(**options)
    except ErpAiError as exc:
        raise _fail(str(exc), 2) from None


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
) -> tuple[AssistantEngine, Caller]:
    from shared.erp.users import caller_for
    from shared.memory.store import open_memory_store
    from shared.operations.sales import sales_registry

    erp = _open_erp(db_url, demo)
    caller = caller_for(erp, user)
    store = open_memory_store(memory_url or db_url)
    registry = sales_registry()
    if mode is Mode.planner:
        from planner_mode import HttpAIClient, InProcessAIClient, PlannerAI, PlannerEngine

        ai: Any
        if servers:
            # The server answers when its model is done, and the model's own timeout bounds each read of a
            # streamed reply, not the whole call: give the request room beyond one model timeout.
            ai = HttpAIClient(servers, token=os.environ.get("ERP_AI_SERVER_TOKEN"), timeout=2 * timeout)
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

    if servers:
        raise _fail("--server only applies to --mode planner (the stateless AI server is the planner's).")
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
    engine: AssistantEngine, conversation_id: str, message: str, caller: Caller
) -> TurnResult:
    """Run one turn through ``engine.astream``, printing the answer's text as it arrives; return the result.

    When the turn ends, the reader must be looking at its final answer (:mod:`shared.events`): if the text
    shown is that answer (or ends with it, after a tool-calling preamble), a newline ends it; if it differs
    (the turn failed after some text was shown), the final answer follows :data:`FINAL_ANSWER_RULE`; if no
    text was shown, the answer is printed whole. Raises ``ConversationAccessDenied`` before printing anything.
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
    2 bad input, configuration or storage (no model was asked).
    """
    conversation_id = conversation or uuid.uuid4().hex
    try:  # before anything is opened or paid for
        from shared.inputs import check_turn_input

        check_turn_input(conversation_id, message)
    except InputError as exc:
        raise _fail(str(exc), 2) from None
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
    )
    try:
        if as_json or no_stream:
            result = engine.ask(conversation_id, message, caller=caller)
        else:
            result = asyncio.run(_astream_turn(engine, conversation_id, message, caller))
    except ConversationAccessDenied as exc:
        raise _fail(str(exc), 2) from None
    if as_json:
        typer.echo(result.model_dump_json(indent=2))
    else:
        if no_stream:
            _print_turn(result, show_details=details)
        elif details:
            _print_details(result)
        if conversation is None:
            err_console.print(
                f"[dim]conversation: {conversation_id} (continue with --conversation {conversation_id})[/]"
            )
    if result.failure is not None:  # the answer is an apology: let scripts notice
        err_console.print(
            f"[yellow]The turn failed ({result.failure}): {escape('; '.join(result.errors))}[/]"
        )
        raise typer.Exit(2 if result.failure in ("input", "storage") else 1)


@app.command()
def chat(
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

    Type /details to toggle the plan, operations and call counts, /new for a new conversation, /quit to leave.
    """
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
    )
    conversation_id = conversation or uuid.uuid4().hex
    console.print(
        f"[bold]erp-ai chat[/] ({engine.mode}) — conversation {conversation_id}. "
        "Commands: /details, /new, /quit."
    )
    # One event loop for the whole session: an HTTP AI client keeps its connections to the loop it opened.
    with asyncio.Runner() as loop:
        _chat_loop(engine, caller, conversation_id, loop, details=details, stream=not no_stream)


def _chat_loop(
    engine: AssistantEngine,
    caller: Caller,
    conversation_id: str,
    loop: asyncio.Runner,
    *,
    details: bool,
    stream: bool,
) -> None:
    while True:
        try:
            message = console.input("[bold cyan]tú>[/] ").strip()
        except (EOFError, KeyboardInterrupt):
            console.print()
            break
        if not message:
            continue
        if message in ("/quit", "/exit", "/salir"):
            break
        if message == "/details":
            details = not details
            console.print(f"[dim]details {'on' if details else 'off'}[/]")
            continue
        if message == "/new":
            conversation_id = uuid.uuid4().hex
            console.print(f"[dim]new conversation {conversation_id}[/]")
            continue
        console.print("[bold green]erp>[/] ", end="")
        try:
            if stream:
                result = loop.run(_astream_turn(engine, conversation_id, message, caller))
            else:
                result = engine.ask(conversation_id, message, caller=caller)
        except ConversationAccessDenied as exc:
            console.print()
            raise _fail(str(exc), 2) from None
        if not stream:
            _print_text(result.answer)
        if details:
            _print_details(result)


@app.command()
def serve(
    host: Annotated[str, typer.Option(help="Interface to bind.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="TCP port.")] = 8000,
    workers: Annotated[int, typer.Option(help="uvicorn worker processes (the server is stateless).")] = 1,
    provider: ProviderOpt = Provider.offline,
    model: ModelOpt = None,
    plan_model: PlanModelOpt = None,
    answer_model: AnswerModelOpt = None,
    base_url: BaseUrlOpt = None,
    token: Annotated[
        str | None,
        typer.Option(envvar="ERP_AI_SERVER_TOKEN", help="Require this bearer token on /ai/* requests."),
    ] = None,
    max_tokens: MaxTokensOpt = DEFAULT_MAX_TOKENS,
    timeout: TimeoutOpt = DEFAULT_TIMEOUT_S,
) -> None:
    """Run the stateless AI server (POST /ai/analyze, POST /ai/respond, GET /healthz, /docs).

    Needs the 'server' extra (FastAPI, uvicorn): pip install 'erp-ai-harness[server]'.
    """
    from shared.extras import require_extra

    try:
        require_extra("server", "erp-ai serve")
    except ErpAiError as exc:
        raise _fail(str(exc), 2) from None
    import uvicorn

    settings = {
        "ERP_AI_PROVIDER": provider.value,
        "ERP_AI_MODEL": model,
        "ERP_AI_PLAN_MODEL": plan_model,
        "ERP_AI_ANSWER_MODEL": answer_model,
        "ERP_AI_BASE_URL": base_url,
        "ERP_AI_SERVER_TOKEN": token,
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
        raise _fail(str(exc), 2) from None
    warning = bind_warning(host, token or "")
    if warning:
        err_console.print(f"[bold yellow]Warning:[/] {escape(warning)}")
    uvicorn.run("planner_mode.server:app_from_env", factory=True, host=host, port=port, workers=workers)


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
    from shared.emulators import DEFAULT_PORTS, EmulatorFaults, run_emulator

    try:
        faults = EmulatorFaults.from_specs(fault or [])
    except ValueError as exc:
        raise _fail(f"--fault: {exc}", 2) from None
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
        raise _fail(str(exc), 2) from None
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
    """Call one operation against the ERP as a user (their permissions and customers) and print the result."""
    from shared.erp.users import caller_for
    from shared.operations.sales import sales_registry

    try:
        parsed = json.loads(params)
    except json.JSONDecodeError as exc:
        raise _fail(
            f"PARAMS is not valid JSON ({exc.msg}); pass an object like '{{\"anio\": 2025}}'.", 2
        ) from None
    except (RecursionError, ValueError):  # nested past the interpreter's limit, or a huge integer
        raise _fail(
            "PARAMS nests too deeply or holds a number too large; pass a flat JSON object.", 2
        ) from None
    if not isinstance(parsed, dict):
        raise _fail(f"PARAMS must be a JSON object, not {type(parsed).__name__}.", 2)
    try:
        erp = _open_erp(db_url, demo)
        result = sales_registry().execute(erp, name, parsed, caller=caller_for(erp, user))
    except ErpAiError as exc:
        raise _fail(str(exc), 2) from None
    typer.echo(json.dumps(result, ensure_ascii=False, indent=2))


def _register_benchmark_commands() -> None:
    from benchmarks.bench_cli import register
    from benchmarks.loadtest_cli import register as register_loadtest

    register(app)
    register_loadtest(app)


_register_benchmark_commands()


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
