"""`erp-ai ask` and `erp-ai chat` print the answer as the model writes it (benchmarks/cli/turns.py).

Each answer delta is printed when it arrives, verbatim; when the turn ends, the reader is left looking at the
final answer: nothing more when the text shown is it, the final answer after a separator when it differs (a
failure after partial text). ``--no-stream`` and ``--json`` print when the turn ends, as before.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest
from rich.console import Console
from typer.testing import CliRunner

from benchmarks import modes
from benchmarks.cli import turns
from benchmarks.cli.app import app
from benchmarks.cli.turns import FINAL_ANSWER_RULE
from shared.events import AnswerDelta, OperationDone, TurnDone, TurnEvent
from shared.security import DEMO_CALLER, Caller
from shared.turn import ExecutedOperation, TurnResult

runner = CliRunner()
QUESTION = "¿Cuánto vendimos en 2025?"


@pytest.fixture
def screen(monkeypatch: pytest.MonkeyPatch) -> Console:
    """The CLI's console, recorded."""
    recorder = Console(record=True, width=200, force_terminal=False)
    monkeypatch.setattr(turns, "console", recorder)
    return recorder


class ScriptedEngine:
    """Streams the given deltas, then ``TurnDone`` with ``answer``; notes what the screen showed meanwhile."""

    mode = "planner"

    def __init__(self, screen: Console, deltas: list[str], answer: str, **result: Any) -> None:
        self.screen = screen
        self.deltas = deltas
        self.result = TurnResult(mode="planner", conversation_id="c", question="q", answer=answer, **result)
        self.before_done = ""

    async def astream(
        self, conversation_id: str, message: str, caller: Caller, **_: Any
    ) -> AsyncIterator[TurnEvent]:
        yield OperationDone(operation=ExecutedOperation(funcion="ventas_anuales", parametros={"anio": 2025}))
        for text in self.deltas:
            yield AnswerDelta(text=text)
        self.before_done = self.screen.export_text(clear=False)
        yield TurnDone(result=self.result)


ANSWER = "En 2025 vendimos ₲850.000.000."
PROVIDER_FAILED = "No pude completar la respuesta: el proveedor del modelo falló. Intenta de nuevo."
MARKUP = "Total [bold]sin formato[/bold] [/] :smile:"


@pytest.mark.parametrize(
    ("deltas", "answer", "result", "screen_shows"),
    [
        (["En 2025 ", "vendimos ", "₲850.000.000."], ANSWER, {}, f"{ANSWER}\n"),  # printed once, a newline
        (
            ["En 2025 ", "vend"],
            PROVIDER_FAILED,
            {"failure": "provider", "recorded": False},
            f"En 2025 vend\n{FINAL_ANSWER_RULE}\n{PROVIDER_FAILED}\n",
        ),
        ([], "No pude entender.", {"failure": "model_output"}, "No pude entender.\n"),
        (
            ["Voy a consultar las ventas.", "\n\n", ANSWER],
            ANSWER,
            {},
            f"Voy a consultar las ventas.\n\n{ANSWER}\n",
        ),
        ([MARKUP[:12], MARKUP[12:]], MARKUP, {}, f"{MARKUP}\n"),  # never markup or emoji
    ],
    ids=[
        "answer",
        "failure-after-partial-text",
        "failure-before-any-text",
        "tool-calling-preamble",
        "markup",
    ],
)
def test_each_delta_is_on_screen_before_the_turn_ends_and_the_final_answer_is_shown_once(
    deltas: list[str], answer: str, result: dict[str, Any], screen_shows: str, screen: Console
) -> None:
    engine = ScriptedEngine(screen, deltas, answer, **result)

    returned = asyncio.run(turns.astream_turn(engine, "c", "q", DEMO_CALLER))  # type: ignore[arg-type]

    assert engine.before_done == "".join(deltas)
    assert screen.export_text() == screen_shows
    assert returned is engine.result


@pytest.fixture
def pieces(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The pieces of text printed without a line end (as they stream), also printed as usual."""
    printed: list[str] = []
    print_text = turns.print_text

    def recording(text: str, *, end: str = "\n") -> None:
        if end == "":
            printed.append(text)
        print_text(text, end=end)

    monkeypatch.setattr(turns, "print_text", recording)
    return printed


@pytest.mark.parametrize("through_the_ai_server", [False, True])
def test_ask_streams_the_answer_and_ends_with_the_screen_no_stream_shows(
    through_the_ai_server: bool, cli_env: dict[str, str | None], pieces: list[str]
) -> None:
    from benchmarks.serving import ServerThread
    from benchmarks.stand_ins import build_model
    from planner_mode import create_app

    with ServerThread(create_app(build_model("offline"))) as server:
        server_args = ["--server", server.url] if through_the_ai_server else []
        streamed = runner.invoke(app, ["ask", QUESTION, *server_args], env=cli_env)
        whole = runner.invoke(app, ["ask", QUESTION, "--no-stream", *server_args], env=cli_env)

    assert streamed.exit_code == whole.exit_code == 0, streamed.output
    assert len(pieces) >= 2 and "".join(pieces).strip() == streamed.stdout.strip()
    assert streamed.stdout.count("₲850.000.000") == 1
    assert streamed.stdout == whole.stdout  # the same screen in the end


def test_ask_toolcalling_streams_and_shows_details_after_the_answer(cli_env: dict[str, str | None]) -> None:
    result = runner.invoke(app, ["ask", QUESTION, "--mode", "toolcalling", "--details"], env=cli_env)

    assert result.exit_code == 0, result.output
    assert result.stdout.index("₲850.000.000") < result.stdout.index("model call(s)")
    assert "ventas_anuales" in result.stdout


def test_ask_prints_the_failure_after_the_partial_answer_and_exits_1(
    cli_env: dict[str, str | None], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Call 2 (the --answer-model) drops its connection midway: the text so far, then the failure message."""
    from benchmarks.stand_ins import build_model

    def models(provider: str, *, model: str | None, **kw: Any) -> Any:
        if model == "roto":
            return build_model("offline", faults="stream_break")
        return build_model(provider, model=model, **kw)

    monkeypatch.setattr(modes, "build_model", models)
    result = runner.invoke(app, ["ask", QUESTION, "--answer-model", "roto"], env=cli_env)

    assert result.exit_code == 1, result.output
    shown, _, final = result.stdout.partition(FINAL_ANSWER_RULE)
    assert shown.strip() and final.strip(), result.stdout
    assert "el servicio de IA no está disponible" in final and "₲850.000.000" not in final
    assert "The turn failed (provider)" in result.output


def test_chat_streams_each_answer_until_quit_and_no_stream_prints_the_same(
    cli_env: dict[str, str | None],
) -> None:
    session = f"{QUESTION}\n/details\nhola\n/quit\n"
    streamed = runner.invoke(app, ["chat"], input=session, env=cli_env)
    whole = runner.invoke(app, ["chat", "--no-stream"], input=session, env=cli_env)

    assert streamed.exit_code == whole.exit_code == 0, streamed.output
    answers = [line for line in streamed.stdout.splitlines() if "erp>" in line]
    assert len(answers) == 2 and "₲850.000.000" in answers[0]
    assert answers == [line for line in whole.stdout.splitlines() if "erp>" in line]
    details = streamed.stdout.split("details on")[-1]  # toggled on: shown after the next answer
    assert "model call(s)" in details and "model call(s)" not in streamed.stdout.split("details on")[0]
