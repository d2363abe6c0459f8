"""`erp-ai ask` and `erp-ai chat` against a hostile user and broken machines: every mistake ends in one line
and a documented exit code before any model call, never a traceback (without ``--debug``), a hang, a silently
ignored option or a hint that cannot be copied.

Exit codes (``erp-ai --help``): 0 answered; 1 the turn failed (model, provider, operation); 2 bad input,
usage, configuration or storage. With ``--json`` a refused command prints ``{"error": {"kind", "message"}}``
on stdout, so a script tells a refusal from a turn (a TurnResult) and from a crash (no JSON at all).
"""

from __future__ import annotations

import inspect
import itertools
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

import benchmarks.cli.app as cli
from benchmarks import modes
from benchmarks.cli import ops, turns
from benchmarks.cli.app import app
from benchmarks.cli.ops import ops_app
from benchmarks.stand_ins.emulators import EmulatorFaults, start_emulator
from tests.benchmarks.bench_fakes import json_error, one_line

runner = CliRunner()

QUESTION = "¿Cuánto vendimos en 2025?"


@pytest.fixture
def no_engine(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Fail the test if an engine (and so a model) is built or a server started; the list stays empty when
    nothing was."""
    import uvicorn

    built: list[str] = []

    def refuse(*_: Any, **__: Any) -> None:
        built.append("engine or server")
        raise AssertionError("an engine or a server was started for a command that must be refused")

    monkeypatch.setattr(turns, "_assemble_engine", refuse)
    monkeypatch.setattr(uvicorn, "run", refuse)
    return built


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["ask", "   "], "question is empty"),
        (["ask", "x" * 5000], "limit is 4000"),
        (["ask", "hola", "--conversation", "c" * 65], "64"),
        (["ask", "hola \udcff"], "not valid UTF-8"),
        (["ask", " ", "--server", "http://127.0.0.1:9"], "question is empty"),
        (["ask", QUESTION, "-c", ""], "--conversation"),
        (["ask", QUESTION, "-c", "   "], "--conversation"),
        (["chat", "-c", ""], "--conversation"),
    ],
    ids=[
        "empty",
        "oversized",
        "long-conversation-id",
        "undecodable",
        "server",
        "empty-id",
        "blank-id",
        "chat",
    ],
)
def test_bad_input_is_refused_with_one_line_and_exit_2_before_anything_opens(
    args: list[str], says: str, tmp_path: Path, no_engine: list[str]
) -> None:
    result = runner.invoke(
        app, args, input="hola\n", env={"ERP_AI_DB_URL": f"sqlite:///{tmp_path / 'erp.db'}"}
    )

    assert result.exit_code == 2
    assert says in one_line(result.stderr)
    assert no_engine == [] and not (tmp_path / "erp.db").exists()


@pytest.mark.parametrize(
    ("args", "option", "applies"),
    [
        (["--structured"], "--structured", "toolcalling"),
        (["--context", "full_history"], "--context", "toolcalling"),
        (["--context", "windowed"], "--context", "toolcalling"),  # even the default value, when given
        (["--mode", "toolcalling", "--plan-model", "x"], "--plan-model", "planner"),
        (["--mode", "toolcalling", "--answer-model", "x"], "--answer-model", "planner"),
        (["--mode", "toolcalling", "--server", "http://127.0.0.1:9"], "--server", "planner"),
        (["--server", "http://127.0.0.1:9", "--provider", "offline"], "--provider", "--server"),
        (["--server", "http://127.0.0.1:9", "--model", "x"], "--model", "--server"),
        (["--server", "http://127.0.0.1:9", "--latency-profile", "gpu-8b"], "--latency-profile", "--server"),
    ],
    ids=lambda value: value if isinstance(value, str) else " ".join(value),
)
@pytest.mark.parametrize("command", [["ask", QUESTION], ["chat"]], ids=["ask", "chat"])
def test_an_option_the_mode_ignores_is_refused_with_exit_2(
    command: list[str], args: list[str], option: str, applies: str, no_engine: list[str]
) -> None:
    result = runner.invoke(app, [*command, *args], input="hola\n")

    assert result.exit_code == 2, result.output
    line = one_line(result.stderr)
    assert option in line and applies in line
    assert "erp-ai chat" not in result.stdout and no_engine == []


def test_options_of_the_chosen_mode_are_accepted(cli_env: dict[str, str | None]) -> None:
    result = runner.invoke(
        app,
        ["ask", QUESTION, "--mode", "toolcalling", "--context", "full_history", "--structured", "--json"],
        env=cli_env,
    )

    assert result.exit_code == 0, result.output


@pytest.fixture
def anas_conversation(cli_env: dict[str, str | None]) -> str:
    result = runner.invoke(app, ["ask", "--user", "ana", "-c", "ana-conv", "hola"], env=cli_env)
    assert result.exit_code == 0, result.output
    return "ana-conv"


@pytest.mark.parametrize(
    ("args", "kind", "says"),
    [
        (["ask", QUESTION, "--structured"], "usage", "--structured"),
        (["ask", ""], "input", "empty"),
        (["ask", "--user", "bruno", "-c", "ana-conv", "hola"], "access", "belongs to another user"),
        (["ask", "--user", "carlos", "hola"], "input", "Known users"),
    ],
)
def test_a_refusal_with_json_is_an_error_object_of_its_kind(
    args: list[str], kind: str, says: str, cli_env: dict[str, str | None], anas_conversation: str
) -> None:
    result = runner.invoke(app, [*args, "--json"], env=cli_env)

    assert result.exit_code == 2
    error = json_error(result.stdout)
    assert error["kind"] == kind and says in error["message"]
    assert says in one_line(result.stderr)


def test_chat_refuses_another_users_conversation_before_the_banner(
    cli_env: dict[str, str | None], anas_conversation: str
) -> None:
    result = runner.invoke(
        app, ["chat", "-c", anas_conversation, "--user", "bruno"], input="hola\n", env=cli_env
    )

    assert result.exit_code == 2
    assert "belongs to another user" in one_line(result.stderr)
    assert result.stdout == ""  # no banner, no prompt


def test_users_own_their_conversations_and_see_only_their_customers(cli_env: dict[str, str | None]) -> None:
    question = "¿Cuánto compró Empresa ABC en 2025?"
    ana = runner.invoke(app, ["ask", "--user", "ana", "-c", "conv-ana", question], env=cli_env)
    bruno = runner.invoke(app, ["ask", "--user", "bruno", question], env=cli_env)

    assert ana.exit_code == 0 and "120.000.000" in ana.stdout
    assert bruno.exit_code == 0 and "120.000.000" not in bruno.stdout
    assert "no es uno de sus clientes" in bruno.stdout


@pytest.mark.parametrize("mode", ["planner", "toolcalling"])
def test_a_salespersons_total_says_it_is_their_customers_only(
    cli_env: dict[str, str | None], mode: str
) -> None:
    ana = runner.invoke(
        app, ["ask", "--user", "ana", "--mode", mode, "¿Cuánto vendimos en 2025?"], env=cli_env
    )
    manager = runner.invoke(app, ["ask", "--mode", mode, "¿Cuánto vendimos en 2025?"], env=cli_env)

    assert ana.exit_code == manager.exit_code == 0
    assert "solo sus clientes asignados" in ana.stdout
    assert "solo sus clientes" not in manager.stdout


@pytest.fixture(scope="module")
def guarded_server() -> Iterator[str]:
    from benchmarks.serving import ServerThread
    from benchmarks.stand_ins import build_model
    from planner_mode import create_app

    with ServerThread(create_app(build_model("offline"), token="s3cret")) as server:
        yield server.url


@pytest.mark.parametrize(
    "args",
    [["ask", QUESTION], ["ask", QUESTION, "--no-stream"], ["ask", QUESTION, "--json"], ["chat"]],
    ids=["ask", "no-stream", "json", "chat"],
)
def test_a_server_that_refuses_the_token_is_one_line_and_exit_2_naming_the_variable(
    args: list[str], cli_env: dict[str, str | None], guarded_server: str
) -> None:
    env = {**cli_env, "ERP_AI_SERVER_TOKEN": None}
    result = runner.invoke(app, [*args, "--server", guarded_server], input=f"{QUESTION}\n", env=env)

    assert result.exit_code == 2, result.output
    line = one_line(result.stderr)  # no turn WARNING logged on top: no turn failed, none was answered
    assert "set ERP_AI_SERVER_TOKEN" in line and guarded_server in line
    if "--json" in args:
        assert json_error(result.stdout)["kind"] == "configuration"
    else:  # no "try again in a few minutes" apology (chat: its banner and prompt only)
        assert "Lo siento" not in result.stdout and (args[0] == "chat" or result.stdout == "")


@pytest.mark.parametrize(
    ("command", "url", "says"),
    [
        (["ask", "hola"], "sqlite:////nonexistent-dir/erp.sqlite3", "nonexistent-dir"),
        (["ask", "hola"], "nosuchdb://x", "nosuchdb"),
        (["ops", "call", "ventas_anuales", '{"anio": 2025}'], "corrupt", "erp.sqlite3"),
    ],
    ids=["missing-directory", "unknown-driver", "corrupt"],
)
def test_a_database_that_cannot_be_opened_is_one_line_and_exit_2(
    command: list[str], url: str, says: str, tmp_path: Path
) -> None:
    if url == "corrupt":
        corrupt = tmp_path / "erp.sqlite3"
        corrupt.write_bytes(b"this is not a database" * 100)
        url = f"sqlite:///{corrupt}"
    result = runner.invoke(app, [*command, "--db-url", url])

    assert result.exit_code == 2
    assert says in one_line(result.stderr)


@pytest.mark.parametrize(
    ("fault", "setting", "failure", "tokens"),
    [
        ("stall", {"ERP_AI_TIMEOUT": "0.5"}, "timeout", None),
        ("runaway", {"ERP_AI_MAX_TOKENS": "64"}, "model_output", 64),
    ],
)
def test_a_provider_that_stalls_or_runs_away_ends_the_turn_at_its_bound(
    fault: str, setting: dict[str, str], failure: str, tokens: int | None, cli_env: dict[str, str | None]
) -> None:
    with start_emulator("ollama", faults=EmulatorFaults(mode=fault)) as base_url:  # type: ignore[arg-type]
        result = runner.invoke(
            app,
            ["ask", QUESTION, "--provider", "ollama", "--base-url", base_url, "--json"],
            env={**cli_env, **setting},
        )

    assert result.exit_code == 1
    turn = json.loads(result.stdout)
    assert turn["failure"] == failure
    if tokens is None:
        assert turn["model_calls"] == 1 and not turn["recorded"]
    else:
        assert turn["output_tokens"] == tokens and f"{tokens} tokens" in turn["answer"]


@pytest.mark.parametrize(
    ("args", "says", "command"),
    [
        (["serve", "--port", "99999"], "'--port'", "erp-ai serve"),
        (["serve", "--port", "0"], "'--port'", "erp-ai serve"),
        (["serve", "--port", "ochenta"], "'--port'", "erp-ai serve"),
        (["serve", "--workers", "0"], "'--workers'", "erp-ai serve"),
        (["serve", "--read-timeout", "0"], "'--read-timeout'", "erp-ai serve"),
        (["bench", "--repeat", "0"], "'--repeat'", "erp-ai bench"),
        (["ask", QUESTION, "--mode", "both"], "'--mode'", "erp-ai ask"),
        (["ask", "--nope", QUESTION], "--nope", "erp-ai ask"),
        (["ask"], "'message'", "erp-ai ask"),
        (["nosuch"], "'nosuch'", "erp-ai"),
        (["ops", "nosuch"], "'nosuch'", "erp-ai ops"),
    ],
    ids=lambda value: value if isinstance(value, str) else " ".join(value),
)
def test_a_command_line_the_parser_refuses_is_one_line_naming_the_help_and_exit_2(
    args: list[str], says: str, command: str, no_engine: list[str]
) -> None:
    result = runner.invoke(app, args)

    assert result.exit_code == 2
    line = one_line(result.stderr)
    assert line.startswith("Error: ") and says in line and f"See '{command} --help'." in line
    assert result.stdout == "" and no_engine == []


def test_a_parser_error_under_json_is_a_usage_error_object(no_engine: list[str]) -> None:
    result = runner.invoke(app, ["ask", "--json", "--nope", QUESTION])

    assert result.exit_code == 2
    assert json_error(result.stdout)["kind"] == "usage"
    assert "--nope" in one_line(result.stderr)


def test_a_group_without_a_command_still_shows_its_help() -> None:
    result = runner.invoke(app, ["ops"])

    assert "Usage: erp-ai ops" in result.output and "Error" not in result.output


def test_unexpected_errors_are_one_line_unless_debug(
    cli_env: dict[str, str | None], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def broken(_url: str | None, _demo: bool = False) -> None:
        raise RuntimeError("page 7 is corrupt")

    monkeypatch.setattr(ops, "open_erp", broken)
    monkeypatch.delenv("ERP_AI_DEBUG", raising=False)
    call = ["ops", "call", "ventas_anuales", '{"anio": 2025}']

    with pytest.raises(SystemExit) as exited:
        cli.main(call)
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert "RuntimeError: page 7 is corrupt" in one_line(err) and "--debug" in err

    with pytest.raises(RuntimeError, match="page 7"):
        cli.main(["--debug", *call])


def test_chat_answers_an_unknown_command_without_asking_the_model(
    cli_env: dict[str, str | None], monkeypatch: pytest.MonkeyPatch
) -> None:
    asked: list[str] = []

    async def turn(_engine: Any, _conversation: str, message: str, _caller: Any, **_: Any) -> None:
        asked.append(message)

    monkeypatch.setattr(turns, "astream_turn", turn)
    result = runner.invoke(app, ["chat"], input="/foo\n/help\n/quit\n", env=cli_env)

    assert result.exit_code == 0, result.output
    assert asked == []
    assert "unknown command /foo, /help lists them" in result.stdout
    for command in ("/details", "/new", "/help", "/quit"):
        assert command in result.stdout.split("/foo")[-1]  # /help listed them


def test_a_failed_first_turn_does_not_offer_a_conversation_to_continue(
    cli_env: dict[str, str | None], monkeypatch: pytest.MonkeyPatch
) -> None:
    from benchmarks.stand_ins import build_model

    monkeypatch.setattr(
        modes, "build_model", lambda *_, **__: build_model("offline", faults="provider_error")
    )
    result = runner.invoke(app, ["ask", QUESTION], env=cli_env)

    assert result.exit_code == 1
    assert "The turn failed (provider)" in result.stderr
    assert "--conversation" not in result.output


def test_the_continue_hint_is_never_wrapped_so_it_can_be_copied(cli_env: dict[str, str | None]) -> None:
    result = runner.invoke(app, ["ask", QUESTION], env={**cli_env, "COLUMNS": "60"})

    assert result.exit_code == 0, result.output
    [hint] = [line for line in result.stderr.splitlines() if "continue with" in line]
    conversation = hint.split("--conversation ")[-1].rstrip(")")
    assert len(conversation) == 32 and hint.startswith(f"conversation: {conversation}")


def source_help(command: str) -> str:
    """The help text of ``command`` as its source wrote it (``help=`` or the docstring)."""
    *group, name = command.split()
    typers = {(): app, ("ops",): ops_app}
    for info in typers[tuple(group)].registered_commands:
        assert info.callback is not None
        if (info.name or info.callback.__name__.replace("_", "-")) in (name, f"{'-'.join(group)}-{name}"):
            return inspect.cleandoc(info.help or inspect.getdoc(info.callback) or "")
    raise AssertionError(f"no command {command!r}")


@pytest.mark.parametrize("command", ["ask", "chat", "serve", "bench", "reliability", "ops list"])
def test_help_shows_no_type_on_flags(command: str) -> None:
    result = runner.invoke(app, [*command.split(), "--help"], env={"COLUMNS": "80"})

    assert result.exit_code == 0, result.output
    assert "<bool>" not in result.output
    assert "--help " in result.output


@pytest.mark.parametrize("command", ["ask", "chat", "serve", "bench", "reliability", "compare"])
def test_help_rewraps_paragraphs_instead_of_keeping_the_sources_line_breaks(command: str) -> None:
    result = runner.invoke(app, [*command.split(), "--help"], env={"COLUMNS": "1000"})
    joins = []  # the words on both sides of every line break inside a paragraph of the source
    for paragraph in source_help(command).split("\n\n"):
        lines = paragraph.splitlines()
        joins += [f"{a.split()[-1]} {b.split()[0]}" for a, b in itertools.pairwise(lines)]

    assert result.exit_code == 0, result.output
    assert joins  # every one of these commands has a paragraph wrapped in the source
    assert [join for join in joins if join not in result.output] == []
