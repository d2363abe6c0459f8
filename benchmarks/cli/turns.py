"""``erp-ai ask`` and ``erp-ai chat``: one turn, or a conversation, printed as the model writes it."""

from __future__ import annotations

import asyncio
import json
import os
import uuid
from enum import StrEnum
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.markup import escape
from rich.table import Table

from benchmarks.cli.common import (
    SERVER_TOKEN_ENV,
    AnswerModelOpt,
    BaseUrlOpt,
    DbUrl,
    DemoOpt,
    MaxTokensOpt,
    ModelOpt,
    PlanModelOpt,
    Provider,
    ProviderOpt,
    TimeoutOpt,
    UserOpt,
    console,
    err_console,
    errors_as_json,
    fail,
    given,
    open_erp,
    refuse,
)
from benchmarks.modes import ModelOptions, build_engine
from benchmarks.run_turns import stream_turn
from planner_mode.server.http_client import AIServerUnauthorized
from shared.errors import ConversationAccessDenied, ErpAiError, InputError
from shared.llm.factory import DEFAULT_MAX_TOKENS, DEFAULT_TIMEOUT_S
from shared.security import DEMO_CALLER, Caller

if TYPE_CHECKING:
    from shared.engine import AssistantEngine
    from shared.turn import TurnResult


class Mode(StrEnum):
    planner = "planner"
    toolcalling = "toolcalling"


class ContextPolicy(StrEnum):
    windowed = "windowed"
    full_history = "full_history"


class Grounding(StrEnum):
    refuse = "refuse"
    flag = "flag"
    off = "off"


MemoryUrl = Annotated[
    str | None,
    typer.Option(
        "--memory-url",
        envvar="ERP_AI_MEMORY_URL",
        help="Conversation memory URL (default: the ERP database).",
    ),
]
ModeOpt = Annotated[Mode, typer.Option("--mode", help="Architecture that answers.")]
ContextOpt = Annotated[
    ContextPolicy, typer.Option("--context", help="Tool calling only: what context the agent gets.")
]
StructuredOpt = Annotated[
    bool, typer.Option("--structured", help="Tool calling only: structured final answer with memory/state.")
]
GroundingOpt = Annotated[
    Grounding,
    typer.Option(
        "--grounding",
        help="An answer stating figures the ERP did not return: refuse it (show the ERP's results instead), "
        "flag it (show it, list the figures, keep them out of memory) or off.",
    ),
]
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

_TOOLCALLING_ONLY = ("context", "structured")
_PLANNER_ONLY = ("plan_model", "answer_model")
_LOCAL_MODEL_OPTIONS = ("provider", "model", *_PLANNER_ONLY, "base_url", "latency_profile", "max_tokens")
"""The options that build a model in this process: with ``--server`` the AI server's model answers instead."""


def check_mode_options(ctx: typer.Context) -> None:
    """Refuse, with exit 2 and one line, an option the chosen mode would silently ignore."""
    planner, servers = ctx.params["mode"] is Mode.planner, ctx.params["server"]
    if not planner and servers:
        raise fail(
            "--server applies to --mode planner only: the stateless AI server runs the planner's calls.",
            kind="usage",
        )
    rules = (
        (
            not planner,
            _PLANNER_ONLY,
            "applies to --mode planner only: tool calling uses --model for every call.",
        ),
        (planner, _TOOLCALLING_ONLY, "applies to --mode toolcalling only; the planner ignores it."),
        (
            planner and servers,
            _LOCAL_MODEL_OPTIONS,
            "does not apply with --server: the AI server's own model answers (choose it when starting the "
            "server, erp-ai serve).",
        ),
    )
    for applies, options, why in rules:
        for name in (name for name in options if applies and given(ctx, name)):
            raise fail(f"--{name.replace('_', '-')} {why}", kind="usage")


def new_or_given(conversation: str | None) -> str:
    """The ``--conversation`` to continue, or a new id when the option is absent; an empty or blank id names
    nothing, so it is refused rather than replaced by a new conversation the user never hears of."""
    if conversation is None:
        return uuid.uuid4().hex
    if not conversation.strip():
        raise fail(
            "--conversation is empty: give the id of the conversation to continue, or leave the option out "
            "to start a new one.",
            kind="input",
        )
    return conversation


def token_refused(error: AIServerUnauthorized) -> typer.Exit:
    """The AI server refused the bearer token: a configuration error to fix (exit 2, one line saying what
    to set), not a provider failure to retry."""
    return fail(
        f"The AI server {error.url} refused the request (missing or wrong bearer token): set "
        f"{SERVER_TOKEN_ENV} to the token the server was started with (erp-ai serve --token).",
        kind="configuration",
    )


def open_engine(params: dict[str, Any]) -> tuple[AssistantEngine, Caller]:
    """The engine ``ask`` and ``chat`` use (from their options) and the ERP user they run as; a configuration,
    storage or unknown user problem, or a conversation of another user, exits 2 with one sentence."""
    try:
        return _assemble_engine(**params)
    except ErpAiError as exc:
        raise refuse(exc) from None


