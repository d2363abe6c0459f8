"""Two real AI servers on loopback serve one conversation: the server keeps no state (article §13–14)."""

from __future__ import annotations

import asyncio
import gc
import json
import threading
import warnings
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from langchain_core.messages import BaseMessage

from benchmarks.serving import ServerThread
from planner_mode import HttpAIClient, PlannerEngine, create_app
from planner_mode.client import AnswerReply, PlanReply, last_item
from planner_mode.plan import OperationOutcome
from planner_mode.server.http_client import AIServerUnauthorized
from shared.erp.database import Erp
from shared.errors import ConfigurationError
from shared.memory.store import MemoryStore
from shared.operations.registry import OperationRegistry, OperationSpec
from shared.security import DEMO_CALLER
from tests.fakes import CallInfo, FunctionChatModel
from tests.planner_mode.planner_fakes import CONTEXT, is_plan_request, op, plan, results_of, text_model


def context_reading_model() -> FunctionChatModel:
    """A fake that, like a real model, can only know the customer from the context it is sent."""

    def reply(messages: list[BaseMessage], _info: CallInfo) -> str:
        human = str(messages[-1].content)
        if is_plan_request(messages):
            if "¿Y cuánto compró?" in human.split("Nueva pregunta:")[1]:
                customer = human.split("- cliente_actual: ")[1].split("\n")[0]
                return json.dumps(plan(op("compras_cliente", cliente=customer, anio=2025)))
            return json.dumps(plan(op("mejor_cliente", anio=2025)))
        data = results_of(messages)[0]["resultado"]
        estado = {"cliente_actual": data["cliente"], "anio": 2025}
        return json.dumps({"respuesta": f"{data['cliente']}: {data['total']}", "estado": estado})

    return text_model(reply)


def test_two_servers_serve_alternate_calls_of_one_conversation_and_survive_a_restart(
    toy_registry: OperationRegistry, toy_erp: Erp, memory_store: MemoryStore
) -> None:
    model_a, model_b = context_reading_model(), context_reading_model()
    with ServerThread(create_app(model_a, token="k")) as a:
        server_b = ServerThread(create_app(model_b, token="k")).start()
        client = HttpAIClient([a.url, server_b.url], token="k", timeout=30)
        try:
            engine = PlannerEngine(toy_registry, toy_erp, memory_store, client)

            first = engine.ask("c1", "¿Cuál fue mi mejor cliente?", DEMO_CALLER)
            assert first.answer == "Empresa ABC: 120.000.000"
            assert (model_a.call_count, model_b.call_count) == (1, 1)  # call 1 on A, call 2 on B
            assert first.model_calls == 2 and first.input_tokens == 200

            # Restart B: a new process would have a new app and a new model, and no memory of turn 1.
            port = server_b.port
            server_b.stop()
            model_b = context_reading_model()
            server_b = ServerThread(create_app(model_b, token="k"), port=port).start()

            second = engine.ask("c1", "¿Y cuánto compró?", DEMO_CALLER)
            assert second.answer == "Empresa ABC: 120.000.000"
            assert second.operations[0].parameters == {"cliente": "Empresa ABC", "anio": 2025}
            assert (model_a.call_count, model_b.call_count) == (2, 1)
            assert second.errors == [] and second.recorded
        finally:
            client.close()
            server_b.stop()


def test_a_dead_server_is_skipped_and_a_wrong_token_is_a_configuration_error_out_of_the_turn(
    toy_registry: OperationRegistry, toy_erp: Erp, memory_store: MemoryStore
) -> None:
    dead = ServerThread(create_app(context_reading_model()))
    dead_url = dead.url
    dead.sock.close()  # bound once, never served: connections are refused
    with (
        ServerThread(create_app(context_reading_model(), token="k")) as live,
        HttpAIClient([dead_url, live.url], token="k", timeout=30) as right_token,
        HttpAIClient([live.url], token="x", timeout=30) as wrong_token,
    ):
        ok = PlannerEngine(toy_registry, toy_erp, memory_store, right_token)
        assert ok.ask("c1", "¿Cuál fue mi mejor cliente?", DEMO_CALLER).answer == "Empresa ABC: 120.000.000"

        wrong = PlannerEngine(toy_registry, toy_erp, memory_store, wrong_token)
        with pytest.raises(AIServerUnauthorized) as refused:  # a setting to fix, not a failed turn to retry
            wrong.ask("c2", "¿Cuál fue mi mejor cliente?", DEMO_CALLER)
        assert isinstance(refused.value, ConfigurationError) and refused.value.url == live.url
        assert memory_store.history("c2") == []


