"""``erp-ai chat``: a conversation at a prompt, each answer printed as the model writes it."""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import uuid
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.markup import escape

from benchmarks.cli import turns
from benchmarks.cli.common import console, refuse
from planner_mode.server.http_client import AIServerUnauthorized
from shared.errors import ConversationAccessDenied
from shared.security import Caller

if TYPE_CHECKING:
    from shared.engine import AssistantEngine


CHAT_COMMANDS = {
    "/details": "show or hide the plan, operations and call counts after each answer",
    "/new": "start a new conversation",
    "/help": "list these commands",
    "/quit": "leave (also /exit, /salir, Ctrl+D)",
}
"""The chat's commands; any other message that starts with ``/`` is refused, not sent to the model."""
_QUIT = ("/quit", "/exit", "/salir")


def chat(ctx: typer.Context, **options: Any) -> None:
    """Chat interactively with the assistant; answers are printed as the model writes them.

    Type /details to toggle the plan, operations and call counts, /new for a new conversation, /help for the
    commands, /quit to leave. A conversation of another user, an option the mode ignores or an empty
    --conversation is refused before the chat starts (exit 2).
    """
    turns.check_mode_options(ctx)
    conversation_id = turns.new_or_given(options["conversation"])
    engine, caller = turns.open_engine(ctx.params)
    console.print(
        f"[bold]erp-ai chat[/] ({engine.mode}) — conversation {conversation_id}. "
        f"Commands: {', '.join(CHAT_COMMANDS)}.",
        soft_wrap=True,
    )
    # One event loop for the whole session: an HTTP AI client keeps its connections to the loop it opened.
    with asyncio.Runner() as loop:
        stream = not options["no_stream"]
        _chat_loop(engine, caller, conversation_id, loop, details=options["details"], stream=stream)


_OWN_OPTIONS: dict[str, Any] = {
    "conversation": Annotated[
        str | None, typer.Option("--conversation", "-c", help="Continue this conversation id.")
    ],
    "details": Annotated[bool, typer.Option("--details", help="Show details after every answer.")],
}
chat.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
    [
        parameter.replace(annotation=_OWN_OPTIONS.get(name, parameter.annotation))
        for name, parameter in inspect.signature(turns.ask, eval_str=True).parameters.items()
        if name not in ("message", "as_json")
    ]
)
"""``ask``'s options, in its order, but for the question and ``--json``; its own help for two of them."""


def _line_editing() -> None:
    """Give the prompt line editing and a history (arrows, Ctrl-R) where the platform has ``readline``:
    ``input()``, which ``console.input`` calls, uses it once it is imported."""
    with contextlib.suppress(ImportError):
        import readline  # noqa: F401


def _chat_loop(
    engine: AssistantEngine,
    caller: Caller,
    conversation_id: str,
    loop: asyncio.Runner,
    *,
    details: bool,
    stream: bool,
) -> None:
    _line_editing()
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
                result = loop.run(turns.astream_turn(engine, conversation_id, message, caller))
            else:
                result = engine.ask(conversation_id, message, caller=caller)
        except ConversationAccessDenied as exc:
            console.print()
            raise refuse(exc) from None
        except AIServerUnauthorized as exc:  # no turn can succeed: end the prompt's line, then leave
            console.print()
            raise turns.token_refused(exc) from None
        if not stream:
            turns.print_text(result.answer)
        if details:
            turns.print_details(result)
