"""The `erp-ai` command line: ops, ask (one turn, JSON output, continuation across processes), errors."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from rich.console import Console
from typer.testing import CliRunner

from benchmarks.cli import app
from benchmarks.commands import turns
from shared.turn import ExecutedOperation, TurnResult

runner = CliRunner()


@pytest.fixture
def cli_env(erp_db_url: str, erp: object, tmp_path: Path) -> dict[str, str]:
    """Environment pointing the CLI at the session's seeded ERP and a fresh memory database."""
    return {"ERP_AI_DB_URL": erp_db_url, "ERP_AI_MEMORY_URL": f"sqlite:///{tmp_path / 'memory.sqlite3'}"}


def test_ops_call_prints_the_articles_2025_sales(cli_env: dict[str, str]) -> None:
    result = runner.invoke(app, ["ops", "call", "ventas_anuales", '{"anio": 2025}'], env=cli_env)

    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["total"] == 850_000_000


def test_ops_list_shows_every_operation(cli_env: dict[str, str]) -> None:
    result = runner.invoke(app, ["ops", "list", "--json"], env=cli_env)

    assert result.exit_code == 0, result.output
    names = {spec["name"] for spec in json.loads(result.stdout)}
    assert {"ventas_anuales", "mejor_cliente", "compras_cliente", "buscar_cliente"} <= names


def test_ops_call_with_unknown_operation_says_what_is_valid(cli_env: dict[str, str]) -> None:
    result = runner.invoke(app, ["ops", "call", "borrar_facturas", "{}"], env=cli_env)

    assert result.exit_code == 2
    assert "La operación 'borrar_facturas' no existe" in result.output
    assert "ventas_anuales" in result.output


def test_ops_call_with_bad_json_explains_the_expected_format(cli_env: dict[str, str]) -> None:
    result = runner.invoke(app, ["ops", "call", "ventas_anuales", "{anio: 2025"], env=cli_env)

    assert result.exit_code == 2
    assert "not valid JSON" in result.output


def test_ask_json_prints_a_turn_result(cli_env: dict[str, str]) -> None:
    result = runner.invoke(app, ["ask", "¿Cuánto vendimos en 2025?", "--json"], env=cli_env)

    assert result.exit_code == 0, result.output
    turn = json.loads(result.stdout)
    assert turn["mode"] == "planner"
    assert turn["model_calls"] == 2
    assert [op["funcion"] for op in turn["operations"]] == ["ventas_anuales"]
    assert "₲850.000.000" in turn["answer"]


def test_ask_toolcalling_mode_uses_the_agent(cli_env: dict[str, str]) -> None:
    result = runner.invoke(
        app, ["ask", "¿Cuánto vendimos en 2025?", "--mode", "toolcalling", "--json"], env=cli_env
    )

    assert result.exit_code == 0, result.output
    turn = json.loads(result.stdout)
    assert turn["mode"] == "toolcalling"
    assert "₲850.000.000" in turn["answer"]


def test_a_conversation_continues_in_a_new_process(cli_env: dict[str, str]) -> None:
    """App-owned memory: the second process knows nothing but the conversation id and the database."""
    env = {**os.environ, **cli_env}
    command = [
        sys.executable,
        "-m",
        "benchmarks.cli",
        "ask",
        "--json",
        "--conversation",
        "conv-two-processes",
    ]

    first = subprocess.run(
        [*command, "¿Cuál fue mi mejor cliente en 2025?"], env=env, capture_output=True, text=True, check=True
    )
    second = subprocess.run(
        [*command, "¿Y cuánto compró?"], env=env, capture_output=True, text=True, check=True
    )

    assert "Empresa ABC" in json.loads(first.stdout)["answer"]
    follow_up = json.loads(second.stdout)
    assert follow_up["operations"][0]["funcion"] == "compras_cliente"
    assert follow_up["operations"][0]["parametros"]["cliente"] == "Empresa ABC"
    assert "₲120.000.000" in follow_up["answer"]


def test_unknown_provider_configuration_is_one_clear_sentence(cli_env: dict[str, str]) -> None:
    env = {**cli_env, "GOOGLE_API_KEY": ""}
    result = runner.invoke(app, ["ask", "hola", "--provider", "gemini"], env=env)

    assert result.exit_code == 2
    assert "GOOGLE_API_KEY" in result.output


def test_help_lists_every_command() -> None:
    result = runner.invoke(app, ["--help"])

    assert result.exit_code == 0
    for command in ("bench", "report", "ask", "chat", "serve", "ops", "emulate"):
        assert command in result.output


def test_chat_answers_until_quit_and_toggles_details(cli_env: dict[str, str]) -> None:
    result = runner.invoke(
        app, ["chat"], input="¿Cuánto vendimos en 2025?\n/details\nhola\n/quit\n", env=cli_env
    )

    assert result.exit_code == 0, result.output
    assert "₲850.000.000" in result.output
    assert "details on" in result.output
    assert "model call(s)" in result.output


