"""The fault matrix (benchmarks/reliability.py): every fault × mode × path ends as the contract says.

One run of the whole matrix (in process, through the AI server, through the real ChatOllama client against
the Ollama emulator) is shared by every test here. Each expectation below is the failure kind a fault must
end in; a new fault mode without an expectation fails ``test_every_fault_mode_has_an_expectation``.
"""

from __future__ import annotations

from typing import get_args

import pytest

from benchmarks.reliability import (
    MatrixCell,
    emulator_faults,
    matrix_markdown,
    offline_faults,
    request_timeout,
    run_matrix,
)
from benchmarks.stand_ins.faults import FaultMode
from shared.failures import is_recorded, user_message

# fault -> (planner, toolcalling); None means the turn is answered normally.
OFFLINE_EXPECTED: dict[str, tuple[str | None, str | None]] = {
    "malformed_json": ("model_output", "model_output"),
    "truncated_json": ("model_output", "model_output"),
    "unknown_function": ("invalid_plan", "invalid_plan"),
    "wrong_types": ("invalid_plan", "invalid_plan"),
    "empty": ("model_output", "model_output"),
    "provider_error": ("provider", "provider"),
    "timeout": ("timeout", "timeout"),
    "runaway": ("model_output", "model_output"),
    "repeat_memory": (None, None),  # a complete answer: memory and state are bounded, not refused
    "placeholder_plan": ("invalid_plan", None),  # plans only
    "schema_ignored": ("model_output", None),  # plans and structured answers only
    "no_tool_calls": (None, "ungrounded"),  # the prose answer's figure is nowhere in the ERP
    "text_tool_calls": (None, None),  # recovered into real tool calls, then answered
    "think_wrap": (None, None),  # the reasoning is dropped, the JSON / answer is used
    "stream_break": ("provider", "provider"),  # the reply breaks off midway: nothing recorded
}
EMULATOR_EXPECTED: dict[str, tuple[str | None, str | None]] = {
    "http_500": ("provider", "provider"),
    "stream_error": ("provider", "provider"),
    "stream_break": ("provider", "provider"),
    "malformed_tool_call": ("model_output", "model_output"),
    "schema_invalid": ("model_output", None),
    "slow": ("timeout", "timeout"),
    "stall": ("timeout", "timeout"),
    "runaway": ("model_output", "model_output"),
    "repeat_memory": (None, None),
    "placeholder_plan": ("invalid_plan", None),
    "schema_ignored": ("model_output", None),
    "no_tool_calls": (None, "ungrounded"),
    "text_tool_calls": (None, None),
    "think_wrap": (None, None),
}


@pytest.fixture(scope="module")
def cells() -> list[MatrixCell]:
    return run_matrix()


def expected(cell: MatrixCell) -> str | None:
    table = EMULATOR_EXPECTED if cell.path == "ollama-http" else OFFLINE_EXPECTED
    planner, toolcalling = table[cell.fault]
    return planner if cell.mode == "planner" else toolcalling


def test_every_fault_mode_has_an_expectation() -> None:
    assert set(offline_faults()) == set(OFFLINE_EXPECTED) == set(get_args(FaultMode))
    assert set(emulator_faults()) == set(EMULATOR_EXPECTED)


def test_only_the_faults_a_timeout_ends_run_with_a_short_timeout() -> None:
    """Every other cell waits far longer than any reply takes, so a slow machine never decides a cell."""
    short = {fault for fault in emulator_faults() if request_timeout(fault) < 10}
    assert short == {fault for fault, kinds in EMULATOR_EXPECTED.items() if "timeout" in kinds}
    assert all(request_timeout(fault) >= 10 for fault in offline_faults())


def test_the_matrix_covers_every_fault_mode_and_path(cells: list[MatrixCell]) -> None:
    seen = {(c.path, c.fault, c.mode) for c in cells}
    for fault in OFFLINE_EXPECTED:
        assert {("in-process", fault, "planner"), ("in-process", fault, "toolcalling")} <= seen
        assert ("ai-server", fault, "planner") in seen
    for fault in EMULATOR_EXPECTED:
        assert {("ollama-http", fault, "planner"), ("ollama-http", fault, "toolcalling")} <= seen