def _assemble_engine(**params: Any) -> tuple[AssistantEngine, Caller]:
    from shared.erp.users import caller_for
    from shared.memory.store import open_memory_store
    from shared.operations.sales import sales_registry

    erp = open_erp(params["db_url"], params["demo"])
    caller = caller_for(erp, params["user"])
    store = open_memory_store(params["memory_url"] or params["db_url"])
    if params["conversation"] is not None:  # another user's conversation is refused before anything else
        store.check_access(params["conversation"], caller.user_id)
    options = ModelOptions.model_validate({**params, "provider": params["provider"].value})
    pieces: dict[str, Any] = {
        "registry": sales_registry(),
        "erp": erp,
        "store": store,
        "grounding": params["grounding"].value,
    }
    if params["mode"] is Mode.toolcalling:
        mode = "toolcalling" if params["context"] is ContextPolicy.windowed else "toolcalling-full"
        engine = build_engine(mode, model=options.chat_model(), structured=params["structured"], **pieces)
    elif params["server"]:
        from planner_mode import HttpAIClient

        # The server answers when its model is done, and the model's own timeout bounds each read of a
        # streamed reply, not the whole call: give the request room beyond one model timeout.
        token = os.environ.get(SERVER_TOKEN_ENV)
        ai = HttpAIClient(params["server"], token=token, timeout=2 * options.timeout)
        engine = build_engine("planner", ai=ai, **pieces)
    else:
        answer = options.chat_model(options.answer_model) if options.answer_model else None
        engine = build_engine(
            "planner", model=options.chat_model(options.plan_model), answer_model=answer, **pieces
        )
    return engine, caller


def print_text(text: str, *, end: str = "\n") -> None:
    """Model text, verbatim: never rich markup, emoji codes or highlighting, never re-wrapped."""
    console.print(text, end=end, markup=False, highlight=False, emoji=False, soft_wrap=True)


def print_turn(result: TurnResult, *, show_details: bool) -> None:
    print_text(result.answer)
    if show_details:
        print_details(result)


async def astream_turn(
    engine: AssistantEngine, conversation_id: str, message: str, caller: Caller
) -> TurnResult:
    """Run one turn through ``engine.astream``, printing the answer's text as it arrives; return the result.

    When the turn ends, the reader must be looking at its final answer (:mod:`shared.events`): if the text
    shown is that answer (or ends with it, after a tool-calling preamble), a newline ends it; if it differs
    (the turn failed after some text was shown), the final answer follows :data:`FINAL_ANSWER_RULE`; if no
    text was shown, the answer is printed whole. Raises ``ConversationAccessDenied`` (and, through an AI
    server that refuses the token, ``AIServerUnauthorized``) before printing anything.
    """
    shown: list[str] = []

    def show(text: str) -> None:
        print_text(text, end="")
        shown.append(text)

    result = await stream_turn(engine, conversation_id, message, caller, on_text=show)
    _end_streamed_answer("".join(shown), result.answer)
    return result


def _end_streamed_answer(shown: str, answer: str) -> None:
    if not shown:
        print_text(answer)
        return
    console.print()
    final = answer.strip()
    if shown.strip() == final or (final and shown.rstrip().endswith(final)):
        return
    console.print(f"[dim]{FINAL_ANSWER_RULE}[/]")
    print_text(answer)


def print_details(result: TurnResult) -> None:
    table = Table(title="Turn details", show_lines=False)
    table.add_column("operation")
    table.add_column("parameters")
    table.add_column("result / error", overflow="fold")
    for op in result.operations:
        outcome = op.error if op.error else json.dumps(op.result, ensure_ascii=False)[:200]
        table.add_row(
            *(escape(cell) for cell in (op.function, json.dumps(op.parameters, ensure_ascii=False), outcome))
        )
    if result.plan is not None:
        console.print_json(json.dumps(result.plan, ensure_ascii=False))
    if result.operations:
        console.print(table)
    console.print(
        f"[dim]{result.mode}: {result.model_calls} model call(s), {result.input_tokens} in / "
        f"{result.output_tokens} out tokens, model {result.model_ms:.1f} ms, "
        f"harness {result.harness_ms:.1f} ms[/]"
    )
    for error in result.errors:
        console.print(f"[yellow]warning:[/] {escape(error)}")


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
    grounding: GroundingOpt = Grounding.refuse,
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
    with errors_as_json(as_json):
        check_mode_options(ctx)  # before anything is opened or paid for
        conversation_id = new_or_given(conversation)
        try:
            from shared.inputs import check_turn_input

            check_turn_input(conversation_id, message)
        except InputError as exc:
            raise refuse(exc) from None
        engine, caller = open_engine(ctx.params)
        try:
            if as_json or no_stream:
                result = engine.ask(conversation_id, message, caller=caller)
            else:
                result = asyncio.run(astream_turn(engine, conversation_id, message, caller))
        except ConversationAccessDenied as exc:
            raise refuse(exc) from None
        except AIServerUnauthorized as exc:
            raise token_refused(exc) from None
    if as_json:
        typer.echo(result.model_dump_json(indent=2))
    else:
        if no_stream:
            print_turn(result, show_details=details)
        elif details:
            print_details(result)
        if conversation is None and result.recorded:  # a turn that recorded nothing left nothing to continue
            hint = f"conversation: {conversation_id} (continue with --conversation {conversation_id})"
            err_console.print(f"[dim]{escape(hint)}[/]", soft_wrap=True)  # never wrapped: a command to copy
    if result.failure is not None:  # the answer is an apology: let scripts notice
        err_console.print(
            f"[yellow]The turn failed ({result.failure}): {escape('; '.join(result.errors))}[/]",
            soft_wrap=True,
        )
        raise typer.Exit(2 if result.failure in ("input", "storage") else 1)
