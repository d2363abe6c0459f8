"""`erp-ai reliability`: the matrix's table alone on stdout, unwrapped, with the output cap of every fault;
the per-turn warnings of the faults it provokes stay quiet unless ``--log-level`` asks for them (the matrix
itself is replaced by a stub: tests/benchmarks/test_reliability.py runs the real one)."""

from __future__ import annotations

import logging
from collections.abc import Callable

import pytest
from typer.testing import CliRunner

import benchmarks.reliability as reliability
from benchmarks.cli.app import app
from benchmarks.reliability import MATRIX_MAX_TOKENS, MatrixCell, matrix_limits, readme_block

runner = CliRunner()


def cell(fault: str, mode: str, output_tokens: int = 10) -> MatrixCell:
    return MatrixCell(
        fault=fault,
        mode=mode,  # type: ignore[arg-type]
        path="in-process",
        failure=None,
        recorded=True,
        untouched=False,
        model_calls=2,
        input_tokens=1500,
        output_tokens=output_tokens,
        answer="En 2025 vendimos ₲850.000.000.",
        stored_memories=1,
        stored_chars=40,
        errors=[],
        bench_turns=2,
        bench_passed=2,
        bench_failures={},
    )


CELLS = [cell("runaway", "planner"), cell("runaway", "toolcalling"), cell("repeat_memory", "planner", 5697)]


@pytest.fixture
def stub_matrix(monkeypatch: pytest.MonkeyPatch) -> None:
    """A matrix that logs one per-turn warning per cell, as failing turns do, and returns :data:`CELLS`."""

    def run(*_: object, on_cell: Callable[[MatrixCell], None] | None = None) -> list[MatrixCell]:
        for item in CELLS:
            logging.getLogger("planner_mode").warning("turn conversation_id=matrix failure=provider")
            if on_cell is not None:
                on_cell(item)
        return CELLS

    monkeypatch.setattr(reliability, "run_matrix", run)
    monkeypatch.delenv("ERP_AI_LOG_LEVEL", raising=False)


@pytest.mark.parametrize(
    ("level", "warnings"),
    [([], 0), (["--log-level", "WARNING"], len(CELLS)), (["--log-level", "info"], len(CELLS))],
)
def test_the_per_turn_warnings_stay_quiet_unless_a_log_level_is_given(
    stub_matrix: None, level: list[str], warnings: int
) -> None:
    result = runner.invoke(app, [*level, "reliability"])

    assert result.exit_code == 0, result.output
    assert result.stderr.count("WARNING") == result.stderr.count("WARNING planner_mode: turn") == warnings


def test_the_table_is_never_wrapped_and_no_progress_is_drawn_off_a_terminal(stub_matrix: None) -> None:
    result = runner.invoke(app, ["reliability"], env={"COLUMNS": "80"})

    rows = [line for line in result.stdout.splitlines() if line.startswith("| in-process")]
    assert len(rows) == 2 and all(row.endswith("|") for row in rows), result.stdout
    assert "fault matrix" not in result.output and "━" not in result.output


def test_json_lines_are_the_only_stdout(stub_matrix: None) -> None:
    import json

    result = runner.invoke(app, ["reliability", "--json"])

    assert [json.loads(line)["fault"] for line in result.stdout.splitlines()] == [c.fault for c in CELLS]


def test_the_header_states_the_output_cap_each_fault_ran_with(stub_matrix: None) -> None:
    limits = matrix_limits()

    assert f"output cap {MATRIX_MAX_TOKENS} tokens" in limits and "8,192 for `repeat_memory`" in limits
    assert limits in readme_block(CELLS)
    assert limits in runner.invoke(app, ["reliability"], env={"COLUMNS": "80"}).stdout
