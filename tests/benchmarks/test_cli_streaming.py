"""`erp-ai ask` and `erp-ai chat` print the answer as the model writes it (benchmarks/cli.py).

Each answer delta is printed when it arrives, verbatim; when the turn ends, the reader is left looking at the
final answer: nothing more when the text shown is it, the final answer after a separator when it differs (a
failure after partial text). ``--no-stream`` and ``--json`` print when the turn ends, as before.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console
from typer.testing import CliRunner

from benchmarks import modes
from benchmarks.cli import app
from benchmarks.commands import turns
from benchmarks.commands.turns import FINAL_ANSWER_RULE
from shared.events import AnswerDelta, OperationDone, TurnDone, TurnEvent
from shared.security import DEMO_CALLER, Caller
from shared.turn import ExecutedOperation, TurnResult

runner = CliRunner()
QUESTION = "¿Cuánto vendimos en 2025?"


@pytest.fixture
def cli_env(erp_db_url: str, erp: object, tmp_path: Path) -> dict[str, str]:
    """Environment pointing the CLI at the session's seeded ERP and a fresh memory database."""
    return {"ERP_AI_DB_URL": erp_db_url, "ERP_AI_MEMORY_URL": f"sqlite:///{tmp_path / 'memory.sqlite3'}"}


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


def _stream(engine: ScriptedEngine) -> TurnResult:
    return asyncio.run(turns._astream_turn(engine, "c", "q", DEMO_CALLER))  # type: ignore[arg-type]


def test_each_delta_is_on_screen_before_the_turn_ends(screen: Console) -> None:
    engine = ScriptedEngine(
        screen, ["En 2025 ", "vendimos ", "₲850.000.000."], "En 2025 vendimos ₲850.000.000."
    )

    result = _stream(engine)

    assert engine.before_done == "En 2025 vendimos ₲850.000.000."
    assert screen.export_text() == "En 2025 vendimos ₲850.000.000.\n"  # printed once, then a newline
    assert result is engine.result


def test_a_turn_that_fails_after_partial_text_ends_with_the_failure_message_after_a_separator(
    screen: Console,
) -> None:
    failure = "No pude completar la respuesta: el proveedor del modelo falló. Intenta de nuevo."
    engine = ScriptedEngine(screen, ["En 2025 ", "vend"], failure, failure="provider", recorded=False)

    _stream(engine)

    assert screen.export_text() == f"En 2025 vend\n{FINAL_ANSWER_RULE}\n{failure}\n"


def test_a_turn_that_fails_before_any_text_prints_its_message_once(screen: Console) -> None:
    failure = "No pude entender la respuesta del modelo. Intenta de nuevo."
    _stream(ScriptedEngine(screen, [], failure, failure="model_output"))

    assert screen.export_text() == f"{failure}\n"


def test_a_tool_calling_preamble_before_the_answer_is_not_followed_by_the_answer_again(
    screen: Console,
) -> None:
    answer = "En 2025 vendimos ₲850.000.000."
    _stream(ScriptedEngine(screen, ["Voy a consultar las ventas.", "\n\n", answer], answer))

    assert screen.export_text() == f"Voy a consultar las ventas.\n\n{answer}\n"
    assert FINAL_ANSWER_RULE not in screen.export_text()


def test_streamed_model_text_is_never_markup_or_emoji(screen: Console) -> None:
    text = "Total [bold]sin formato[/bold] [/] :smile:"
    _stream(ScriptedEngine(screen, [text[:12], text[12:]], text))

    assert screen.export_text() == f"{text}\n"


def test_ask_streams_the_answer_with_the_offline_model(
    cli_env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    pieces: list[str] = []
    print_text = turns._print_text

    def recording(text: str, *, end: str = "\n") -> None:
        if end == "":
            pieces.append(text)
        print_text(text, end=end)

    monkeypatch.setattr(turns, "_print_text", recording)
    streamed = runner.invoke(app, ["ask", QUESTION], env=cli_env)
    whole = runner.invoke(app, ["ask", QUESTION, "--no-stream"], env=cli_env)

    assert streamed.exit_code == whole.exit_code == 0, streamed.output
    assert len(pieces) >= 2 and "₲850.000.000" in "".join(pieces)
    assert streamed.stdout.count("₲850.000.000") == 1
    assert streamed.stdout == whole.stdout  # the same screen in the end


def test_ask_toolcalling_streams_and_shows_details_after_the_answer(cli_env: dict[str, str]) -> None:
    result = runner.invoke(app, ["ask", QUESTION, "--mode", "toolcalling", "--details"], env=cli_env)

    assert result.exit_code == 0, result.output
    assert result.stdout.index("₲850.000.000") < result.stdout.index("model call(s)")
    assert "ventas_anuales" in result.stdout


def test_ask_prints_the_failure_after_the_partial_answer_and_exits_1(
    cli_env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Call 2 (the --answer-model) drops its connection midway: the text so far, then the failure message."""
    from shared.llm.factory import build_chat_model

    def models(provider: str, *, model: str | None, **kw: Any) -> Any:
        if model == "roto":
            return build_chat_model("offline", faults="stream_break")
        return build_chat_model(provider, model=model, **kw)

    monkeypatch.setattr(modes, "build_chat_model", models)
    result = runner.invoke(app, ["ask", QUESTION, "--answer-model", "roto"], env=cli_env)

    assert result.exit_code == 1, result.output
    shown, _, final = result.stdout.partition(FINAL_ANSWER_RULE)
    assert shown.strip() and final.strip(), result.stdout
    assert "el servicio de IA no está disponible" in final and "₲850.000.000" not in final
    assert "The turn failed (provider)" in result.output


def test_json_output_is_the_turn_result_alone(cli_env: dict[str, str]) -> None:
    result = runner.invoke(app, ["ask", QUESTION, "--json"], env=cli_env)

    assert result.exit_code == 0, result.output
    turn = json.loads(result.stdout)  # nothing but the JSON document on stdout
    assert "₲850.000.000" in turn["answer"] and turn["first_answer_ms"] is None


def test_chat_streams_each_answer_and_no_stream_prints_the_same(cli_env: dict[str, str]) -> None:
    session = f"{QUESTION}\nhola\n/quit\n"
    streamed = runner.invoke(app, ["chat"], input=session, env=cli_env)
    whole = runner.invoke(app, ["chat", "--no-stream"], input=session, env=cli_env)

    assert streamed.exit_code == whole.exit_code == 0, streamed.output
    answers = [line for line in streamed.stdout.splitlines() if "erp>" in line]
    assert len(answers) == 2 and "₲850.000.000" in answers[0]
    assert answers == [line for line in whole.stdout.splitlines() if "erp>" in line]


def test_ask_through_the_ai_server_streams_the_answer(
    cli_env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from benchmarks.serving import ServerThread
    from planner_mode import create_app
    from shared.llm.factory import build_chat_model

    pieces: list[str] = []
    print_text = turns._print_text

    def recording(text: str, *, end: str = "\n") -> None:
        if end == "":
            pieces.append(text)
        print_text(text, end=end)

    monkeypatch.setattr(turns, "_print_text", recording)
    with ServerThread(create_app(build_chat_model("offline"))) as server:
        result = runner.invoke(app, ["ask", QUESTION, "--server", server.url], env=cli_env)

    assert result.exit_code == 0, result.output
    assert len(pieces) >= 2 and result.stdout.count("₲850.000.000") == 1
    assert "".join(pieces).strip() == result.stdout.strip()
