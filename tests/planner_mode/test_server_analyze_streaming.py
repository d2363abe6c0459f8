"""``POST /ai/analyze`` streamed as NDJSON: a direct answer reaches the ERP (and the user) as it is written.

The same line format as ``/ai/respond`` (:mod:`tests.planner_mode.test_server_streaming`, whose
:class:`StreamingModel` is used here): ``answer_delta`` lines while the model writes a direct answer that is
its reply's first key, then the ``response`` line with the plan and the usage; a plan with operations sends no
delta. The HTTP client reads it, and the engine over HTTP streams a direct answer before ``PlanReady`` just as
it does in process.
"""

from __future__ import annotations

import asyncio
import json
from datetime import date
from typing import Any

import pytest
from fastapi.testclient import TestClient

from benchmarks.serving import ServerThread
from planner_mode import HttpAIClient, InProcessAIClient, PlannerAI, PlannerEngine
from planner_mode.client import AICallError
from planner_mode.server import create_app
from planner_mode.wire import NDJSON, AnalyzeResponse
from shared.erp.database import Erp
from shared.errors import ProviderError
from shared.events import AnswerDelta, PlanReady, TurnDone
from shared.memory.context import ConversationContext
from shared.memory.store import MemoryStore
from shared.operations.registry import OperationRegistry
from shared.security import DEMO_CALLER
from tests.planner_mode.test_server_streaming import STREAM, ndjson, streaming_model

CONTEXT = ConversationContext(hoy=date(2026, 11, 30))
GREETING = "¡Hola! Puedo consultar las ventas, los clientes y las facturas. ¿Qué necesitás?"
DIRECT = json.dumps({"respuesta_directa": GREETING}, ensure_ascii=False)
PLAN = json.dumps({"operaciones": [{"funcion": "ventas_anuales", "parametros": {"anio": 2025}}]})


def body(toy_registry: OperationRegistry, message: str = "Hola") -> dict[str, Any]:
    catalog = toy_registry.catalog(DEMO_CALLER)
    return {
        "message": message,
        "context": CONTEXT.model_dump(mode="json"),
        "catalog": [spec.model_dump(mode="json") for spec in catalog],
    }


def test_analyze_streams_a_direct_answer_then_the_plan(toy_registry: OperationRegistry) -> None:
    with (
        TestClient(create_app(streaming_model(DIRECT))) as c,
        c.stream("POST", "/ai/analyze", json=body(toy_registry), headers=STREAM) as response,
    ):
        lines = ndjson(response)
    assert response.status_code == 200 and response.headers["content-type"].startswith(NDJSON)
    *deltas, last = lines
    assert len(deltas) >= 2 and {line["type"] for line in deltas} == {"answer_delta"}
    assert "".join(line["text"] for line in deltas) == GREETING
    assert last["type"] == "response"
    parsed = AnalyzeResponse.model_validate(last)
    assert parsed.plan.respuesta_directa == GREETING and parsed.plan.pregunta == "Hola"
    assert parsed.usage.model_calls == 1


def test_a_plan_with_operations_streams_only_its_response_line(toy_registry: OperationRegistry) -> None:
    with (
        TestClient(create_app(streaming_model(PLAN))) as c,
        c.stream("POST", "/ai/analyze", json=body(toy_registry), headers=STREAM) as response,
        TestClient(create_app(streaming_model(PLAN))) as plain,
    ):
        lines = ndjson(response)
        whole = plain.post("/ai/analyze", json=body(toy_registry))
    assert [line["type"] for line in lines] == ["response"]
    assert AnalyzeResponse.model_validate(lines[0]).plan == AnalyzeResponse.model_validate(whole.json()).plan
    assert whole.headers["content-type"] == "application/json"


