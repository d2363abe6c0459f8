"""``benchmarks/perf/harness_breakdown.py`` runs the real planner and times every stage it claims to."""

from __future__ import annotations

from benchmarks.perf.harness_breakdown import STAGES, render, run
from benchmarks.scenario import load_scenarios


def test_every_stage_is_timed_on_the_article_dialogue() -> None:
    scenarios = load_scenarios(tags=["articulo-memoria-conversacional"])  # three turns, all with operations

    recorder = run(scenarios, warmup=0)

    assert len(recorder.harness_ms) == 3
    assert {name for name, values in recorder.ms.items() if len(values) == 3} == set(STAGES)
    # Context: state, memories, last messages; a turn: at least the lock, the messages and the memories.
    # Counted statements show that the timers wrap the real calls.
    assert recorder.statements["build_context"] == [3, 3, 3]
    assert all(count >= 3 for count in recorder.statements["record_turn"])
    assert all(count >= 1 for count in recorder.statements["execution"])
    for index, harness_ms in enumerate(recorder.harness_ms):
        stages = sum(recorder.ms[name][index] for name in STAGES)
        assert abs(stages - harness_ms) < 1e-6  # "other" is the remainder, so the stages add up exactly
    assert render(recorder).row_count == len(STAGES) + 1
