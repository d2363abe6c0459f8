"""The AI server under concurrent load: every request answered with its own plan, and the collector tuned
for serving only while an app is served (and only when asked), then put back as it was.

Behaviour only: nothing here depends on how fast the machine is.
"""

from __future__ import annotations

import asyncio
import gc
from collections.abc import Iterator
from datetime import date

import httpx
import pytest
from fastapi.testclient import TestClient

from benchmarks.loadtest_analyze import analyze_body, measure
from benchmarks.served_app import served_app
from benchmarks.serving import ServerThread
from benchmarks.stand_ins import build_model
from planner_mode.server import SERVING_GC_THRESHOLD, create_app
from planner_mode.server.wire import AnalyzeResponse
from shared.memory.context import ConversationContext
from shared.operations.sales import sales_registry
from shared.security import DEMO_CALLER

CONCURRENCY = 64


@pytest.fixture(scope="module")
def server() -> Iterator[ServerThread]:
    with ServerThread(create_app(build_model("offline"))) as running:
        yield running


def test_concurrent_analyze_requests_each_get_the_plan_of_their_own_question(server: ServerThread) -> None:
    catalog = [spec.model_dump() for spec in sales_registry().catalog(DEMO_CALLER)]
    context = ConversationContext(hoy=date(2026, 11, 30)).model_dump(mode="json")
    years = range(1990, 1990 + CONCURRENCY)

    def body(year: int) -> dict[str, object]:
        return {"message": f"¿Cuánto vendimos en {year}?", "context": context, "catalog": catalog}

    async def ask_all() -> list[httpx.Response]:
        async with httpx.AsyncClient(base_url=server.url, timeout=120) as http:
            return await asyncio.gather(*(http.post("/ai/analyze", json=body(year)) for year in years))

    responses = asyncio.run(ask_all())

    assert [response.status_code for response in responses] == [200] * CONCURRENCY
    for year, response in zip(years, responses, strict=True):
        plan = AnalyzeResponse.model_validate_json(response.content).plan
        assert plan.question == f"¿Cuánto vendimos en {year}?"
        operations = [(op.function, op.parameters) for op in plan.operations]
        assert operations == [("ventas_anuales", {"anio": year})]


def test_the_load_generator_counts_every_answer_of_the_server(server: ServerThread) -> None:
    result = measure(server.url, concurrency=8, seconds=0.3, warmup=0.1, body=analyze_body())
    assert result.requests > 0
    assert result.statuses == {200: result.requests}
    assert result.latency.count == result.requests
    assert result.server_cpu_ms is None  # a server this tool did not start: its process is unknown


def test_the_load_generator_only_targets_this_machine() -> None:
    with pytest.raises(ValueError, match="only targets this machine"):
        measure("http://example.com:8000")


def test_a_served_app_tunes_the_collector_and_puts_it_back_at_shutdown() -> None:
    before = (gc.get_threshold(), gc.get_freeze_count())
    with TestClient(create_app(build_model("offline"), tune_gc=True)) as client:
        assert client.get("/healthz").status_code == 200
        assert gc.get_threshold()[0] == SERVING_GC_THRESHOLD
        assert gc.get_freeze_count() > 0  # the heap built before serving is out of the collector's scans
    assert (gc.get_threshold(), gc.get_freeze_count()) == before


def test_an_embedded_app_leaves_the_collector_alone() -> None:
    before = (gc.get_threshold(), gc.get_freeze_count())
    with TestClient(create_app(build_model("offline"))) as client:
        assert client.get("/healthz").status_code == 200
        assert (gc.get_threshold(), gc.get_freeze_count()) == before


def test_the_app_erp_ai_serve_runs_is_served_with_the_tuned_collector(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("ERP_AI_PROVIDER", raising=False)
    with TestClient(served_app()):
        assert gc.get_threshold()[0] == SERVING_GC_THRESHOLD