def test_every_fault_ends_in_its_typed_failure_kind(cells: list[MatrixCell]) -> None:
    wrong = [
        f"{c.path}/{c.mode}/{c.fault}: {c.failure} (expected {expected(c)}; {c.errors})"
        for c in cells
        if c.failure != expected(c)
    ]
    assert not wrong, "\n".join(wrong)


def test_a_turn_whose_model_failed_leaves_the_conversation_untouched(cells: list[MatrixCell]) -> None:
    for cell in cells:
        assert cell.recorded == is_recorded(cell.failure), cell
        if not cell.recorded:
            assert cell.untouched, cell


def test_the_user_reads_one_clear_sentence_never_internals(cells: list[MatrixCell]) -> None:
    for cell in cells:
        assert cell.answer.strip(), cell
        for leak in ("Traceback", "<think>", "Error:", "ResponseError", "SELECT "):
            assert leak not in cell.answer, (leak, cell)
        if not cell.recorded:
            assert cell.failure is not None
            assert cell.answer.startswith("Lo siento"), cell
        if cell.failure in ("provider", "timeout"):
            assert cell.answer == user_message(cell.failure)


def test_a_reply_cut_at_the_cap_says_so(cells: list[MatrixCell]) -> None:
    runaways = [c for c in cells if c.fault == "runaway"]
    assert runaways
    for cell in runaways:
        assert "400 tokens" in cell.answer and cell.output_tokens >= 400, cell


SERVER_ERRORS_WITHOUT_USAGE = {"malformed_tool_call"}
"""Faults where the provider answers with an error body that reports no token usage at all."""


def test_every_call_that_reached_a_model_counts_its_tokens(cells: list[MatrixCell]) -> None:
    for cell in cells:
        assert 1 <= cell.model_calls <= (2 if cell.mode == "planner" else 6), cell
        answered = cell.failure in ("model_output", "invalid_plan", None)
        if answered and cell.fault not in SERVER_ERRORS_WITHOUT_USAGE:  # the model's reply came back
            assert cell.input_tokens > 0, cell


def test_a_benchmark_run_goes_on_through_every_fault(cells: list[MatrixCell]) -> None:
    for cell in cells:
        assert cell.bench_turns == 2, cell
        if expected(cell) not in ("provider", "timeout"):  # the cell's client still works for its run
            assert "provider" not in cell.bench_failures, cell


def test_an_answer_without_the_erps_data_never_scores_as_a_pass(cells: list[MatrixCell]) -> None:
    for cell in cells:
        if cell.mode == "toolcalling" and cell.fault == "no_tool_calls":
            # The invented figure is named, never shown as the ERP's truth, and the turn is not stored...
            assert cell.answer.startswith("Lo siento, no puedo confirmar") and "987.654.321" in cell.answer
            assert cell.bench_passed < cell.bench_turns  # ...and the benchmark scored it as a failure
        if expected(cell) is not None:
            assert cell.bench_passed < cell.bench_turns, cell


def test_a_model_that_repeats_itself_cannot_store_a_wall_of_text(cells: list[MatrixCell]) -> None:
    for cell in cells:
        assert cell.stored_memories <= 1 + 5, cell  # the prior exchange's item + at most 5 per turn
        assert cell.stored_chars < 5_000, cell


def test_the_matrix_renders_one_row_per_path_and_fault(cells: list[MatrixCell]) -> None:
    table = matrix_markdown(cells)
    rows = [line for line in table.splitlines()[2:] if line.startswith("|")]
    assert len(rows) == len(OFFLINE_EXPECTED) * 2 + len(EMULATOR_EXPECTED)
    assert "RUN STOPPED" not in table and "CHANGED" not in table
