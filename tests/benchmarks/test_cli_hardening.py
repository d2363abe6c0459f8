"""`erp-ai ask` and `erp-ai chat` against a hostile user: every mistake ends in one line and a documented exit
code before any model call, never a traceback (without ``--debug``), a silently ignored option or a hint that
cannot be copied.

Exit codes (``erp-ai --help``): 0 answered; 1 the turn failed (model, provider, operation); 2 bad input,
usage, configuration or storage. With ``--json`` a refused command prints ``{"error": {"kind", "message"}}``
on stdout, so a script tells a refusal from a turn (a TurnResult) and from a crash (no JSON at all).
"""

from __future__ import annotations

import inspect
import itertools
import json
import logging
import random
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from benchmarks import modes
from benchmarks.cli import PACKAGE_LOGGERS, app, configure_logging
from benchmarks.commands import turns
from benchmarks.commands.ops import ops_app

runner = CliRunner()

QUESTION = "¿Cuánto vendimos en 2025?"


@pytest.fixture
def cli_env(erp_db_url: str, erp: object, tmp_path: Path) -> dict[str, str | None]:
    return {
        "ERP_AI_DB_URL": erp_db_url,
        "ERP_AI_MEMORY_URL": f"sqlite:///{tmp_path / 'memory.sqlite3'}",
        "ERP_AI_SERVER_TOKEN": None,
        "ERP_AI_LOG_LEVEL": None,
    }


