"""The planner reports the prompt-cache hits of its two calls: each call's system message (instructions and,
for call 1, the catalog) is the same every turn, so the next turn's calls reuse it.

Driven by the offline model, whose ``cache_read`` models a prefix cache by whole blocks (response format,
system prompt, messages): see ``benchmarks.stand_ins.offline._cache``. Also: ``CallUsage`` carries the
count, and
older bodies without it still load.
"""

from __future__ import annotations

from typing import Any
from uuid import UUID

from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.outputs import ChatGeneration, LLMResult

from benchmarks.stand_ins.offline import OfflineSalesModel
from planner_mode import PlannerAI, PlannerEngine
from planner_mode.wire import CallUsage
from shared.llm.usage import UsageTracker
from shared.security import DEMO_CALLER

FIRST = "¿Cuánto vendimos en 2025?"
SECOND = "¿Y en 2024?"


class CallUsages(BaseCallbackHandler):
    """``(input_tokens, cache_read)`` of every model call, in order."""

    def __init__(self) -> None:
        self.calls: list[tuple[int, int]] = []

    def on_llm_end(self, response: LLMResult, *, run_id: UUID, **kwargs: Any) -> None:
        for generations in response.generations:
            for generation in generations:
                usage = generation.message.usage_metadata if isinstance(generation, ChatGeneration) else None
                if usage:
                    self.calls.append((usage["input_tokens"], usage["input_token_details"]["cache_read"]))


def test_the_second_turn_reuses_both_calls_system_messages(
    registry: Any, erp: Any, memory_store: Any
) -> None:
    engine = PlannerEngine(registry, erp, memory_store, PlannerAI(OfflineSalesModel()))
    usages = CallUsages()
    first = engine.ask("c", FIRST, DEMO_CALLER, config={"callbacks": [usages]})
    second = engine.ask("c", SECOND, DEMO_CALLER, config={"callbacks": [usages]})

    assert [cached for _, cached in usages.calls[:2]] == [0, 0]  # call 1 and call 2 share no prefix
    assert first.cached_input_tokens == 0
    assert all(0 < cached < input_tokens for input_tokens, cached in usages.calls[2:])
    assert second.cached_input_tokens == sum(cached for _, cached in usages.calls[2:])
    assert second.model_calls == 2 and second.cached_input_tokens < second.input_tokens


def test_no_cache_no_cached_tokens(registry: Any, erp: Any, memory_store: Any) -> None:
    engine = PlannerEngine(registry, erp, memory_store, PlannerAI(OfflineSalesModel(prompt_cache_size=0)))
    assert [engine.ask("c", q, DEMO_CALLER).cached_input_tokens for q in (FIRST, SECOND)] == [0, 0]


def test_call_usage_carries_the_trackers_cached_tokens_and_adds_them_up() -> None:
    tracker = UsageTracker()
    model = OfflineSalesModel()
    for question in ("Hola", "Hola"):
        model.invoke(question, config={"callbacks": [tracker]})
    usage = CallUsage.from_tracker(tracker)
    assert usage.cached_input_tokens == tracker.cached_input_tokens > 0
    total = CallUsage.total([usage, CallUsage(input_tokens=10, cached_input_tokens=3)])
    assert total.cached_input_tokens == usage.cached_input_tokens + 3


def test_a_body_without_the_field_counts_no_cached_tokens() -> None:
    """A server that predates the field still talks to a newer client."""
    usage = CallUsage.model_validate_json('{"model_calls": 1, "input_tokens": 500, "output_tokens": 20}')
    assert usage.cached_input_tokens == 0