def _free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _wait_until_up(url: str, process: subprocess.Popen[str], timeout_s: float = 30.0) -> None:
    import time

    import httpx

    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise AssertionError(f"server exited early: {process.stderr.read() if process.stderr else ''}")
        try:
            httpx.get(url, timeout=1.0)
            return
        except httpx.TransportError:
            time.sleep(0.1)
    raise AssertionError(f"{url} did not come up in {timeout_s} s")


def test_serve_runs_the_ai_server_that_ask_uses_over_http(cli_env: dict[str, str]) -> None:
    port = _free_port()
    env = {**os.environ, **cli_env, "ERP_AI_SERVER_TOKEN": "s3cret"}
    server = subprocess.Popen(
        [sys.executable, "-m", "benchmarks.cli", "serve", "--port", str(port)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        _wait_until_up(f"http://127.0.0.1:{port}/healthz", server)
        url = f"http://127.0.0.1:{port}"

        answered = runner.invoke(
            app, ["ask", "¿Cuánto vendimos en 2025?", "--server", url, "--json"], env=env
        )
        refused = runner.invoke(
            app,
            ["ask", "¿Cuánto vendimos en 2025?", "--server", url, "--json"],
            env={**env, "ERP_AI_SERVER_TOKEN": ""},
        )
    finally:
        server.terminate()
        server.wait(timeout=10)

    assert answered.exit_code == 0, answered.output
    turn = json.loads(answered.stdout)
    assert turn["model_calls"] == 2 and "₲850.000.000" in turn["answer"]
    assert refused.exit_code == 2  # a token to set, not a provider failure to retry
    unauthorised = json.loads(refused.stdout)["error"]
    assert unauthorised["kind"] == "configuration" and "ERP_AI_SERVER_TOKEN" in unauthorised["message"]


def test_emulate_serves_the_ollama_protocol(cli_env: dict[str, str]) -> None:
    import httpx

    port = _free_port()
    emulator = subprocess.Popen(
        [sys.executable, "-m", "benchmarks.cli", "emulate", "ollama", "--port", str(port)],
        env={**os.environ, **cli_env},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        _wait_until_up(f"http://127.0.0.1:{port}/api/version", emulator)
        reply = httpx.post(
            f"http://127.0.0.1:{port}/api/chat",
            json={"model": "offline", "stream": False, "messages": [{"role": "user", "content": "Hola"}]},
            timeout=10.0,
        )
    finally:
        emulator.terminate()
        emulator.wait(timeout=10)

    assert reply.status_code == 200
    assert reply.json()["message"]["role"] == "assistant"


@pytest.mark.parametrize("kind", ["ollama", "gemini"])
def test_bench_runs_through_a_real_provider_client_over_http(
    cli_env: dict[str, str], tmp_path: Path, kind: str
) -> None:
    """The whole benchmark through the real ChatOllama / ChatGoogleGenerativeAI client and an emulator."""
    from benchmarks.results import read_results
    from benchmarks.stand_ins.emulators import start_emulator

    out = tmp_path / "run"
    with start_emulator(kind) as base_url:  # type: ignore[arg-type]
        env = {**cli_env, "GOOGLE_API_KEY": "emulator-key"}
        model = "offline" if kind == "ollama" else "gemini-2.5-flash"
        provider = ["--provider", kind, "--base-url", base_url, "--model", model]
        selection = ["--tag", "articulo", "--modes", "planner,toolcalling", "--out", str(out)]
        result = runner.invoke(app, ["bench", *provider, *selection, "--no-progress"], env=env)

    assert result.exit_code == 0, result.output
    results = read_results(out / "results.jsonl")
    assert results.meta.provider == kind and results.meta.offline  # the emulator says who answered
    planner = [row for row in results.rows if row.mode == "planner"]
    assert planner and all(row.model_calls <= 2 and row.input_tokens > 0 for row in planner)
    assert all(row.passed for row in results.rows), [row.score for row in results.rows if not row.passed]


def test_model_text_that_looks_like_rich_markup_is_printed_verbatim(monkeypatch: pytest.MonkeyPatch) -> None:
    turn = TurnResult(
        mode="planner",
        conversation_id="c",
        question="q",
        answer="Total [/] [bold]sin formato[/bold]",
        operations=[ExecutedOperation(funcion="[/x]", parametros={"lista": ["[/]"]}, error="[red]no[/]")],
        errors=["[/] raro"],
    )
    recorder = Console(record=True, width=200)
    monkeypatch.setattr(turns, "console", recorder)

    turns._print_turn(turn, show_details=True)

    text = recorder.export_text()
    assert "Total [/] [bold]sin formato[/bold]" in text
    assert "[red]no[/]" in text and "[/] raro" in text