@pytest.mark.parametrize("stream", [True, False], ids=["streamed", "whole"])
def test_a_401_raises_the_typed_error_not_a_provider_failure(stream: bool) -> None:
    def refuse(_request: httpx.Request) -> httpx.Response:
        return httpx.Response(401, json={"error": "Missing or wrong bearer token.", "kind": "unauthorized"})

    client = HttpAIClient(["http://a.test"], transport=httpx.MockTransport(refuse))
    with pytest.raises(AIServerUnauthorized, match="bearer token"):
        asyncio.run(last_item(client.answer("q", [], CONTEXT, [], stream=stream)))


def test_no_stored_data_can_make_a_request_to_the_ai_server_oversized(
    toy_registry: OperationRegistry, toy_erp: Erp, memory_store: MemoryStore
) -> None:
    """Megabytes of memory, state and messages (written behind the store's back, as an older version or
    another writer could) never brick a conversation with 413s: the context is bounded by construction."""
    from sqlalchemy import insert, update

    from shared.memory.tables import ConversationState, MemoryRecord, Message

    megabyte = 'ventas "2025" \\ ñandú\n' * 45_000
    memory_store.ensure_conversation("big", user_id="gerente")
    big = {"conversation_id": "big"}
    with memory_store.engine.begin() as connection:
        memories = [
            {**big, "content": f"{i} {megabyte}", "content_key": f"k{i}", "importance": 0.9} for i in range(5)
        ]
        connection.execute(insert(MemoryRecord), memories)
        messages = [{**big, "role": role, "content": megabyte} for role in ("user", "assistant") * 2]
        connection.execute(insert(Message), messages)
        state = {f"clave{i}": megabyte for i in range(5)}
        connection.execute(
            update(ConversationState).where(ConversationState.conversation_id == "big").values(state=state)
        )

    with (
        ServerThread(create_app(context_reading_model())) as server,  # the default 1 MB body limit
        HttpAIClient([server.url], timeout=30) as client,
    ):
        engine = PlannerEngine(toy_registry, toy_erp, memory_store, client)
        first = engine.ask("big", "¿Cuál fue mi mejor cliente?", DEMO_CALLER)
        second = engine.ask("big", "¿Cuál fue mi mejor cliente?", DEMO_CALLER)

    for turn in (first, second):
        assert turn.failure is None and turn.recorded, turn.errors
        assert turn.answer == "Empresa ABC: 120.000.000"


# -- the HTTP client on its own ------------------------------------------------------------------------------

QUESTION = "¿Cuánto vendimos en 2025?"
RESULTS = [
    OperationOutcome(
        funcion="ventas_anuales", parametros={"anio": 2025}, resultado={"anio": 2025, "total": 850_000_000}
    )
]


def uncached_offline_model() -> Any:
    """The offline model without its modelled prompt cache: the same call reports the same usage each time
    (these tests compare transports, not what a server's cache saw before)."""
    from benchmarks.stand_ins.offline import OfflineSalesModel

    return OfflineSalesModel(prompt_cache_size=0)


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


def comparable(reply: PlanReply | AnswerReply) -> dict[str, Any]:
    """A reply without its measured times (the only part that differs from one call to the next)."""
    result = reply.plan if isinstance(reply, PlanReply) else reply.answer
    usage = reply.usage.model_dump(exclude={"model_ms": True, "calls": {"__all__": {"ms", "first_token_ms"}}})
    return {"result": result.model_dump(), "usage": usage}


def test_the_calls_stream_over_http_and_end_in_their_results(
    offline_servers: list[str], catalog: list[OperationSpec]
) -> None:
    async def both(client: HttpAIClient) -> tuple[PlanReply, list[str | AnswerReply]]:
        analyzed = await last_item(client.plan(QUESTION, CONTEXT, catalog))
        return analyzed, [item async for item in client.answer(QUESTION, RESULTS, CONTEXT, [])]

    with HttpAIClient(offline_servers, timeout=30) as client:
        analyzed, (*deltas, last) = asyncio.run(both(client))
    assert analyzed.plan.operations[0].function == "ventas_anuales"
    assert len(deltas) >= 2 and all(isinstance(delta, str) for delta in deltas)
    assert isinstance(last, AnswerReply) and "₲850.000.000" in last.answer.text
    assert "".join(str(delta) for delta in deltas) == last.answer.text
    # each call's measured detail comes back from the server, marked with what the call was for
    assert [call.role for call in analyzed.usage.calls] == ["plan"]
    assert [call.role for call in last.usage.calls] == ["answer"]
    assert last.usage.calls[0].output_tokens == last.usage.output_tokens > 0


def test_one_client_serves_asyncio_run_calls_in_sequence_and_leaves_no_socket_open(
    offline_servers: list[str], catalog: list[OperationSpec]
) -> None:
    client = HttpAIClient(offline_servers, timeout=30)
    gc.collect()  # earlier tests' garbage is not this client's: collect it before watching for warnings
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
    results: list[PlanReply] = []
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
