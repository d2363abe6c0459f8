"""UsageTracker.cached_input_tokens: the prompt tokens a provider served from its prompt (prefix) cache.

Read from LangChain's standard ``usage_metadata["input_token_details"]["cache_read"]``; a part of
``input_tokens``, never added to it.
"""

from __future__ import annotations

from typing import Any
from uuid import uuid4

from langchain_core.messages import AIMessage, UsageMetadata
from langchain_core.outputs import ChatGeneration, LLMResult

from shared.llm.factory import build_chat_model
from shared.llm.usage import UsageTracker
from tests.shared.llm.provider_fakes import ReplyServer, json_reply, openai_completion


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


def test_sums_cache_read_over_generations_and_runs() -> None:
    tracker = UsageTracker()
    _ended(tracker, _usage(1000, 20, cache_read=800), _usage(1200, 30, cache_read=1024))
    _ended(tracker, _usage(900, 10, cache_read=0))
    assert (tracker.input_tokens, tracker.cached_input_tokens) == (3100, 1824)


def test_generations_without_cache_details_count_no_cached_tokens() -> None:
    tracker = UsageTracker()
    _ended(tracker, _usage(500, 5), _usage(500, 5, cache_read=None))
    run_id = uuid4()
    tracker.on_chat_model_start({}, [[]], run_id=run_id)
    odd = AIMessage("a", usage_metadata=_usage(10, 1))
    odd.usage_metadata["input_token_details"] = {"cache_read": None}  # type: ignore[index,typeddict-item]
    tracker.on_llm_end(LLMResult(generations=[[ChatGeneration(message=odd)]]), run_id=run_id)
    assert (tracker.input_tokens, tracker.cached_input_tokens) == (1010, 0)


def test_snapshot_and_reset_include_cached_tokens() -> None:
    tracker = UsageTracker()
    _ended(tracker, _usage(100, 5, cache_read=64))
    assert tracker.snapshot().cached_input_tokens == 64
    tracker.reset()
    assert tracker.cached_input_tokens == 0 and tracker.snapshot().cached_input_tokens == 0


def test_a_broken_stream_counts_the_cached_tokens_of_its_partial_generations() -> None:
    tracker = UsageTracker()
    run_id = uuid4()
    tracker.on_chat_model_start({}, [[]], run_id=run_id)
    partial = LLMResult(
        generations=[[ChatGeneration(message=AIMessage("Ven", usage_metadata=_usage(40, 2, 32)))]]
    )
    tracker.on_llm_error(ConnectionError("stream broke"), run_id=run_id, response=partial)
    assert (tracker.input_tokens, tracker.cached_input_tokens) == (40, 32)


def test_reads_cached_tokens_an_openai_compatible_server_reports() -> None:
    """llama.cpp's server and OpenAI send ``usage.prompt_tokens_details.cached_tokens``; ``ChatOpenAI`` maps
    it to ``cache_read``."""

    def reply(path: str, body: dict[str, Any]) -> tuple[int, str, bytes]:
        completion = openai_completion("Hola.", prompt_tokens=1314, completion_tokens=7)
        completion["usage"]["prompt_tokens_details"] = {"cached_tokens": 1280}
        return json_reply(completion)

    tracker = UsageTracker()
    with ReplyServer(reply) as server:
        model = build_chat_model("openai", api_key="k", base_url=f"{server.url}/v1")
        model.invoke("Hola", config={"callbacks": [tracker]})
    assert (tracker.input_tokens, tracker.cached_input_tokens) == (1314, 1280)
