"""``erp-ai serve`` (the stateless AI server) and ``erp-ai emulate`` (a provider's protocol, offline)."""

from __future__ import annotations

import errno
import socket
from enum import StrEnum
from typing import Annotated

import typer
from rich.markup import escape

from benchmarks.cli.common import (
    SERVER_TOKEN_ENV,
    AnswerModelOpt,
    BaseUrlOpt,
    MaxTokensOpt,
    ModelOpt,
    PlanModelOpt,
    Provider,
    ProviderOpt,
    TimeoutOpt,
    console,
    err_console,
    fail,
    refuse,
)
from benchmarks.modes import ModelOptions, set_environment
from planner_mode.server.limits import DEFAULT_READ_TIMEOUT_S, READ_TIMEOUT_ENV
from shared.errors import ConfigurationError, ErpAiError
from shared.llm.factory import DEFAULT_MAX_TOKENS, DEFAULT_TIMEOUT_S

try:
    from benchmarks.stand_ins.emulators.faults import FAULT_MODES
except ConfigurationError:  # no 'server' extra: emulate says so when it runs, and serve still can
    FAULT_MODES = ()

SERVE_KEEP_ALIVE_S = 5
"""An idle keep-alive connection is closed after this many seconds (uvicorn's ``timeout_keep_alive``)."""
SERVE_MAX_HEADER_BYTES = 8 * 1024
"""How much of a request's line and headers is buffered while they arrive (uvicorn's
``h11_max_incomplete_event_size``, h11 only); a client that sends more without ending them is answered 400."""
SERVE_MAX_CONCURRENCY = 1024
"""Connections and requests one worker holds at once (uvicorn's ``limit_concurrency``); beyond it a request
is answered 503. Above ``erp-ai loadtest``'s 512 conversations on one server."""
SERVE_MAX_READ_TIMEOUT_S = 3600.0
"""The longest --read-timeout accepted: an hour is already no bound against a slow client."""
SERVE_SHUTDOWN_S = 10
"""How long Ctrl+C waits for open connections (uvicorn's ``timeout_graceful_shutdown``)."""

SERVE_HELP = f"""Run the stateless AI server (POST /ai/analyze, POST /ai/respond, GET /healthz, /docs).

Needs the 'server' extra (FastAPI, uvicorn): pip install 'erp-ai-harness\\[server]'.

Slow and idle clients: a request's line and headers must arrive within --read-timeout (from the
connection's start or the previous response; else the connection is closed), and its body within it too
(else 408); a keep-alive connection idle for {SERVE_KEEP_ALIVE_S} s is closed; a request's line and headers
are buffered up to {SERVE_MAX_HEADER_BYTES // 1024} KiB while they arrive (a client that sends more without
ending them is answered 400); each worker holds at most {SERVE_MAX_CONCURRENCY:,} connections and requests at
once (more are answered 503); Ctrl+C waits at most {SERVE_SHUTDOWN_S} s for open connections.

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


def serve(
    ctx: typer.Context,
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
    read_timeout: Annotated[
        float,
        typer.Option(
            "--read-timeout",
            envvar=READ_TIMEOUT_ENV,
            min=0.001,
            max=SERVE_MAX_READ_TIMEOUT_S,
            help="Seconds a client has to send a request's line and headers, and then its body.",
        ),
    ] = DEFAULT_READ_TIMEOUT_S,
) -> None:
    from shared.extras import require_extra

    try:
        require_extra("server", "erp-ai serve")
    except ErpAiError as exc:
        raise refuse(exc) from None
    problem = _bind_problem(host, port)  # uvicorn would log its startup, then exit 3 with a traceback
    if problem is not None:
        raise fail(problem)
    import uvicorn

    options = ModelOptions.model_validate({**ctx.params, "provider": provider.value})
    set_environment({**options.environment(), SERVER_TOKEN_ENV: token, READ_TIMEOUT_ENV: f"{read_timeout:g}"})
    try:
        from benchmarks.served_app import served_app
        from planner_mode.server import bind_warning
        from planner_mode.server.protocol import HeadTimeoutH11Protocol

        served_app()  # fail fast on a bad provider configuration, before uvicorn forks workers
    except ErpAiError as exc:
        raise refuse(exc) from None
    warning = bind_warning(host, token or "")
    if warning:
        err_console.print(f"[bold yellow]Warning:[/] {escape(warning)}", soft_wrap=True)
    uvicorn.run(
        "benchmarks.served_app:served_app",
        factory=True,
        host=host,
        port=port,
        workers=workers,
        http=HeadTimeoutH11Protocol,  # uvicorn's h11 protocol, with a read timeout for the request's head
        timeout_keep_alive=SERVE_KEEP_ALIVE_S,
        h11_max_incomplete_event_size=SERVE_MAX_HEADER_BYTES,
        limit_concurrency=SERVE_MAX_CONCURRENCY,
        timeout_graceful_shutdown=SERVE_SHUTDOWN_S,
    )


serve.__doc__ = SERVE_HELP


class EmulatedProvider(StrEnum):
    ollama = "ollama"
    gemini = "gemini"
    openai = "openai"


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
        raise fail(f"--fault: {exc}", kind="usage") from None
    port = DEFAULT_PORTS[kind.value] if port is None else port
    console.print(f"[bold]{kind.value} emulator[/] on http://{host}:{port} (Ctrl+C to stop)")
    if faults.sequence:
        console.print(f"faults: {escape(faults.describe())}")
    run_emulator(kind.value, host=host, port=port, faults=faults)
