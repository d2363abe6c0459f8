"""UsageTracker: calls, tokens and model time from LangChain callbacks, for any chat model."""

from __future__ import annotations

import threading
from typing import Any
from uuid import uuid4

import pytest
from langchain_core.language_models import BaseChatModel, GenericFakeChatModel
from langchain_core.messages import AIMessage, UsageMetadata
from langchain_core.outputs import ChatGeneration, LLMResult
from langchain_core.tools import StructuredTool
from openai import APIConnectionError, LengthFinishReasonError

from benchmarks.stand_ins.emulators import create_emulator
from benchmarks.stand_ins.faults import FaultConfig
from benchmarks.stand_ins.offline import OfflineSalesModel
from shared.errors import ProviderError
from shared.llm.factory import build_chat_model
from shared.llm.provider_errors import usage_from_error
from shared.llm.usage import CallUsage, UsageTracker
from tests.shared.llm.provider_fakes import ReplyServer, json_reply, length_error, openai_completion


def _usage(input_tokens: int, output_tokens: int, cache_read: int | None = None) -> UsageMetadata:
    usage = UsageMetadata(
        input_tokens=input_tokens, output_tokens=output_tokens, total_tokens=input_tokens + output_tokens
    )
    if cache_read is not None:
        usage["input_token_details"] = {"cache_read": cache_read}
    return usage


def _ended(tracker: UsageTracker, *usages: UsageMetadata) -> None:
    """One finished run whose generations report ``usages``."""
    run_id = uuid4()
    tracker.on_chat_model_start({}, [[]], run_id=run_id)
    generations = [[ChatGeneration(message=AIMessage("a", usage_metadata=usage))] for usage in usages]
    tracker.on_llm_end(LLMResult(generations=generations), run_id=run_id)  # type: ignore[arg-type]


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


def test_every_generation_is_counted_and_cache_reads_are_a_part_of_the_input() -> None:
    # cached_input_tokens: usage_metadata["input_token_details"]["cache_read"], a part of input_tokens.
    tracker = UsageTracker()
    _ended(tracker, _usage(1000, 20, cache_read=800), _usage(1200, 30, cache_read=1024))
    _ended(tracker, _usage(900, 10, cache_read=0), _usage(500, 5))
    run_id = uuid4()
    tracker.on_chat_model_start({}, [[]], run_id=run_id)
    odd = AIMessage("a", usage_metadata=_usage(10, 1))
    odd.usage_metadata["input_token_details"] = {"cache_read": None}  # type: ignore[index,typeddict-item]
    tracker.on_llm_end(LLMResult(generations=[[ChatGeneration(message=odd)]]), run_id=run_id)
    assert (tracker.input_tokens, tracker.output_tokens, tracker.cached_input_tokens) == (3610, 66, 1824)


def test_reset_and_snapshot() -> None:
    tracker = UsageTracker()
    OfflineSalesModel(latency_profile="gpu-8b").invoke("hola", config={"callbacks": [tracker]})
    _ended(tracker, _usage(100, 5, cache_read=64))
    snapshot = tracker.snapshot()
    assert snapshot.model_calls == 2 and snapshot.cached_input_tokens == 64
    tracker.reset()
    assert tracker.snapshot().model_dump() == {
        "model_calls": 0, "input_tokens": 0, "output_tokens": 0, "model_ms": 0.0, "cached_input_tokens": 0,
        "unreported_calls": 0, "connection_retries": 0, "calls": [],
    }  # fmt: skip
    assert snapshot.model_calls == 2  # a snapshot is a copy: reset does not empty it


def test_each_call_is_kept_with_its_role_time_first_token_and_tokens() -> None:
    tracker = UsageTracker(role="plan")
    streamed = list(OfflineSalesModel().stream("¿Cuánto vendimos en 2025?", config={"callbacks": [tracker]}))
    _ended(tracker, _usage(100, 5, cache_read=64))  # a call that streamed nothing
    first, second = tracker.snapshot().calls
    assert streamed and first.role == second.role == "plan"
    assert first.first_token_ms is not None and 0 <= first.first_token_ms <= first.ms
    assert first.output_tokens == tracker.output_tokens - 5 and first.input_tokens > 0
    assert (second.first_token_ms, second.input_tokens, second.cached_input_tokens, second.output_tokens) == (
        None,
        100,
        64,
        5,
    )
    assert sum(call.ms for call in (first, second)) == pytest.approx(tracker.model_ms)


def test_usages_add_up_their_calls_in_order_each_marked_with_its_trackers_role() -> None:
    plan, answer = UsageTracker(role="plan"), UsageTracker(role="answer")
    _ended(plan, _usage(100, 5))
    _ended(answer, _usage(300, 20))
    total = CallUsage.total([plan.snapshot(), answer.snapshot()])
    assert (total.model_calls, total.input_tokens, total.output_tokens) == (2, 400, 25)
    assert [(call.role, call.input_tokens) for call in total.calls] == [("plan", 100), ("answer", 300)]


def test_a_broken_stream_counts_the_tokens_it_used_before_the_break() -> None:
    tracker = UsageTracker()
    model = OfflineSalesModel(faults=FaultConfig(mode="stream_break"))
    full = OfflineSalesModel().invoke("hola, ¿qué puedes hacer?")
    with pytest.raises(ProviderError):
        list(model.stream("hola, ¿qué puedes hacer?", config={"callbacks": [tracker]}))
    assert full.usage_metadata is not None
    assert tracker.input_tokens == full.usage_metadata["input_tokens"]
    assert 0 < tracker.output_tokens < full.usage_metadata["output_tokens"]


