"""`erp-ai` under bad input and broken machines: one clear line, the right exit code, no hang, no traceback.

Exit codes: 0 answered; 1 the turn failed (model, provider, operation); 2 bad input, configuration or storage,
refused before any model call. ``--debug`` / ``ERP_AI_DEBUG=1`` shows the traceback of unexpected errors.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

import benchmarks.cli as cli
from benchmarks.cli import app
from benchmarks.commands import ops, turns
from benchmarks.stand_ins.emulators import EmulatorFaults, start_emulator

runner = CliRunner()


@pytest.fixture
def cli_env(erp_db_url: str, erp: object, tmp_path: Path) -> dict[str, str]:
    return {"ERP_AI_DB_URL": erp_db_url, "ERP_AI_MEMORY_URL": f"sqlite:///{tmp_path / 'memory.sqlite3'}"}


def one_line_error(output: str) -> str:
    lines = [line for line in output.splitlines() if line.strip()]
    assert "Traceback" not in output
    assert len(lines) <= 2, output  # the error, and at most a wrapped continuation
    return " ".join(lines)


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["ask", "   "], "question is empty"),
        (["ask", "x" * 5000], "limit is 4000"),
        (["ask", "hola", "--conversation", "c" * 65], "64"),
        (["ask", "hola \udcff"], "not valid UTF-8"),
    ],
    ids=["empty-question", "oversized-question", "long-conversation-id", "undecodable-bytes"],
)
def test_bad_input_is_refused_with_one_line_and_exit_2_before_anything_opens(
    args: list[str], says: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    opened: list[str] = []
    monkeypatch.setattr(turns, "_assemble_engine", lambda **_: opened.append("engine"))
    result = runner.invoke(app, args, env={"ERP_AI_DB_URL": f"sqlite:///{tmp_path / 'erp.sqlite3'}"})

    assert result.exit_code == 2
    assert says in one_line_error(result.output)
    assert opened == [] and not (tmp_path / "erp.sqlite3").exists()


def test_an_empty_question_over_the_ai_server_is_refused_before_any_request(cli_env: dict[str, str]) -> None:
    result = runner.invoke(app, ["ask", " ", "--server", "http://127.0.0.1:9"], env=cli_env)

    assert result.exit_code == 2
    assert "question is empty" in one_line_error(result.output)


@pytest.mark.parametrize(
    ("url", "says"),
    [
        ("sqlite:////nonexistent-dir/erp.sqlite3", "nonexistent-dir"),
        ("nosuchdb://x", "nosuchdb"),
    ],
    ids=["missing-directory", "unknown-driver"],
)
def test_a_database_that_cannot_be_opened_is_one_line_and_exit_2(url: str, says: str) -> None:
    result = runner.invoke(app, ["ask", "hola", "--db-url", url])

    assert result.exit_code == 2
    assert says in one_line_error(result.output)


def test_a_corrupt_database_is_one_line_and_exit_2(tmp_path: Path) -> None:
    corrupt = tmp_path / "erp.sqlite3"
    corrupt.write_bytes(b"this is not a database" * 100)
    result = runner.invoke(
        app, ["ops", "call", "ventas_anuales", '{"anio": 2025}', "--db-url", f"sqlite:///{corrupt}"]
    )

    assert result.exit_code == 2
    assert "erp.sqlite3" in one_line_error(result.output)


def test_deeply_nested_operation_parameters_are_refused_not_a_recursion_error(
    cli_env: dict[str, str],
) -> None:
    deep = '{"anio": ' + "[" * 100_000 + "]" * 100_000 + "}"
    result = runner.invoke(app, ["ops", "call", "ventas_anuales", deep], env=cli_env)

    assert result.exit_code == 2
    assert "nests too deeply" in one_line_error(result.output)


def test_a_provider_that_never_answers_ends_the_turn_at_the_timeout(cli_env: dict[str, str]) -> None:
    with start_emulator("ollama", faults=EmulatorFaults(mode="stall")) as base_url:
        result = runner.invoke(
            app,
            ["ask", "¿Cuánto vendimos en 2025?", "--provider", "ollama", "--base-url", base_url, "--json"],
            env={**cli_env, "ERP_AI_TIMEOUT": "0.5"},
        )

    assert result.exit_code == 1
    turn = json.loads(result.stdout)
    assert turn["failure"] == "timeout" and turn["model_calls"] == 1 and not turn["recorded"]


def test_the_output_cap_reaches_the_provider_and_a_runaway_is_cut(cli_env: dict[str, str]) -> None:
    with start_emulator("ollama", faults=EmulatorFaults(mode="runaway")) as base_url:
        result = runner.invoke(
            app,
            ["ask", "¿Cuánto vendimos en 2025?", "--provider", "ollama", "--base-url", base_url, "--json"],
            env={**cli_env, "ERP_AI_MAX_TOKENS": "64"},
        )

    assert result.exit_code == 1
    turn = json.loads(result.stdout)
    assert turn["failure"] == "model_output" and turn["output_tokens"] == 64
    assert "64 tokens" in turn["answer"]


def test_unexpected_errors_are_one_line_unless_debug(
    cli_env: dict[str, str], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def broken(_url: str | None, _demo: bool = False) -> None:
        raise RuntimeError("page 7 is corrupt")

    monkeypatch.setattr(ops, "open_erp", broken)
    for key, value in cli_env.items():
        monkeypatch.setenv(key, value)
    monkeypatch.delenv("ERP_AI_DEBUG", raising=False)

    with pytest.raises(SystemExit) as exited:
        cli.main(["ops", "call", "ventas_anuales", '{"anio": 2025}'])
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert "RuntimeError: page 7 is corrupt" in one_line_error(err) and "--debug" in err

    with pytest.raises(RuntimeError, match="page 7"):
        cli.main(["--debug", "ops", "call", "ventas_anuales", '{"anio": 2025}'])


def test_serve_warns_when_it_binds_beyond_loopback_without_a_token(monkeypatch: pytest.MonkeyPatch) -> None:
    import uvicorn

    monkeypatch.setattr(uvicorn, "run", lambda *args, **kwargs: None)
    monkeypatch.delenv("ERP_AI_SERVER_TOKEN", raising=False)

    exposed = runner.invoke(app, ["serve", "--host", "0.0.0.0"])
    local = runner.invoke(app, ["serve", "--host", "127.0.0.1"])

    assert exposed.exit_code == local.exit_code == 0
    assert "Warning" in exposed.output and "Warning" not in local.output


def test_users_own_their_conversations_and_see_only_their_customers(cli_env: dict[str, str]) -> None:
    question = "¿Cuánto compró Empresa ABC en 2025?"
    ana = runner.invoke(app, ["ask", "--user", "ana", "-c", "conv-ana", question], env=cli_env)
    bruno = runner.invoke(app, ["ask", "--user", "bruno", question], env=cli_env)
    intruder = runner.invoke(app, ["ask", "--user", "bruno", "-c", "conv-ana", "hola"], env=cli_env)
    unknown = runner.invoke(app, ["ask", "--user", "carlos", "hola"], env=cli_env)

    assert ana.exit_code == 0 and "120.000.000" in ana.stdout
    assert bruno.exit_code == 0 and "120.000.000" not in bruno.stdout
    assert "no es uno de sus clientes" in bruno.stdout
    assert intruder.exit_code == 2 and "belongs to another user" in one_line_error(intruder.output)
    assert unknown.exit_code == 2 and "Known users" in one_line_error(unknown.output)
