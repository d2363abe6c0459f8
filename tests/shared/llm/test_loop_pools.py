"""One chat model serves every event loop: a blocking ``ask`` and any number of ``asyncio.run`` calls."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from langchain_core.language_models import BaseChatModel

from benchmarks.stand_ins.emulators import create_emulator
from planner_mode.ai import PlannerAI
from planner_mode.engine import PlannerEngine
from shared.llm.loop_pools import LoopBoundPools
from shared.security import DEMO_CALLER
from shared.turn_steps import run_until_complete
from tests.shared.llm.provider_fakes import network_model
from toolcalling_mode.engine import ToolCallingEngine

QUESTION = "¿Cuánto vendimos en 2025?"


class CountingPool:
    opened = 0

    def __init__(self) -> None:
        CountingPool.opened += 1
        self.closed = False
        self.loop = asyncio.get_running_loop()

    async def handle_async_request(self, request: Any) -> Any:
        assert asyncio.get_running_loop() is self.loop, "a pool used from another loop"
        return ("answered", request)

    async def aclose(self) -> None:
        self.closed = True


def test_each_event_loop_gets_its_own_pool_and_keeps_it() -> None:
    CountingPool.opened = 0
    pools = LoopBoundPools(CountingPool)

    async def two_requests() -> list[Any]:
        return [await pools.handle_async_request("a"), await pools.handle_async_request("b")]

    assert asyncio.run(two_requests()) == [("answered", "a"), ("answered", "b")]
    assert asyncio.run(two_requests()) == [("answered", "a"), ("answered", "b")]
    assert CountingPool.opened == 2


def test_closing_closes_the_running_loops_pool() -> None:
    pools = LoopBoundPools(CountingPool)

    async def use_then_close() -> CountingPool:
        await pools.handle_async_request("a")
        pool: CountingPool = pools._pool()
        async with pools:
            pass
        return pool

    assert asyncio.run(use_then_close()).closed


def test_a_model_answers_on_the_blocking_loop_and_then_on_fresh_loops(provider_model: BaseChatModel) -> None:
    async def call() -> str:
        return str((await provider_model.ainvoke(QUESTION)).content)

    answers = [run_until_complete(call()), asyncio.run(call()), asyncio.run(call())]

    assert all(answers), answers


@pytest.mark.parametrize("mode", ["planner", "toolcalling"])
def test_an_engine_asks_then_answers_under_asyncio_run_with_one_model(
    mode: str, erp: Any, registry: Any, memory_store: Any
) -> None:
    with create_emulator("openai") as server:
        model = network_model("openai", server.base_url)
        engine: PlannerEngine | ToolCallingEngine = (
            PlannerEngine(registry, erp, memory_store, PlannerAI(model))
            if mode == "planner"
            else ToolCallingEngine(registry, erp, memory_store, model)
        )
        asked = engine.ask("loops-1", QUESTION, DEMO_CALLER)
        awaited = asyncio.run(engine.aask("loops-2", QUESTION, DEMO_CALLER))
        again = asyncio.run(engine.aask("loops-3", QUESTION, DEMO_CALLER))

    for result in (asked, awaited, again):
        assert result.failure is None, result.errors
        assert result.model_calls >= 1
