"""Prompt-cache hits over HTTP: each emulator reports its backing offline model's ``cache_read`` in its
protocol's own field, and the real client turns it back into ``input_token_details["cache_read"]``.

OpenAI-compatible: ``usage.prompt_tokens_details.cached_tokens`` (what llama.cpp's server and OpenAI send);
Gemini: ``usageMetadata.cachedContentTokenCount``; Ollama's API has no such count, so ``ChatOllama`` reports
none.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage

from benchmarks.stand_ins.emulators import create_emulator
from shared.llm.tokens import MESSAGE_OVERHEAD_TOKENS, approx_tokens
from shared.llm.usage import UsageTracker
from tests.benchmarks.stand_ins.emulators.emulator_fakes import client
from tests.benchmarks.stand_ins.offline.offline_prompts import PLAN_PROMPT, PLAN_SYSTEM, merged

FOLLOW_UP: list[BaseMessage] = [SystemMessage(PLAN_SYSTEM), HumanMessage("Nueva pregunta:\n¿Y en 2024?")]
"""Another question after the same system prompt: the system message is the shared prefix."""
SYSTEM_TOKENS = approx_tokens(PLAN_SYSTEM) + MESSAGE_OVERHEAD_TOKENS


@pytest.fixture(params=["openai", "gemini"])
def caching_client(request: pytest.FixtureRequest) -> Iterator[BaseChatModel]:
    """A real client against a fresh emulator (a fresh offline model: its prompt cache empty)."""
    with create_emulator(request.param) as server:
        yield client(server)


def cache_read(message: AIMessage) -> int | None:
    usage = message.usage_metadata
    assert usage is not None
    return usage.get("input_token_details", {}).get("cache_read")


def test_the_second_question_after_the_same_system_prompt_is_reported_cached(
    caching_client: BaseChatModel,
) -> None:
    first = caching_client.invoke(PLAN_PROMPT)
    second = caching_client.invoke(FOLLOW_UP)
    assert cache_read(first) in (0, None)  # Gemini leaves the field out when nothing was cached
    assert cache_read(second) == SYSTEM_TOKENS


def test_a_streamed_reply_reports_the_cached_tokens_once(caching_client: BaseChatModel) -> None:
    caching_client.invoke(PLAN_PROMPT)
    assert cache_read(merged(caching_client.stream(FOLLOW_UP))) == SYSTEM_TOKENS


def test_the_usage_tracker_counts_them_through_the_real_client(caching_client: BaseChatModel) -> None:
    tracker = UsageTracker()
    for messages in (PLAN_PROMPT, FOLLOW_UP):
        caching_client.invoke(messages, config={"callbacks": [tracker]})
    assert tracker.cached_input_tokens == SYSTEM_TOKENS < tracker.input_tokens


def test_ollama_reports_no_cached_tokens() -> None:
    with create_emulator("ollama") as server:
        ollama = client(server)
        ollama.invoke(PLAN_PROMPT)
        second = ollama.invoke(FOLLOW_UP)
    assert cache_read(second) is None
