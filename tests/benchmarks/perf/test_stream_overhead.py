"""``benchmarks/perf/stream_overhead.py``: streaming a benchmark turn changes no figure but its timings."""

from __future__ import annotations

from pathlib import Path

from benchmarks.perf.stream_overhead import measure, run_once, same_records
from benchmarks.scenario import load_scenarios


def test_streamed_and_ask_driven_runs_record_the_same_turns(tmp_path: Path, erp_db_url: str) -> None:
    scenarios = load_scenarios(tags=["articulo"])

    streamed = run_once(scenarios, "astream", tmp_path / "astream", erp_db_url)
    asked = run_once(scenarios, "ask", tmp_path / "ask", erp_db_url)

    assert same_records(streamed, asked) and len(streamed) == len(asked) > 0
    assert all(row.first_answer_ms is not None for row in streamed if not row.failed)
    assert all(row.first_answer_ms is None for row in asked)  # ask has no first token to time
    assert not same_records(streamed, asked[1:])


def test_the_table_has_both_drivings_for_every_mode() -> None:
    table, matched = measure(load_scenarios(tags=["articulo-memoria-conversacional"]), rounds=1)

    assert matched
    assert [column.header for column in table.columns][1:5] == [
        "total ask",
        "total astream",
        "harness ask",
        "harness astream",
    ]
    assert table.row_count == 3
