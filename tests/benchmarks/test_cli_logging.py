"""``erp-ai --log-level``: the project's loggers to stderr at the level asked (WARNING by default), and
undone when the command ends."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from benchmarks.cli import PACKAGE_LOGGERS, app, configure_logging

runner = CliRunner()

QUESTION = ["ask", "¿Cuánto vendimos en 2025?", "--json"]


@pytest.fixture
def cli_env(erp_db_url: str, erp: object, tmp_path: Path) -> dict[str, str | None]:
    return {
        "ERP_AI_DB_URL": erp_db_url,
        "ERP_AI_MEMORY_URL": f"sqlite:///{tmp_path / 'memory.sqlite3'}",
        "ERP_AI_LOG_LEVEL": None,
    }


@pytest.fixture
def pristine_loggers() -> Iterator[None]:
    """The package loggers as a test found them, restored afterwards whatever the test did."""
    loggers = [logging.getLogger(name) for name in PACKAGE_LOGGERS]
    saved = [(logger, logger.level, list(logger.handlers)) for logger in loggers]
    yield
    for logger, level, handlers in saved:
        logger.setLevel(level)
        logger.handlers[:] = handlers


def logger_states() -> list[tuple[int, int]]:
    """(level, number of handlers) of each package logger."""
    loggers = [logging.getLogger(name) for name in PACKAGE_LOGGERS]
    return [(logger.level, len(logger.handlers)) for logger in loggers]


def cli_handlers() -> list[logging.Handler]:
    loggers = [logging.getLogger(name) for name in PACKAGE_LOGGERS]
    return [h for logger in loggers for h in logger.handlers if type(h).__name__ == "_CliLogHandler"]


def turn_lines(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if " planner_mode: turn conversation_id=" in line]


def test_log_level_info_writes_one_turn_record_to_stderr_and_keeps_stdout_clean(
    cli_env: dict[str, str | None],
) -> None:
    result = runner.invoke(app, ["--log-level", "INFO", *QUESTION], env=cli_env)

    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["model_calls"] == 2  # stdout is still exactly the JSON
    [line] = turn_lines(result.stderr)
    assert " INFO planner_mode: " in line and "mode=planner" in line and "failure=None" in line
    assert "₲" not in line and "vendimos" not in line  # question and answer texts are never logged


def test_the_default_level_is_warning_so_a_successful_turn_logs_nothing(
    cli_env: dict[str, str | None],
) -> None:
    result = runner.invoke(app, QUESTION, env=cli_env)

    assert result.exit_code == 0, result.output
    assert turn_lines(result.stderr) == []


def test_the_level_comes_from_the_environment_in_any_case(cli_env: dict[str, str | None]) -> None:
    result = runner.invoke(app, QUESTION, env={**cli_env, "ERP_AI_LOG_LEVEL": "info"})

    assert result.exit_code == 0, result.output
    assert len(turn_lines(result.stderr)) == 1


def test_an_unknown_level_is_refused_with_the_valid_ones() -> None:
    result = runner.invoke(app, ["--log-level", "LOUD", "ops", "list"])

    assert result.exit_code == 2
    assert "'debug'" in result.output.lower() and "'warning'" in result.output.lower()


def test_the_configuration_is_undone_when_the_command_ends(cli_env: dict[str, str | None]) -> None:
    before = logger_states()
    result = runner.invoke(app, ["--log-level", "DEBUG", *QUESTION], env=cli_env)

    assert result.exit_code == 0, result.output
    assert logger_states() == before
    assert cli_handlers() == []


def test_configure_logging_sets_only_the_project_loggers_and_never_stacks_handlers(
    pristine_loggers: None,
) -> None:
    third_party = logging.getLogger("httpx").level
    configure_logging("info")
    restore = configure_logging("ERROR")

    assert [logging.getLogger(name).level for name in PACKAGE_LOGGERS] == [logging.ERROR] * 4
    assert len(cli_handlers()) == 4 and len(set(cli_handlers())) == 1  # one handler, on each logger once
    assert logging.getLogger("httpx").level == third_party
    restore()
    assert cli_handlers() == []