@pytest.fixture
def no_engine(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Fail the test if an engine (and so a model) is built; the list stays empty when nothing was."""
    built: list[str] = []

    def refuse(**_: Any) -> None:
        built.append("engine")
        raise AssertionError("an engine was built for a command that must be refused")

    monkeypatch.setattr(turns, "_assemble_engine", refuse)
    return built


@pytest.fixture
def pristine_loggers() -> Iterator[None]:
    loggers = [logging.getLogger(name) for name in PACKAGE_LOGGERS]
    saved = [(logger, logger.level, list(logger.handlers)) for logger in loggers]
    yield
    for logger, level, handlers in saved:
        logger.setLevel(level)
        logger.handlers[:] = handlers


def one_line(output: str) -> str:
    lines = [line for line in output.splitlines() if line.strip()]
    assert "Traceback" not in output
    assert len(lines) == 1, output
    return lines[0]


def json_error(stdout: str) -> dict[str, str]:
    document = json.loads(stdout)
    assert set(document) == {"error"}, document
    error: dict[str, str] = document["error"]
    assert set(error) == {"kind", "message"} and error["message"], error
    return error


# -- tracebacks ----------------------------------------------------------------------------------------------


def corrupt_copy(erp_db_url: str, target: Path) -> Path:
    """A consistent copy of the demo ERP whose data pages 100-249 are overwritten with noise."""
    source = sqlite3.connect(erp_db_url.removeprefix("sqlite:///"))
    copy = sqlite3.connect(target)
    with source, copy:
        source.backup(copy)
    source.close()
    copy.close()
    with target.open("r+b") as file:
        file.seek(4096 * 100)
        file.write(random.Random(0).randbytes(4096 * 150))
    return target


def test_a_corrupt_data_page_logs_one_line_without_the_sql_or_its_traceback(
    cli_env: dict[str, str | None], erp_db_url: str, tmp_path: Path
) -> None:
    corrupt = corrupt_copy(erp_db_url, tmp_path / "mid.sqlite3")
    args = ["ask", "¿Cuál fue el mejor cliente en 2025?", "--db-url", f"sqlite:///{corrupt}"]

    result = runner.invoke(app, args, env=cli_env)

    assert result.exit_code == 1, result.output  # the operation failed; the answer says so
    assert "Traceback" not in result.stderr and "SELECT" not in result.stderr
    [logged] = [line for line in result.stderr.splitlines() if "shared.operations" in line]
    assert "mejor_cliente" in logged and "malformed" in logged and "--debug" in logged


def test_debug_keeps_the_traceback_in_the_log(
    pristine_loggers: None, capsys: pytest.CaptureFixture[str]
) -> None:
    configure_logging("WARNING", debug=True)
    try:
        raise ValueError("page 7")
    except ValueError as exc:
        logging.getLogger("shared.operations").error("Operation failed (ref 1234)", exc_info=exc)

    assert "Traceback" in capsys.readouterr().err


def test_without_debug_a_logged_exception_is_one_line(
    pristine_loggers: None, capsys: pytest.CaptureFixture[str]
) -> None:
    configure_logging("WARNING")
    try:
        raise ValueError("page 7 is corrupt\n[SQL: SELECT secret FROM t]")
    except ValueError as exc:
        logging.getLogger("shared.operations").error("Operation failed (ref 1234)", exc_info=exc)
    logging.getLogger("shared.operations").error("no exception here")

    first, second = capsys.readouterr().err.splitlines()
    assert first.endswith(
        "Operation failed (ref 1234) (ValueError: page 7 is corrupt; --debug shows the traceback)"
    )
    assert second.endswith("no exception here")


# -- the AI server's token -----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def guarded_server() -> Iterator[str]:
    from benchmarks.serving import ServerThread
    from planner_mode import create_app
    from shared.llm.factory import build_chat_model

    with ServerThread(create_app(build_chat_model("offline"), token="s3cret")) as server:
        yield server.url


def test_a_server_that_refuses_the_token_is_exit_2_naming_the_variable(
    cli_env: dict[str, str | None], guarded_server: str
) -> None:
    result = runner.invoke(app, ["ask", QUESTION, "--server", guarded_server], env=cli_env)

    assert result.exit_code == 2, result.output
    errors = [line for line in result.stderr.splitlines() if " planner_mode: turn " not in line]  # the log
    assert "ERP_AI_SERVER_TOKEN" in one_line("\n".join(errors))
    assert result.stdout == ""  # no "try again in a few minutes" apology


def test_a_refused_token_with_json_is_a_configuration_error_object(
    cli_env: dict[str, str | None], guarded_server: str
) -> None:
    wrong = {**cli_env, "ERP_AI_SERVER_TOKEN": "wrong"}
    result = runner.invoke(app, ["ask", QUESTION, "--server", guarded_server, "--json"], env=wrong)

    assert result.exit_code == 2
    error = json_error(result.stdout)
    assert error["kind"] == "configuration" and "ERP_AI_SERVER_TOKEN" in error["message"]


def test_the_right_token_still_answers(cli_env: dict[str, str | None], guarded_server: str) -> None:
    right = {**cli_env, "ERP_AI_SERVER_TOKEN": "s3cret"}
    result = runner.invoke(app, ["ask", QUESTION, "--server", guarded_server, "--json"], env=right)

    assert result.exit_code == 0, result.output
    assert "₲850.000.000" in json.loads(result.stdout)["answer"]


def test_ask_help_names_the_server_token_variable() -> None:
    result = runner.invoke(app, ["ask", "--help"], env={"COLUMNS": "300"})

    assert "ERP_AI_SERVER_TOKEN" in result.output


# -- options of the other mode -------------------------------------------------------------------------------


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


def test_an_option_of_the_other_mode_with_json_is_a_usage_error_object(no_engine: list[str]) -> None:
    result = runner.invoke(app, ["ask", QUESTION, "--structured", "--json"])

    assert result.exit_code == 2
    assert json_error(result.stdout)["kind"] == "usage"


def test_options_of_the_chosen_mode_are_accepted(cli_env: dict[str, str | None]) -> None:
    result = runner.invoke(
        app,
        ["ask", QUESTION, "--mode", "toolcalling", "--context", "full_history", "--structured", "--json"],
        env=cli_env,
    )

    assert result.exit_code == 0, result.output


# -- conversations -------------------------------------------------------------------------------------------


@pytest.mark.parametrize("conversation", ["", "   "], ids=["empty", "blank"])
@pytest.mark.parametrize("command", [["ask", QUESTION], ["chat"]], ids=["ask", "chat"])
def test_an_empty_conversation_id_is_refused(
    command: list[str], conversation: str, no_engine: list[str]
) -> None:
    result = runner.invoke(app, [*command, "-c", conversation], input="hola\n")

    assert result.exit_code == 2, result.output
    assert "--conversation" in one_line(result.stderr)
    assert no_engine == []


@pytest.fixture
def anas_conversation(cli_env: dict[str, str | None]) -> str:
    result = runner.invoke(app, ["ask", "--user", "ana", "-c", "ana-conv", "hola"], env=cli_env)
    assert result.exit_code == 0, result.output
    return "ana-conv"


def test_chat_refuses_another_users_conversation_before_the_banner(
    cli_env: dict[str, str | None], anas_conversation: str
) -> None:
    result = runner.invoke(
        app, ["chat", "-c", anas_conversation, "--user", "bruno"], input="hola\n", env=cli_env
    )

    assert result.exit_code == 2
    assert "belongs to another user" in one_line(result.stderr)
    assert result.stdout == ""  # no banner, no prompt


def test_ask_json_on_another_users_conversation_is_an_access_error_object(
    cli_env: dict[str, str | None], anas_conversation: str
) -> None:
    result = runner.invoke(
        app, ["ask", "--user", "bruno", "-c", anas_conversation, "hola", "--json"], env=cli_env
    )

    assert result.exit_code == 2
    assert json_error(result.stdout)["kind"] == "access"


def test_ask_json_on_an_empty_question_is_an_input_error_object(no_engine: list[str]) -> None:
    result = runner.invoke(app, ["ask", "", "--json"])

    assert result.exit_code == 2
    error = json_error(result.stdout)
    assert error["kind"] == "input" and "empty" in error["message"]


def test_chat_answers_an_unknown_command_without_asking_the_model(
    cli_env: dict[str, str | None], monkeypatch: pytest.MonkeyPatch
) -> None:
    asked: list[str] = []

    async def turn(_engine: Any, _conversation: str, message: str, _caller: Any, **_: Any) -> None:
        asked.append(message)

    monkeypatch.setattr(turns, "_astream_turn", turn)
    result = runner.invoke(app, ["chat"], input="/foo\n/help\n/quit\n", env=cli_env)

    assert result.exit_code == 0, result.output
    assert asked == []
    assert "unknown command /foo, /help lists them" in result.stdout
    for command in ("/details", "/new", "/help", "/quit"):
        assert command in result.stdout.split("/foo")[-1]  # /help listed them


def test_a_failed_first_turn_does_not_offer_a_conversation_to_continue(
    cli_env: dict[str, str | None], monkeypatch: pytest.MonkeyPatch
) -> None:
    from shared.llm.factory import build_chat_model

    monkeypatch.setattr(
        modes, "build_chat_model", lambda *_, **__: build_chat_model("offline", faults="provider_error")
    )
    result = runner.invoke(app, ["ask", QUESTION], env=cli_env)

    assert result.exit_code == 1
    assert "The turn failed (provider)" in result.stderr
    assert "--conversation" not in result.output


# -- terminal output -----------------------------------------------------------------------------------------


def test_the_continue_hint_is_never_wrapped_so_it_can_be_copied(cli_env: dict[str, str | None]) -> None:
    result = runner.invoke(app, ["ask", QUESTION], env={**cli_env, "COLUMNS": "60"})

    assert result.exit_code == 0, result.output
    [hint] = [line for line in result.stderr.splitlines() if "continue with" in line]
    conversation = hint.split("--conversation ")[-1].rstrip(")")
    assert len(conversation) == 32 and hint.startswith(f"conversation: {conversation}")


HELP_COMMANDS = ["ask", "chat", "serve", "bench", "reliability", "ops list"]


def source_help(command: str) -> str:
    """The help text of ``command`` as its source wrote it (``help=`` or the docstring)."""
    *group, name = command.split()
    typers = {(): app, ("ops",): ops_app}
    for info in typers[tuple(group)].registered_commands:
        assert info.callback is not None
        if (info.name or info.callback.__name__.replace("_", "-")) in (name, f"{'-'.join(group)}-{name}"):
            return inspect.cleandoc(info.help or inspect.getdoc(info.callback) or "")
    raise AssertionError(f"no command {command!r}")


@pytest.mark.parametrize("command", HELP_COMMANDS)
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


def test_ask_help_keeps_a_paragraph_on_one_line_when_the_terminal_is_wide() -> None:
    result = runner.invoke(app, ["ask", "--help"], env={"COLUMNS": "300"})

    assert "should the turn fail after part of it was shown" in result.output


def test_root_help_documents_the_exit_codes() -> None:
    result = runner.invoke(app, ["--help"], env={"COLUMNS": "300"})

    assert "Exit codes: 0 done" in result.output and "2 refused before any model call" in result.output
