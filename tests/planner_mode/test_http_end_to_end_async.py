"""The async HTTP client against real offline AI servers on loopback: same results as the sync client, the
answer streamed in several deltas, one client serving several event loops (in sequence and at once), and the
engine streaming a whole turn through a server."""

from __future__ import annotations

import asyncio
import gc
import threading
import warnings
from collections.abc import Iterator
from datetime import date
from typing import Any

import pytest

from benchmarks.serving import ServerThread
from planner_mode.client import last_item
from planner_mode.engine import PlannerEngine
from planner_mode.http_client import HttpAIClient
from planner_mode.plan import OperationOutcome
from planner_mode.server import create_app
from planner_mode.wire import AnalyzeResponse, RespondResponse
from shared.erp.database import Erp
from shared.memory.context import ConversationContext
from shared.memory.store import MemoryStore
from shared.operations.registry import OperationRegistry, OperationSpec
from shared.security import DEMO_CALLER

CONTEXT = ConversationContext(hoy=date(2026, 11, 30))
QUESTION = "¿Cuánto vendimos en 2025?"
RESULTS = [
    OperationOutcome(
        funcion="ventas_anuales", parametros={"anio": 2025}, resultado={"anio": 2025, "total": 850_000_000}
    )
]


def uncached_offline_model(**options: Any) -> Any:
    """The offline model without its modelled prompt cache: the same call reports the same usage each time
    (these tests compare transports, not what a server's cache saw before)."""
    from benchmarks.stand_ins.offline import OfflineSalesModel

    return OfflineSalesModel(prompt_cache_size=0, **options)


@pytest.fixture(scope="module")
def offline_servers() -> Iterator[list[str]]:
    with (
        ServerThread(create_app(uncached_offline_model())) as a,
        ServerThread(create_app(uncached_offline_model())) as b,
    ):
        yield [a.url, b.url]


@pytest.fixture
def catalog(registry: OperationRegistry) -> list[OperationSpec]:
    return registry.catalog(DEMO_CALLER)


def comparable(response: AnalyzeResponse | RespondResponse) -> dict[str, Any]:
    """A response without its measured times (the only part that differs from one call to the next)."""
    return response.model_dump(exclude={"usage": {"model_ms"}})


def test_the_calls_stream_over_http_and_end_in_their_results(
    offline_servers: list[str], catalog: list[OperationSpec]
) -> None:
    async def both(client: HttpAIClient) -> tuple[AnalyzeResponse, list[str | RespondResponse]]:
        analyzed = await last_item(client.plan(QUESTION, CONTEXT, catalog))
        return analyzed, [item async for item in client.answer(QUESTION, RESULTS, CONTEXT)]

    with HttpAIClient(offline_servers, timeout=30) as client:
        analyzed, (*deltas, last) = asyncio.run(both(client))
    assert analyzed.plan.operaciones[0].funcion == "ventas_anuales"
    assert len(deltas) >= 2 and all(isinstance(delta, str) for delta in deltas)
    assert isinstance(last, RespondResponse) and "₲850.000.000" in last.answer.respuesta
    assert "".join(str(delta) for delta in deltas) == last.answer.respuesta


def test_one_client_serves_asyncio_run_calls_in_sequence_and_leaves_no_socket_open(
    offline_servers: list[str], catalog: list[OperationSpec]
) -> None:
    client = HttpAIClient(offline_servers, timeout=30)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ResourceWarning)
        first = asyncio.run(last_item(client.plan(QUESTION, CONTEXT, catalog)))
        second = asyncio.run(last_item(client.plan(QUESTION, CONTEXT, catalog)))  # a new loop: a new pool
        client.close()
        gc.collect()
    assert comparable(first) == comparable(second)
    assert [w for w in caught if issubclass(w.category, ResourceWarning)] == []


def test_one_client_serves_loops_in_several_threads_at_once(
    offline_servers: list[str], catalog: list[OperationSpec]
) -> None:
    results: list[AnalyzeResponse] = []
    errors: list[BaseException] = []
    barrier = threading.Barrier(3)

    async def turns(client: HttpAIClient) -> None:
        barrier.wait(10)  # every thread's loop is running before any call
        for _ in range(3):
            results.append(await last_item(client.plan(QUESTION, CONTEXT, catalog)))

    def run(client: HttpAIClient) -> None:
        try:
            asyncio.run(turns(client))
        except BaseException as exc:  # reported by the main thread
            errors.append(exc)

    with HttpAIClient(offline_servers, timeout=30) as client:
        threads = [threading.Thread(target=run, args=(client,)) for _ in range(3)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(30)
    assert errors == []
    assert len(results) == 9 and len({r.plan.model_dump_json() for r in results}) == 1


def test_the_simulated_token_times_of_a_call_travel_over_http() -> None:
    model = uncached_offline_model(latency_profile="gpu-8b")
    with ServerThread(create_app(model)) as server, HttpAIClient([server.url], timeout=30) as client:
        usage = asyncio.run(last_item(client.answer(QUESTION, RESULTS, CONTEXT))).usage
    assert usage.simulated_first_token_ms is not None and usage.simulated_ms_per_token is not None
    assert usage.simulated_model_ms is not None and usage.simulated_model_ms > usage.simulated_first_token_ms


def test_the_engine_streams_a_turn_through_http_with_the_same_result_and_simulated_first_token(
    registry: OperationRegistry, erp: Erp, memory_store: MemoryStore
) -> None:
    """The engine over AI servers (offline, ``gpu-8b``): ``astream`` gives several answer deltas, the same
    turn as ``ask`` (its result and record), and the simulated time to the first answer token."""
    from shared.events import AnswerDelta, TurnDone

    model = uncached_offline_model(latency_profile="gpu-8b")
    with ServerThread(create_app(model)) as server, HttpAIClient([server.url], timeout=30) as client:
        engine = PlannerEngine(registry, erp, memory_store, client)
        asked = engine.ask("sync", QUESTION, DEMO_CALLER)

        async def stream() -> list[Any]:
            return [event async for event in engine.astream("streamed", QUESTION, DEMO_CALLER)]

        events = asyncio.run(stream())
    deltas = [event.text for event in events if isinstance(event, AnswerDelta)]
    done = events[-1]
    assert isinstance(done, TurnDone)
    streamed = done.result
    assert len(deltas) >= 2 and "".join(deltas) == streamed.answer == asked.answer
    assert streamed.recorded and asked.recorded
    assert (streamed.model_calls, streamed.input_tokens, streamed.output_tokens) == (
        asked.model_calls,
        asked.input_tokens,
        asked.output_tokens,
    )
    assert streamed.simulated_model_ms == asked.simulated_model_ms
    assert streamed.simulated_first_answer_ms is not None and streamed.simulated_model_ms is not None
    assert 0 < streamed.simulated_first_answer_ms < streamed.simulated_model_ms
    assert [m.content for m in memory_store.history("streamed")] == [
        m.content for m in memory_store.history("sync")
    ]