def test_calls_and_tokens_add_up_over_concurrent_calls() -> None:
    tracker = UsageTracker()
    model = OfflineSalesModel(latency_profile="gpu-8b")

    def work() -> None:
        for _ in range(10):
            model.invoke("hola", config={"callbacks": [tracker]})

    threads = [threading.Thread(target=work) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    usage = model.invoke("hola").usage_metadata
    assert usage is not None
    assert tracker.calls == 40
    assert (tracker.input_tokens, tracker.output_tokens) == (
        40 * usage["input_tokens"],
        40 * usage["output_tokens"],
    )
    assert tracker.total_tokens == tracker.input_tokens + tracker.output_tokens
    assert tracker.model_ms > 0


def test_a_length_stop_through_a_real_chat_openai_counts_prompt_and_completion_tokens() -> None:
    def cut(path: str, body: dict[str, Any]) -> tuple[int, str, bytes]:
        return json_reply(
            openai_completion(
                '{"respuesta": "Vend', finish_reason="length", prompt_tokens=1314, completion_tokens=768
            )
        )

    schema = {"type": "object", "properties": {"respuesta": {"type": "string"}}, "required": ["respuesta"]}
    tracker = UsageTracker()
    with ReplyServer(cut) as server:
        model = build_chat_model("openai", api_key="k", base_url=f"{server.url}/v1", max_tokens=768)
        bound = model.bind(
            response_format={"type": "json_schema", "json_schema": {"name": "a", "schema": schema}}
        )
        # With a response_format bound, ChatOpenAI calls the SDK's parse(), which raises on a length stop.
        with pytest.raises(LengthFinishReasonError) as raised:
            bound.invoke("¿Cuánto vendimos?", config={"callbacks": [tracker]})
    assert (tracker.calls, tracker.input_tokens, tracker.output_tokens) == (1, 1314, 768)
    assert usage_from_error(raised.value) == (1314, 768)


def test_a_failed_call_without_usage_in_the_error_counts_its_partial_generations_once() -> None:
    chunk = ChatGeneration(message=AIMessage("Vendi", usage_metadata=_usage(40, 9, cache_read=32)))
    partial = LLMResult(generations=[[chunk], []])  # what LangChain passes when a stream breaks
    tracker = UsageTracker()
    run_id = uuid4()
    tracker.on_chat_model_start({}, [[]], run_id=run_id)
    tracker.on_llm_error(ConnectionError("stream broke"), run_id=run_id, response=partial)
    assert (tracker.input_tokens, tracker.output_tokens, tracker.cached_input_tokens) == (40, 9, 32)
    run_id = uuid4()  # the error's own usage wins: the partial generations are not added on top
    tracker.on_chat_model_start({}, [[]], run_id=run_id)
    tracker.on_llm_error(
        length_error("x", prompt_tokens=5, completion_tokens=3), run_id=run_id, response=partial
    )
    assert (tracker.calls, tracker.input_tokens, tracker.output_tokens) == (2, 45, 12)


def test_a_request_that_never_reached_a_model_is_no_model_call() -> None:
    tracker = UsageTracker()
    for error in (
        ConnectionRefusedError(111, "Connection refused"),
        ConnectionError("Failed to connect to Ollama."),
    ):
        run_id = uuid4()
        tracker.on_chat_model_start({}, [[]], run_id=run_id)
        tracker.on_llm_error(error, run_id=run_id)
    assert tracker.snapshot() == CallUsage()  # no call, no time, no tokens
    run_id = uuid4()  # a model that was reached and then failed still counts
    tracker.on_chat_model_start({}, [[]], run_id=run_id)
    tracker.on_llm_error(TimeoutError("read timed out"), run_id=run_id)
    assert tracker.calls == 1 and len(tracker.ended) == 1


def test_a_refused_connection_through_a_real_client_is_no_model_call() -> None:
    from benchmarks.loadtest_fleet import free_port

    tracker = UsageTracker()
    model = build_chat_model("openai", api_key="k", base_url=f"http://127.0.0.1:{free_port()}/v1", timeout=5)
    with pytest.raises(APIConnectionError):
        model.invoke("¿Cuánto vendimos?", config={"callbacks": [tracker]})
    assert tracker.calls == 0 and tracker.connection_retries == 1


QUESTION = "¿Cuánto vendimos en 2025?"


def test_a_streamed_call_counts_input_and_output_tokens(provider_model: BaseChatModel) -> None:
    tracker = UsageTracker()
    text = "".join(
        str(chunk.content) for chunk in provider_model.stream(QUESTION, config={"callbacks": [tracker]})
    )

    assert text
    assert tracker.calls == 1
    assert tracker.input_tokens > 0 and tracker.output_tokens > 0
    assert tracker.unreported_calls == 0


def test_the_openai_provider_asks_a_compatible_server_for_usage_in_streams() -> None:
    with create_emulator("openai") as server:
        list(build_chat_model("openai", api_key="k", base_url=f"{server.base_url}/v1").stream(QUESTION))
    body = [r.body for r in server.requests if r.path.endswith("/chat/completions")][-1]
    assert body["stream_options"] == {"include_usage": True}


def test_a_stream_without_usage_is_counted_as_unreported_not_as_zero_tokens() -> None:
    from langchain_openai import ChatOpenAI

    with create_emulator("openai") as server:
        model = ChatOpenAI(model="m", api_key="k", base_url=f"{server.base_url}/v1", max_retries=0)  # type: ignore[arg-type]
        tracker = UsageTracker()
        list(model.stream(QUESTION, config={"callbacks": [tracker]}))

    body = [r.body for r in server.requests if r.path.endswith("/chat/completions")][-1]
    assert "stream_options" not in body  # ChatOpenAI's default with a base_url: the server sends no usage
    assert (tracker.calls, tracker.input_tokens, tracker.unreported_calls) == (1, 0, 1)
