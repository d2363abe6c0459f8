"""Where the time goes: each mode's turn split into first tokens, writing, operations and the rest of the
harness, and each kind of model call measured on its own (benchmarks/report/time_breakdown.py)."""

from __future__ import annotations

from typing import Any

from benchmarks.report.time_breakdown import breakdown_table, calls_table
from benchmarks.results import TurnRow
from shared.llm.usage import ModelCall
from tests.benchmarks.report.sample_results import turn_row


def _planner(turn: int, **values: Any) -> TurnRow:
    """Call 1: 1,000 ms, 800 of them before its first token; call 2: 2,000 ms, 500 before; operations 30 ms
    of a 100 ms harness."""
    calls = [
        ModelCall(role="plan", ms=1000, first_token_ms=800, input_tokens=1000, cached_input_tokens=900),
        ModelCall(role="answer", ms=2000, first_token_ms=500, input_tokens=500, output_tokens=60),
    ]
    fields: dict[str, Any] = {"calls": calls, "model_calls": 2, "operations_ms": 30.0, "harness_ms": 100.0}
    return turn_row("planner", turn=turn, total_ms=3100.0, **(fields | values))


def _agent(turn: int) -> TurnRow:
    calls = [ModelCall(role="agent", ms=1500, first_token_ms=None, input_tokens=2000, output_tokens=20)] * 3
    return turn_row(
        "toolcalling",
        turn=turn,
        calls=calls,
        model_calls=3,
        operations_ms=10.0,
        harness_ms=50.0,
        total_ms=4550.0,
    )


def test_a_turn_splits_into_first_tokens_writing_operations_and_the_rest() -> None:
    table = breakdown_table([_planner(1), _planner(2), _agent(1)])
    assert table is not None
    header, rows = table
    assert header == ["mode", "turns", "calls/turn", "first tokens", "writing", "operations", "rest", "turn"]
    assert rows == [
        ["planner", "2", "2.00", "1,300", "1,700", "30", "70", "3,100"],
        ["toolcalling", "1", "3.00", "0", "4,500", "10", "40", "4,550"],  # not streamed: no first token known
    ]


def test_each_kind_of_call_is_measured_on_its_own() -> None:
    table = calls_table([_planner(1), _agent(1)])
    assert table is not None
    _, rows = table
    assert rows == [
        ["planner", "plan", "1", "1,000", "800", "1,000", "90%", "0"],
        ["planner", "answer", "1", "2,000", "500", "500", "0%", "60"],
        ["toolcalling", "agent", "3", "1,500", "–", "2,000", "0%", "20"],
    ]


def test_rows_without_their_calls_and_warm_up_turns_are_left_out() -> None:
    old = turn_row("planner", turn=1, model_calls=2, total_ms=3000.0)  # recorded before calls were kept
    assert breakdown_table([old]) is None and calls_table([old]) is None
    _, rows = breakdown_table([old, _planner(2), _planner(3, warmup=True)]) or ([], [])
    assert [row[:2] for row in rows] == [["planner", "1"]]
