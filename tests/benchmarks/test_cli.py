"""The `erp-ai` command line: ops, ask (one turn, JSON output, continuation across processes), chat, serve,
bench through a real provider client, and what every command's help says."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
from rich.console import Console
from typer.testing import CliRunner

from benchmarks.cli import turns
from benchmarks.cli.app import app
from benchmarks.loadtest_fleet import free_port
from benchmarks.stand_ins.emulators import FAULT_MODES
from shared.turn import ExecutedOperation, TurnResult
from tests.benchmarks.bench_fakes import subprocess_env

runner = CliRunner()
CLI = [sys.executable, "-m", "benchmarks.cli"]


@pytest.mark.parametrize(
    ("call", "says"),
    [
        (["borrar_facturas", "{}"], ["La operación 'borrar_facturas' no existe", "ventas_anuales"]),
        (["ventas_anuales", "{anio: 2025"], ["not valid JSON"]),
        (["ventas_anuales", '{"anio": ' + "[" * 100_000 + "]" * 100_000 + "}"], ["nests too deeply"]),
    ],
    ids=["unknown-operation", "bad-json", "deeply-nested"],
)
def test_ops_call_refuses_with_what_to_pass_instead(
    call: list[str], says: list[str], cli_env: dict[str, str | None]
) -> None:
    result = runner.invoke(app, ["ops", "call", *call], env=cli_env)

    assert result.exit_code == 2
    error = json.loads(result.stdout)["error"]["message"]  # a refusal of ops call is JSON too
    assert all(text in error for text in says) and "Traceback" not in result.output


@pytest.mark.parametrize("mode", ["planner", "toolcalling"])
def test_ask_json_prints_the_turn_result_alone(mode: str, cli_env: dict[str, str | None]) -> None:
    result = runner.invoke(app, ["ask", "¿Cuánto vendimos en 2025?", "--mode", mode, "--json"], env=cli_env)

    assert result.exit_code == 0, result.output
    turn = json.loads(result.stdout)  # nothing but the JSON document on stdout
    assert turn["mode"] == mode and "₲850.000.000" in turn["answer"] and turn["first_answer_ms"] is None
    assert [op["funcion"] for op in turn["operations"]] == ["ventas_anuales"]
    if mode == "planner":
        assert turn["model_calls"] == 2


def test_a_conversation_continues_in_a_new_process(cli_env: dict[str, str | None]) -> None:
    """App-owned memory: the second process knows nothing but the conversation id and the database."""
    ask = [*CLI, "ask", "--json", "--conversation", "conv-two-processes"]
    env = subprocess_env(cli_env)

    first = subprocess.run(
        [*ask, "¿Cuál fue mi mejor cliente en 2025?"], env=env, capture_output=True, check=True
    )
    second = subprocess.run([*ask, "¿Y cuánto compró?"], env=env, capture_output=True, text=True, check=True)

    assert "Empresa ABC" in json.loads(first.stdout)["answer"]
    follow_up = json.loads(second.stdout)
    assert follow_up["operations"][0]["funcion"] == "compras_cliente"
    assert follow_up["operations"][0]["parametros"]["cliente"] == "Empresa ABC"
    assert "₲120.000.000" in follow_up["answer"]


def test_unknown_provider_configuration_is_one_clear_sentence(cli_env: dict[str, str | None]) -> None:
    result = runner.invoke(
        app, ["ask", "hola", "--provider", "gemini"], env={**cli_env, "GOOGLE_API_KEY": ""}
    )

    assert result.exit_code == 2
    assert "GOOGLE_API_KEY" in result.output


def wait_until_up(url: str, process: subprocess.Popen[str], timeout_s: float = 30.0) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise AssertionError(f"exited early: {process.stderr.read() if process.stderr else ''}")
        try:
            httpx.get(url, timeout=1.0)  # not a model request: no emulator fault is used up
            return
        except httpx.TransportError:
            time.sleep(0.1)
    raise AssertionError(f"{url} did not come up in {timeout_s} s")


def test_serve_runs_the_ai_server_that_ask_uses_over_http(cli_env: dict[str, str | None]) -> None:
    port = free_port()
    env = {**cli_env, "ERP_AI_SERVER_TOKEN": "s3cret"}
    server = subprocess.Popen(
        [*CLI, "serve", "--port", str(port)], env=subprocess_env(env), stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        wait_until_up(f"http://127.0.0.1:{port}/healthz", server)
        ask = ["ask", "¿Cuánto vendimos en 2025?", "--server", f"http://127.0.0.1:{port}", "--json"]
        answered = runner.invoke(app, ask, env=env)
        refused = runner.invoke(app, ask, env={**env, "ERP_AI_SERVER_TOKEN": "wrong"})
    finally:
        server.terminate()
        server.wait(timeout=10)

    assert answered.exit_code == 0, answered.output
    turn = json.loads(answered.stdout)
    assert turn["model_calls"] == 2 and "₲850.000.000" in turn["answer"]
    assert refused.exit_code == 2  # a token to set, not a provider failure to retry
    unauthorised = json.loads(refused.stdout)["error"]
    assert unauthorised["kind"] == "configuration" and "ERP_AI_SERVER_TOKEN" in unauthorised["message"]


def test_emulate_serves_the_ollama_protocol_with_a_counted_fault() -> None:
    port = free_port()
    emulator = subprocess.Popen(
        [*CLI, "emulate", "ollama", "--port", str(port), "--fault", "http_500:1"], stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    chat = {"model": "llama3.1:8b", "stream": False, "messages": [{"role": "user", "content": "Hola"}]}
    try:
        wait_until_up(f"http://127.0.0.1:{port}/api/version", emulator)
        first, second = (httpx.post(f"http://127.0.0.1:{port}/api/chat", json=chat, timeout=10) for _ in "12")
    finally:
        emulator.terminate()
        emulator.wait(timeout=10)

    assert first.status_code == 500 and "error" in first.json()  # the fault, for the first request only
    assert second.status_code == 200 and second.json()["message"]["role"] == "assistant"


@pytest.mark.parametrize(
    ("specs", "message"),
    [
        (["meteor"], "Unknown emulator fault 'meteor'"),
        (["http_500:0"], "COUNT must be a whole number, 1 or more"),
        (["slow", "http_500:1"], "'slow' has no COUNT"),
    ],
)
def test_an_invalid_fault_spec_exits_2_with_one_clear_error(specs: list[str], message: str) -> None:
    result = runner.invoke(app, ["emulate", "ollama", "--port", "1", *(f"--fault={spec}" for spec in specs)])

    assert result.exit_code == 2
    error = " ".join(result.stderr.split())
    assert error.startswith("Error: --fault:") and message in error and "Traceback" not in result.output
    if specs == ["meteor"]:
        assert all(mode in error for mode in FAULT_MODES)


@pytest.mark.parametrize("kind", ["ollama", "gemini"])
def test_bench_runs_through_a_real_provider_client_over_http(
    cli_env: dict[str, str | None], tmp_path: Path, kind: str
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


def test_a_bench_whose_model_answered_no_turn_fails_and_writes_no_readme(
    cli_env: dict[str, str | None], tmp_path: Path
) -> None:
    readme = tmp_path / "README.md"
    readme.write_text("# Proyecto\n", encoding="utf-8")
    unreachable = ["--provider", "ollama", "--base-url", f"http://127.0.0.1:{free_port()}", "--timeout", "2"]
    selection = ["--tag", "articulo-ventas-2025", "--modes", "planner", "--out", str(tmp_path / "run")]
    args = ["bench", *unreachable, *selection, "--readme", str(readme), "--no-progress"]

    result = runner.invoke(app, args, env=cli_env)

    assert result.exit_code == 1, result.output
    said = " ".join(result.output.split())
    assert "No model answered any of the" in said and "Check --base-url" in said
    assert "answered every turn" not in said
    assert readme.read_text(encoding="utf-8") == "# Proyecto\n"  # no figure of a dead run reaches the README


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

    turns.print_turn(turn, show_details=True)

    text = recorder.export_text()
    assert "Total [/] [bold]sin formato[/bold]" in text
    assert "[red]no[/]" in text and "[/] raro" in text


@pytest.mark.parametrize(
    ("command", "says"),
    [
        ([], ["bench", "report", "ask", "chat", "serve", "ops", "emulate", "loadtest", "compare"]),
        ([], ["Exit codes: 0 done", "2 refused before any model call"]),
        (["ask"], ["ERP_AI_SERVER_TOKEN", "should the turn fail after part of it was shown"]),
        (["ask"], ["opened as it is", "--demo", "seeded on first use"]),
        (["serve"], ["pip install 'erp-ai-harness[server]'", "keep-alive", "503"]),
        (["emulate"], ["--fault", *FAULT_MODES]),
        (["bench"], ["--modes", "--provider", "--repeat", "--concurrency", "--latency-profile", "--resume"]),
        (
            ["bench"],
            [
                "--fail-under",
                "--target a=offline",
                "--targets-file",
                "--no-prompt-cache",
                "NAME=provider[:model][@base_url]",
            ],
        ),
    ],
    ids=["commands", "exit-codes", "ask-token", "ask-database", "serve", "emulate", "bench", "bench-matrix"],
)
def test_help_says(command: list[str], says: list[str]) -> None:
    result = runner.invoke(app, [*command, "--help"], env={"COLUMNS": "300", "TERM": "dumb"})

    assert result.exit_code == 0, result.output
    text = " ".join(result.output.split())
    assert [phrase for phrase in says if phrase not in text] == []
