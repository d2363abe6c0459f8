"""UsageTracker: calls, tokens and model time from LangChain callbacks, for any chat model."""

from __future__ import annotations

import threading
from uuid import uuid4

import pytest
from langchain_core.language_models import GenericFakeChatModel
from langchain_core.messages import AIMessage
from langchain_core.outputs import ChatGeneration, LLMResult
from langchain_core.tools import StructuredTool

from shared.errors import ProviderError
from shared.llm.faults import FaultConfig
from shared.llm.offline import OfflineSalesModel
from shared.llm.usage import UsageTracker


def test_counts_calls_and_sums_tokens_over_calls() -> None:
    tracker = UsageTracker()
    model = OfflineSalesModel()
    replies = [model.invoke(q, config={"callbacks": [tracker]}) for q in ("hola", "gracias")]
    assert tracker.calls == 2
    assert tracker.input_tokens == sum(r.usage_metadata["input_tokens"] for r in replies)  # type: ignore[index]
    assert tracker.output_tokens == sum(r.usage_metadata["output_tokens"] for r in replies)  # type: ignore[index]
    assert tracker.total_tokens == tracker.input_tokens + tracker.output_tokens
    assert tracker.model_ms > 0
    assert tracker.simulated_model_ms is None


def test_sums_simulated_latency_when_reported() -> None:
    tracker = UsageTracker()
    model = OfflineSalesModel(latency_profile="gpu-8b")
    replies = [model.invoke("hola", config={"callbacks": [tracker]}) for _ in range(3)]
    assert tracker.simulated_model_ms == sum(r.response_metadata["simulated_latency_ms"] for r in replies)


def test_streaming_and_tool_calls_are_counted_once(tools: list[StructuredTool]) -> None:
    tracker = UsageTracker()
    model = OfflineSalesModel().bind_tools(tools)
    chunks = list(model.stream("¿Cuánto vendimos en 2025?", config={"callbacks": [tracker]}))
    assert tracker.calls == 1
    assert tracker.output_tokens > 0
    assert chunks


def test_failed_calls_count_and_stop_the_clock() -> None:
    tracker = UsageTracker()
    model = OfflineSalesModel(faults=FaultConfig(mode="provider_error"))
    with pytest.raises(ProviderError):
        model.invoke("hola", config={"callbacks": [tracker]})
    assert tracker.calls == 1
    assert tracker.input_tokens == 0
    assert tracker._started == {}


def test_works_for_models_without_usage_metadata() -> None:
    tracker = UsageTracker()
    GenericFakeChatModel(messages=iter(["hi"])).invoke("x", config={"callbacks": [tracker]})
    assert (tracker.calls, tracker.input_tokens, tracker.output_tokens) == (1, 0, 0)


def test_every_generation_is_counted() -> None:
    tracker = UsageTracker()
    run_id = uuid4()
    tracker.on_chat_model_start({}, [[]], run_id=run_id)
    usage = {"input_tokens": 3, "output_tokens": 2, "total_tokens": 5}
    generations = [[ChatGeneration(message=AIMessage("a", usage_metadata=usage))] * 2]
    tracker.on_llm_end(LLMResult(generations=generations), run_id=run_id)  # type: ignore[arg-type]
    assert (tracker.input_tokens, tracker.output_tokens) == (6, 4)


def test_reset_and_snapshot() -> None:
    tracker = UsageTracker()
    OfflineSalesModel().invoke("hola", config={"callbacks": [tracker]})
    assert tracker.snapshot().calls == 1
    tracker.reset()
    assert tracker.snapshot().model_dump() == {
        "calls": 0, "input_tokens": 0, "output_tokens": 0, "model_ms": 0.0, "simulated_model_ms": None
    }  # fmt: skip


def test_thread_safe_under_concurrent_calls() -> None:
    tracker = UsageTracker()
    model = OfflineSalesModel()

    def work() -> None:
        for _ in range(10):
            model.invoke("hola", config={"callbacks": [tracker]})

    threads = [threading.Thread(target=work) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert tracker.calls == 40
    assert tracker.input_tokens == 40 * model.invoke("hola").usage_metadata["input_tokens"]  # type: ignore[index]
