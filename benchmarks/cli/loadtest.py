"""``erp-ai loadtest``: a fleet of AI servers under load, one killed, and the database audited.

``erp-ai loadtest`` starts the AI servers itself, on loopback ports only, and everything it does is bounded
(servers, conversations, turns, seconds): see :mod:`benchmarks.loadtest`. A progress bar runs on stderr, so
``--json`` output on stdout stays machine-readable. Exit codes: 0 the audit is clean, 1 it is not (messages
lost, duplicated, half-recorded, out of order, or a conversation's state inconsistent), 2 a bad option, a
database that cannot be opened or a server that did not start.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Annotated

import typer
from pydantic import ValidationError
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TaskID, TextColumn, TimeElapsedColumn
from rich.table import Table
from sqlalchemy.engine import make_url

from benchmarks.cli.common import (
    MaxTokensOpt,
    Provider,
    ProviderOpt,
    TimeoutOpt,
    console,
    err_console,
    fail,
)
from benchmarks.loadtest import (
    MAX_CONVERSATIONS,
    MAX_SECONDS,
    MAX_SERVERS,
    QUESTIONS,
    LatencySummary,
    LoadProgress,
    LoadtestConfig,
    LoadtestResult,
    run_loadtest,
)
from benchmarks.loadtest_fleet import Fleet, FleetError, serve_command
from benchmarks.loadtest_report import BLOCK, scaling_block
from benchmarks.modes import ModelOptions
from benchmarks.report.readme import update_readme
from shared.errors import ErpAiError
from shared.llm.factory import DEFAULT_MAX_TOKENS, DEFAULT_TIMEOUT_S
from shared.security import DEMO_CALLER

DEFAULT_MATRIX_KILL_AT = 2.0
"""When ``--matrix`` is given without ``--kill-one-at``: when its "killed" runs kill a server."""


def loadtest(
    ctx: typer.Context,
    servers: Annotated[
        int, typer.Option(min=1, max=MAX_SERVERS, help="AI server processes (erp-ai serve) on loopback.")
    ] = 3,
    conversations: Annotated[
        int, typer.Option(min=1, max=MAX_CONVERSATIONS, help="Conversations run at once.")
    ] = 24,
    turns: Annotated[
        int, typer.Option(min=1, max=len(QUESTIONS), help="Turns per conversation, one after another.")
    ] = 5,
    kill_one_at: Annotated[
        float | None,
        typer.Option(min=0, max=MAX_SECONDS, help="SIGKILL one server this many seconds into the load."),
    ] = None,
    restart_after: Annotated[
        float,
        typer.Option(min=0, max=MAX_SECONDS, help="Start the killed server again this many seconds later."),
    ] = 1.0,
    no_restart: Annotated[bool, typer.Option("--no-restart", help="Leave the killed server down.")] = False,
    db_url: Annotated[
        str | None,
        typer.Option(
            "--db-url",
            help="ERP database URL, SQLite or postgresql+psycopg://… (the demo ERP is seeded if the database "
            "is new). Default: a temporary SQLite file, deleted afterwards.",
        ),
    ] = None,
    memory_url: Annotated[
        str | None, typer.Option("--memory-url", help="Conversation memory URL (default: --db-url).")
    ] = None,
    provider: ProviderOpt = Provider.offline,
    model: Annotated[str | None, typer.Option("--model", "-m", help="Model name.")] = None,
    plan_model: Annotated[str | None, typer.Option(help="Model of call 1 (default: --model).")] = None,
    answer_model: Annotated[str | None, typer.Option(help="Model of call 2 (default: --model).")] = None,
    base_url: Annotated[str | None, typer.Option(help="Provider base URL (Ollama host, …).")] = None,
    max_tokens: MaxTokensOpt = DEFAULT_MAX_TOKENS,
    timeout: TimeoutOpt = DEFAULT_TIMEOUT_S,
    user: Annotated[str, typer.Option("--user", "-u", help="The ERP user every turn runs as.")] = (
        DEMO_CALLER.user_id
    ),
    max_seconds: Annotated[
        float, typer.Option(min=1, max=MAX_SECONDS, help="Bound of the load; later turns are not sent.")
    ] = 300.0,
    matrix: Annotated[
        bool,
        typer.Option(
            "--matrix",
            help="Run the scaling matrix instead of one run: 1 and --servers servers, with and without a "
            f"server killed (at --kill-one-at, default {DEFAULT_MATRIX_KILL_AT:g} s), on a temporary SQLite "
            "database and, when --db-url is a PostgreSQL URL, on PostgreSQL too.",
        ),
    ] = False,
    as_json: Annotated[
        bool, typer.Option("--json", help="Print the result (a list with --matrix) as JSON.")
    ] = False,
    readme: Annotated[
        Path | None,
        typer.Option(help=f"Write the runs' table into this README's '{BLOCK}' block (Scaling out)."),
    ] = None,
    progress: Annotated[bool, typer.Option(help="Show the progress bar (on stderr).")] = True,
) -> None:
    """Load-test a fleet of stateless AI servers, optionally killing one, then audit the database.

    Starts --servers `erp-ai serve` processes on 127.0.0.1, runs --conversations conversations at once, each
    --turns turns, through the round-robin HTTP client (planner mode), and checks the conversation memory:
    turns sent, recorded and failed (by kind); messages lost, duplicated, out of order or half-recorded;
    conversations whose state is inconsistent. Prints turns/s and latency p50/p95/p99. Example:
    erp-ai loadtest --servers 3 --conversations 24 --turns 5 --kill-one-at 2 --json
    """
    restart = None if no_restart else restart_after
    # request_timeout as `erp-ai ask --server`: room beyond one model timeout
    chosen = {
        "restart_after": restart,
        "serve": ModelOptions.model_validate(ctx.params),
        "request_timeout": 2 * timeout,
    }
    try:
        base = LoadtestConfig.model_validate({**ctx.params, **chosen})
    except ValidationError as exc:
        raise fail(str(exc.errors()[0]["msg"])) from None
    configs = _matrix(base) if matrix else [base]
    try:
        results = _run_all(configs, base, show_progress=progress)
    except (FleetError, ErpAiError, ValueError) as exc:
        raise fail(str(exc)) from None
    if as_json:
        payload = (
            [result.model_dump(mode="json") for result in results]
            if matrix
            else results[0].model_dump(mode="json")
        )
        typer.echo(json.dumps(payload, ensure_ascii=False, indent=2))
    else:
        for result in results:
            _print_result(result)
    if readme is not None:
        try:
            update_readme(readme, BLOCK, scaling_block(results))
        except (OSError, ValueError) as exc:
            raise fail(str(exc)) from None
        err_console.print(f"[dim]wrote the '{BLOCK}' block of {escape(str(readme))}[/]")
    if not all(result.ok for result in results):
        raise typer.Exit(code=1)


def _matrix(base: LoadtestConfig) -> list[LoadtestConfig]:
    """The scaling matrix: SQLite (and PostgreSQL when ``db_url`` is one) × 1 and N servers × kill or not."""
    backends: list[tuple[str | None, str | None]] = [(None, None)]  # a temporary SQLite file
    if base.db_url is not None and make_url(base.db_url).get_backend_name() == "postgresql":
        backends.append((base.db_url, base.memory_url))
    kill_at = base.kill_one_at if base.kill_one_at is not None else DEFAULT_MATRIX_KILL_AT
    return [
        base.model_copy(update={"db_url": db, "memory_url": memory, "servers": count, "kill_one_at": kill})
        for db, memory in backends
        for count in sorted({1, base.servers})
        for kill in (None, kill_at)
    ]


def _run_all(
    configs: list[LoadtestConfig], base: LoadtestConfig, *, show_progress: bool
) -> list[LoadtestResult]:
    """Run each configuration on one fleet of ``base.servers`` servers, started once."""
    _check_databases(configs)
    results: list[LoadtestResult] = []
    bar = Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=err_console,
        transient=True,
        disable=not show_progress,
    )
    with bar:
        task = bar.add_task("starting the AI servers", total=None)
        with Fleet(serve_command(base.serve), base.servers) as fleet:
            for number, config in enumerate(configs, start=1):
                label = _label(config, number, len(configs))
                bar.update(task, description=label, completed=0, total=config.total_turns)
                report = _reporter(bar, task, label)
                results.append(run_loadtest(config, fleet=fleet, on_progress=report))
    return results


def _check_databases(configs: list[LoadtestConfig]) -> None:
    """Open each database named (seeding a new demo ERP) and the user, before any server is started."""
    from shared.erp.database import open_demo_erp
    from shared.erp.users import caller_for
    from shared.memory.store import open_memory_store

    for config in configs:
        if config.db_url is None:
            continue  # a temporary SQLite file, made by the run
        erp = open_demo_erp(config.db_url)
        try:
            caller_for(erp, config.user)
            open_memory_store(config.memory_url or config.db_url).close()
        finally:
            erp.engine.dispose()


def _reporter(bar: Progress, task: TaskID, label: str) -> Callable[[LoadProgress], None]:
    """Moves the progress bar after each turn, and prints each fleet event above it."""

    def report(step: LoadProgress) -> None:
        counts = f"[green]{step.recorded} recorded[/] [red]{step.failed} failed[/]"
        bar.update(task, completed=step.done, description=f"{label} {counts}")
        if (event := step.event) is not None:
            bar.console.print(f"[yellow]{event.at_s:6.2f} s[/] server {event.server} {event.kind}")

    return report


def _label(config: LoadtestConfig, number: int, count: int) -> str:
    backend = "sqlite (temporary)" if config.db_url is None else make_url(config.db_url).get_backend_name()
    kill = f", kill at {config.kill_one_at:g} s" if config.kill_one_at is not None else ""
    prefix = f"run {number}/{count}: " if count > 1 else ""
    return f"{prefix}{config.servers} server(s), {backend}{kill}"


def _percentiles(latency: LatencySummary) -> str:
    return f"{latency.p50_ms:.0f} / {latency.p95_ms:.0f} / {latency.p99_ms:.0f} ms"


def _print_result(result: LoadtestResult) -> None:
    audit = result.audit
    title = (
        f"{result.servers} AI server(s), {result.backend}"
        + (f" + {result.memory_backend} memory" if result.memory_backend != result.backend else "")
        + f", {result.conversations} conversations × {result.turns} turns, provider {result.provider}"
    )
    table = Table(title=escape(title), show_header=False)
    table.add_column("what")
    table.add_column("value", justify="right")
    failed = ", ".join(f"{kind} {count}" for kind, count in audit.failed_by_kind.items()) or "none"
    rows = [
        ("turns sent / recorded", f"{audit.attempted} / {audit.recorded}"),
        ("failed (by kind)", f"{audit.failed} ({failed})"),
        ("messages expected / found", f"{audit.messages_expected} / {audit.messages_found}"),
        ("lost", str(audit.lost)),
        ("duplicated", str(audit.duplicated)),
        ("out of order", str(audit.out_of_order)),
        ("half-recorded", str(audit.half_recorded)),
        ("recorded although reported failed", str(audit.phantom)),
        ("conversations with inconsistent state", str(audit.inconsistent_conversations)),
        ("turns planned on stale state", str(audit.stale_turns)),
        ("throughput", f"{result.turns_per_s:.1f} recorded turns/s over {result.elapsed_s:.2f} s"),
        ("turn latency p50 / p95 / p99", _percentiles(result.latency)),
        ("  of which AI calls", _percentiles(result.ai_latency)),
        ("  of which ERP side", _percentiles(result.erp_latency)),
    ]
    if result.not_started:
        rows.append(("turns not sent (time bound)", str(result.not_started)))
    for event in result.events:
        rows.append((f"server {event.server} {event.kind}", f"at {event.at_s:.2f} s"))
    if result.load_average is not None:
        rows.append(("load average at start", " / ".join(f"{x:.2f}" for x in result.load_average)))
    for what, value in rows:
        table.add_row(what, value)
    console.print(table)
    for error in result.sample_errors:
        console.print(f"[dim]failure: {escape(error)}[/]")
    verdict = "[green]audit clean[/]" if result.ok else "[bold red]audit FAILED[/]"
    console.print(verdict)
