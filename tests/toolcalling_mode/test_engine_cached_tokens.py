"""Tool calling reports the prompt-cache hits of its model calls: the system prompt is the same every turn
(and day), so what a prefix cache keeps from one turn serves the next.

Driven by the offline model, whose ``cache_read`` models a prefix cache by whole blocks (tools, system
prompt, messages): see ``benchmarks.stand_ins.offline._cache``.
"""

from __future__ import annotations

from typing import Any

import pytest

from benchmarks.stand_ins.offline import OfflineSalesModel
from shared.security import DEMO_CALLER
from tests.fakes import RunRecorder
from toolcalling_mode import ToolCallingEngine

FIRST = "¿Cuánto vendimos en 2025 y cuál fue nuestro mejor cliente?"
SECOND = "¿Y cuánto compró?"
THIRD = "¿Y en 2024?"


def two_turns(engine: ToolCallingEngine) -> tuple[Any, Any, RunRecorder, int]:
    """Both turns, the usage of every call, and how many calls the first turn made."""
    recorder = RunRecorder()
    first = engine.ask("c", FIRST, DEMO_CALLER, config={"callbacks": [recorder]})
    calls_in_first = len(recorder.usages)
    second = engine.ask("c", SECOND, DEMO_CALLER, config={"callbacks": [recorder]})
    return first, second, recorder, calls_in_first


@pytest.mark.parametrize("policy", ["windowed", "full_history"])
def test_the_turn_reports_the_cached_tokens_of_its_calls(demo_engine: Any, policy: str) -> None:
    engine = demo_engine(OfflineSalesModel(), policy=policy)
    first, second, recorder, split = two_turns(engine)
    assert first.cached_input_tokens == sum(cached for _, cached in recorder.usages[:split])
    assert second.cached_input_tokens == sum(cached for _, cached in recorder.usages[split:])
    assert 0 < second.cached_input_tokens < second.input_tokens


def test_a_windowed_turn_reuses_the_previous_turns_tools_and_system_prompt(demo_engine: Any) -> None:
    engine = demo_engine(OfflineSalesModel())
    _first, _second, recorder, split = two_turns(engine)
    (step_1_input, step_1_cached), (_, step_2_cached) = recorder.usages[:2]
    assert step_1_cached == 0  # nothing seen yet
    assert step_2_cached == step_1_input  # the step before is the prefix of this one
    opening_input, opening_cached = recorder.usages[split]
    assert 0 < opening_cached < opening_input  # tools and instructions, not the new context and question
    assert opening_cached < step_1_input  # (the context changed, so the first turn's message is not reused)


def test_full_history_reuses_the_replay_up_to_the_previous_turn(demo_engine: Any) -> None:
    engine = demo_engine(OfflineSalesModel(), policy="full_history")
    recorder = RunRecorder()
    openings: list[tuple[int, int]] = []  # (input, cached) of each turn's first call
    for question in (FIRST, SECOND, THIRD):
        calls_before = len(recorder.usages)
        engine.ask("c", question, DEMO_CALLER, config={"callbacks": [recorder]})
        openings.append(recorder.usages[calls_before])
    (second_input, second_cached), (third_input, third_cached) = openings[1:]
    # The second turn reuses the tools and the instructions: the first question was sent after today's date
    # and the state, and is replayed as the user wrote it. The third turn reuses the first turn whole, as
    # replayed in the second, but not the second's message as sent (it held that turn's context).
    assert 0 < second_cached < third_cached < second_input < third_input


def test_no_cache_no_cached_tokens(demo_engine: Any) -> None:
    engine = demo_engine(OfflineSalesModel(prompt_cache_size=0))
    first, second, _recorder, _split = two_turns(engine)
    assert first.cached_input_tokens == second.cached_input_tokens == 0
