"""Simulated model time is computed by the benchmark from the model calls it records, not by the engines."""

from __future__ import annotations

from typing import Any
from uuid import uuid4

import pytest
from langchain_core.messages import AIMessage
from langchain_core.outputs import ChatGeneration, LLMResult

from benchmarks.modes import build_engine
from benchmarks.run_turns import stream_turn
from benchmarks.simulated_timing import SimulatedCall, SimulatedCalls, simulated_times
from benchmarks.stand_ins.faults import FaultConfig
from benchmarks.stand_ins.offline import OfflineSalesModel
from shared.errors import ProviderError
from shared.security import DEMO_CALLER
from shared.turn import FirstAnswerCall, TurnResult


def timing(total: float, first: float, per_token: float) -> SimulatedCall:
    return SimulatedCall(total_ms=total, first_token_ms=first, ms_per_output_token=per_token)


def turn(model_calls: int, first: FirstAnswerCall | None) -> TurnResult:
    return TurnResult(
        mode="m",
        conversation_id="c",
        question="q",
        answer="a",
        model_calls=model_calls,
        first_answer_call=first,
    )


def test_each_model_call_is_recorded_in_the_order_it_ended() -> None:
    recorder = SimulatedCalls()
    model = OfflineSalesModel(latency_profile="cpu-8b")
    replies = [
        model.invoke(question, config={"callbacks": [recorder]})
        for question in ("hola", "¿Qué puedes hacer por mí con las ventas de este año?")
    ]

    assert recorder.calls == [
        timing(
            r.response_metadata["simulated_latency_ms"],
            r.response_metadata["simulated_first_token_ms"],
            100.0,  # cpu-8b decodes 10 tokens per second
        )
        for r in replies
    ]
    assert (
        replies[0].response_metadata["simulated_latency_ms"]
        != replies[1].response_metadata["simulated_latency_ms"]
    )


def test_a_streamed_call_is_recorded_once() -> None:
    recorder = SimulatedCalls()
    chunks = list(
        OfflineSalesModel(latency_profile="gpu-8b").stream("hola", config={"callbacks": [recorder]})
    )
    assert len(chunks) > 2
    [call] = recorder.calls
    assert call is not None and call.total_ms == chunks[-1].response_metadata["simulated_latency_ms"]


def test_a_call_without_a_whole_timing_and_a_failed_call_are_recorded_without_one() -> None:
    recorder = SimulatedCalls()
    OfflineSalesModel().invoke("hola", config={"callbacks": [recorder]})  # no profile
    partial = AIMessage("a", response_metadata={"simulated_latency_ms": 10.0, "simulated_ms_per_token": True})
    recorder.on_llm_end(LLMResult(generations=[[ChatGeneration(message=partial)]]), run_id=uuid4())
    broken = OfflineSalesModel(latency_profile="gpu-8b", faults=FaultConfig(mode="stream_break"))
    with pytest.raises(ProviderError):
        list(broken.stream("hola, ¿qué puedes hacer?", config={"callbacks": [recorder]}))

    assert recorder.calls == [None, None, None]


def test_the_first_answer_is_every_earlier_call_then_the_answering_calls_first_token_and_prefix() -> None:
    calls = [timing(500.0, 300.0, 10.0), timing(900.0, 200.0, 20.0)]
    first = FirstAnswerCall(call=1, prefix='{"respuesta": "')  # 15 characters: 4 tokens

    model_ms, first_answer_ms = simulated_times(turn(2, first), calls)

    assert model_ms == 1400.0
    assert first_answer_ms == pytest.approx(500.0 + 200.0 + 4 * 20.0)


@pytest.mark.parametrize(
    ("calls", "model_calls", "first", "expected"),
    [
        ([None, None], 2, FirstAnswerCall(call=1), (None, None)),  # the model reports no simulated time
        ([timing(1, 1, 1)], 2, FirstAnswerCall(call=1), (1.0, None)),  # a call the benchmark did not see
        ([None, timing(1, 1, 1)], 2, FirstAnswerCall(call=1), (1.0, None)),  # an earlier call without one
        ([timing(1, 1, 1)], 1, None, (1.0, None)),  # no answer text was written
    ],
    ids=["no-profile", "unseen-call", "earlier-call-untimed", "no-answer"],
)
def test_the_first_answer_is_unknown_without_a_timing_for_every_call_up_to_the_answer(
    calls: list[SimulatedCall | None],
    model_calls: int,
    first: FirstAnswerCall | None,
    expected: tuple[float | None, float | None],
) -> None:
    assert simulated_times(turn(model_calls, first), calls) == expected


@pytest.mark.parametrize("mode", ["planner", "toolcalling"])
async def test_under_a_latency_profile_a_turns_first_answer_comes_before_its_model_time_ends(
    mode: str, registry: Any, erp: Any, memory_store: Any
) -> None:
    model = OfflineSalesModel(latency_profile="gpu-8b")
    engine = build_engine(mode, registry=registry, erp=erp, store=memory_store, model=model)
    recorder = SimulatedCalls()

    result = await stream_turn(
        engine, "c1", "¿Cuánto vendimos en 2025?", DEMO_CALLER, config={"callbacks": [recorder]}
    )
    model_ms, first_answer_ms = simulated_times(result, recorder.calls)

    assert len(recorder.calls) == result.model_calls == 2
    assert model_ms is not None and first_answer_ms is not None
    assert 0 < first_answer_ms < model_ms