def test_a_model_failing_mid_answer_ends_the_analyze_stream_with_an_error_line(
    toy_registry: OperationRegistry,
) -> None:
    with (
        TestClient(create_app(streaming_model(DIRECT, break_after=8))) as c,
        c.stream("POST", "/ai/analyze", json=body(toy_registry), headers=STREAM) as response,
    ):
        lines = ndjson(response)
    *deltas, last = lines
    assert deltas and {line["type"] for line in deltas} == {"answer_delta"}
    assert (last["type"], last["kind"], last["usage"]["model_calls"]) == ("error", "provider", 1)


def test_the_openapi_schema_documents_the_analyze_stream() -> None:
    with TestClient(create_app(streaming_model())) as c:
        schema = c.get("/openapi.json").json()
    analyze = schema["paths"]["/ai/analyze"]["post"]
    assert "application/x-ndjson" in analyze["description"]
    line = analyze["responses"]["200"]["content"][NDJSON]["schema"]
    names = sorted(option["$ref"].rsplit("/", 1)[1] for option in line["oneOf"])
    assert names == ["AnalyzeLine", "AnswerDeltaLine", "ErrorLine"]
    assert all(name in schema["components"]["schemas"] for name in names)


# -- the clients --------------------------------------------------------------------------------------------


def collect(client: HttpAIClient | InProcessAIClient, catalog: Any) -> list[str | AnalyzeResponse]:
    async def run() -> list[str | AnalyzeResponse]:
        return [item async for item in client.plan("Hola", CONTEXT, catalog)]

    return asyncio.run(run())


def test_the_http_client_streams_a_direct_answer_like_the_in_process_client(
    toy_registry: OperationRegistry,
) -> None:
    catalog = toy_registry.catalog(DEMO_CALLER)
    in_process = collect(InProcessAIClient(PlannerAI(streaming_model(DIRECT))), catalog)
    with (
        ServerThread(create_app(streaming_model(DIRECT))) as server,
        HttpAIClient([server.url], timeout=30) as client,
    ):
        over_http = collect(client, catalog)
    for items in (in_process, over_http):
        *deltas, last = items
        assert len(deltas) >= 2 and all(isinstance(delta, str) for delta in deltas)
        assert isinstance(last, AnalyzeResponse)
        assert "".join(str(delta) for delta in deltas) == last.plan.respuesta_directa == GREETING
    assert in_process[:-1] == over_http[:-1]


def test_a_broken_analyze_stream_is_an_ai_call_error_after_its_deltas(
    toy_registry: OperationRegistry,
) -> None:
    catalog = toy_registry.catalog(DEMO_CALLER)
    seen: list[str | AnalyzeResponse] = []

    async def run(client: HttpAIClient) -> None:
        async for item in client.plan("Hola", CONTEXT, catalog):
            seen.append(item)

    with (
        ServerThread(create_app(streaming_model(DIRECT, break_after=8))) as server,
        HttpAIClient([server.url], timeout=30) as client,
        pytest.raises(AICallError) as failed,
    ):
        asyncio.run(run(client))
    assert seen and all(isinstance(item, str) for item in seen)
    assert isinstance(failed.value.cause, ProviderError) and failed.value.usage.model_calls == 1


def test_over_http_the_engine_streams_a_direct_answer_before_the_plan(
    toy_registry: OperationRegistry, toy_erp: Erp, memory_store: MemoryStore
) -> None:
    with (
        ServerThread(create_app(streaming_model(DIRECT))) as server,
        HttpAIClient([server.url], timeout=30) as client,
    ):
        engine = PlannerEngine(toy_registry, toy_erp, memory_store, client)

        async def run() -> list[Any]:
            return [event async for event in engine.astream("c1", "Hola", DEMO_CALLER)]

        events = asyncio.run(run())
    types = [type(event) for event in events]
    assert types.index(PlanReady) > 1 and set(types[: types.index(PlanReady)]) == {AnswerDelta}
    result = events[-1].result if isinstance(events[-1], TurnDone) else None
    assert result is not None and result.recorded and result.plan_valid is True
    assert "".join(e.text for e in events if isinstance(e, AnswerDelta)) == result.answer == GREETING
