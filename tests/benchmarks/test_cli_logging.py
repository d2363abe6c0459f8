"""``erp-ai --log-level``: the project's loggers to stderr at the level asked (WARNING by default), one line
a record unless ``--debug``, and undone when the command ends."""

from __future__ import annotations

import json
import logging
import random
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from benchmarks.cli.app import PACKAGE_LOGGERS, app, configure_logging
from tests.benchmarks.bench_fakes import copy_database

runner = CliRunner()

QUESTION = ["ask", "¿Cuánto vendimos en 2025?", "--json"]


@pytest.fixture
def pristine_loggers() -> Iterator[None]:
    """The package loggers as a test found them, restored afterwards whatever the test did."""
    loggers = [logging.getLogger(name) for name in PACKAGE_LOGGERS]
    saved = [(logger, logger.level, list(logger.handlers)) for logger in loggers]
    yield
    for logger, level, handlers in saved:
        logger.setLevel(level)
        logger.handlers[:] = handlers


def cli_handlers() -> list[logging.Handler]:
    loggers = [logging.getLogger(name) for name in PACKAGE_LOGGERS]
    return [h for logger in loggers for h in logger.handlers if type(h).__name__ == "_CliLogHandler"]


@pytest.mark.parametrize(
    ("option", "env", "records"),
    [(["--log-level", "INFO"], {}, 1), ([], {}, 0), ([], {"ERP_AI_LOG_LEVEL": "info"}, 1)],
    ids=["option", "default-warning", "environment-any-case"],
)
def test_the_level_asked_logs_one_record_per_turn_to_stderr_and_keeps_stdout_clean(
    option: list[str], env: dict[str, str], records: int, cli_env: dict[str, str | None]
) -> None:
    result = runner.invoke(app, [*option, *QUESTION], env={**cli_env, **env})

    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["model_calls"] == 2  # stdout is still exactly the JSON
    lines = [line for line in result.stderr.splitlines() if " planner_mode: turn conversation_id=" in line]
    assert len(lines) == records
    for line in lines:
        assert " INFO planner_mode: " in line and "mode=planner" in line and "failure=None" in line
        assert "₲" not in line and "vendimos" not in line  # question and answer texts are never logged


def test_an_unknown_level_is_refused_with_the_valid_ones() -> None:
    result = runner.invoke(app, ["--log-level", "LOUD", "ops", "list"])

    assert result.exit_code == 2
    assert "'debug'" in result.output.lower() and "'warning'" in result.output.lower()


def test_the_configuration_is_undone_when_the_command_ends(cli_env: dict[str, str | None]) -> None:
    loggers = [logging.getLogger(name) for name in PACKAGE_LOGGERS]
    before = [(logger.level, len(logger.handlers)) for logger in loggers]
    result = runner.invoke(app, ["--log-level", "DEBUG", *QUESTION], env=cli_env)

    assert result.exit_code == 0, result.output
    assert [(logger.level, len(logger.handlers)) for logger in loggers] == before
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


@pytest.mark.parametrize("debug", [False, True])
def test_a_logged_exception_is_one_line_unless_debug_keeps_its_traceback(
    debug: bool, pristine_loggers: None, capsys: pytest.CaptureFixture[str]
) -> None:
    configure_logging("WARNING", debug=debug)
    try:
        raise ValueError("page 7 is corrupt\n[SQL: SELECT secret FROM t]")
    except ValueError as exc:
        logging.getLogger("shared.operations").error("Operation failed (ref 1234)", exc_info=exc)
    logging.getLogger("shared.operations").error("no exception here")

    err = capsys.readouterr().err
    if debug:
        assert "Traceback" in err and "SELECT secret" in err
        return
    first, second = err.splitlines()
    assert first.endswith(
        "Operation failed (ref 1234) (ValueError: page 7 is corrupt; --debug shows the traceback)"
    )
    assert second.endswith("no exception here")


def test_a_corrupt_data_page_logs_one_line_without_the_sql_or_its_traceback(
    cli_env: dict[str, str | None], erp_db_url: str, tmp_path: Path
) -> None:
    corrupt = copy_database(erp_db_url, tmp_path / "mid.sqlite3")
    with corrupt.open("r+b") as file:  # data pages 100-249 overwritten with noise
        file.seek(4096 * 100)
        file.write(random.Random(0).randbytes(4096 * 150))
    args = ["ask", "¿Cuál fue el mejor cliente en 2025?", "--db-url", f"sqlite:///{corrupt}"]

    result = runner.invoke(app, args, env=cli_env)

    assert result.exit_code == 1, result.output  # the operation failed; the answer says so
    assert "Traceback" not in result.stderr and "SELECT" not in result.stderr
    [logged] = [line for line in result.stderr.splitlines() if "shared.operations" in line]
    assert "mejor_cliente" in logged and "malformed" in logged and "--debug" in logged
