"""What a real OpenAI-compatible server does, measured by the same code the benchmark runs (see conftest)."""

from __future__ import annotations

import time
from typing import Any

import pytest
from langchain_core.language_models import BaseChatModel

from planner_mode.plan import MAX_PLAN_OPERATIONS
from shared.events import AnswerDelta, TurnDone
from shared.llm.usage import UsageTracker
from shared.security import DEMO_CALLER
from shared.turn import TurnResult
from toolcalling_mode import ToolCallingEngine

QUESTION = "¿Cuánto vendimos en 2025?"


async def streamed(engine: Any, conversation: str, question: str) -> TurnResult:
    result = None
    async for event in engine.astream(conversation, question, DEMO_CALLER):
        if isinstance(event, TurnDone):
            result = event.result
    assert result is not None
    return result


@pytest.mark.parametrize("mode", ["planner", "toolcalling"])
async def test_tokens_are_counted_streamed_and_not(live_engines: dict[str, Any], mode: str) -> None:
    engine = live_engines[mode]
    asked = engine.ask(f"live-ask-{mode}", QUESTION, DEMO_CALLER)
    streamed_result = await streamed(engine, f"live-stream-{mode}", QUESTION)

    for result in (asked, streamed_result):
        assert result.model_calls >= 1, result.errors
        assert result.usage_reported, result
        assert result.input_tokens > 0 and result.output_tokens > 0, result


async def test_the_planners_answer_streams_as_call_two_writes_it(live_engines: dict[str, Any]) -> None:
    """langchain-openai builds structured output in three steps; only the model's own chunks stream."""
    deltas: list[str] = []
    result = None
    async for event in live_engines["planner"].astream("live-deltas", QUESTION, DEMO_CALLER):
        if isinstance(event, AnswerDelta):
            deltas.append(event.text)
        elif isinstance(event, TurnDone):
            result = event.result
    assert result is not None and result.failure is None, result
    assert len(deltas) >= 3, deltas


async def test_the_planners_call_two_reads_call_one_from_the_prefix_cache(
    live_engines: dict[str, Any],
) -> None:
    """Call 2 continues call 1's messages: the server serves all of call 1's prompt to call 2 from its
    cache (with two system prompts, call 2 re-read what call 1 had just read)."""
    result = await streamed(live_engines["planner"], "live-prefix", QUESTION)
    assert result.failure is None and [call.role for call in result.calls] == ["plan", "answer"], result
    plan, answer = result.calls
    assert answer.cached_input_tokens >= plan.input_tokens, result.calls


def test_a_repeated_prompt_is_served_from_the_prefix_cache(live_model: BaseChatModel) -> None:
    prompt = "Resume en una frase: " + "el ERP guarda el estado de la conversación. " * 40
    first, second = UsageTracker(), UsageTracker()
    live_model.invoke(prompt, config={"callbacks": [first]})
    live_model.invoke(prompt, config={"callbacks": [second]})

    assert second.input_tokens > 0
    assert second.cached_input_tokens > 0


def test_a_text_tool_call_is_recovered_and_refused_with_recovery_off(
    erp: Any, registry: Any, memory_store: Any, live_model: BaseChatModel
) -> None:
    recovered = ToolCallingEngine(registry, erp, memory_store, live_model).ask(
        "live-r1", QUESTION, DEMO_CALLER
    )
    off = ToolCallingEngine(registry, erp, memory_store, live_model, recover_text_tool_calls=False)
    refused = off.ask("live-r2", QUESTION, DEMO_CALLER)

    # The server parses the model's calls or it does not; either way no text tool call is an answer.
    if recovered.recovered_tool_calls:
        assert recovered.failure is None and recovered.operations, recovered
        assert (refused.failure, refused.plan_valid, refused.operations) == ("model_output", False, []), (
            refused
        )
    else:
        assert recovered.operations, "the model neither called a tool nor wrote a call: nothing to check"
        assert refused.operations


def test_plans_stay_within_the_schema(live_engines: dict[str, Any]) -> None:
    result = live_engines["planner"].ask(
        "live-plan", "¿Cuánto vendimos en 2025 y cuál fue nuestro mejor cliente?", DEMO_CALLER
    )

    assert result.plan_valid, result.errors
    assert result.plan is not None and len(result.plan["operaciones"]) <= MAX_PLAN_OPERATIONS


def test_a_connection_the_server_closed_while_idle_is_retried_not_failed(live_model: BaseChatModel) -> None:
    trackers = []
    for pause in (0.0, 5.5, 0.0, 8.0, 0.0):  # around llama.cpp's keep-alive expiry
        time.sleep(pause)
        tracker = UsageTracker()
        live_model.invoke("Di hola.", config={"callbacks": [tracker]})
        trackers.append(tracker)

    assert all(t.calls == 1 and t.output_tokens > 0 for t in trackers)
    assert all(t.connection_retries <= 1 for t in trackers)
