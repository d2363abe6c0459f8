"""Grounded answers in the planner: a figure the ERP did not return is never shown as its truth."""

from __future__ import annotations

import json
from typing import Any

import pytest

from benchmarks.serving import ServerThread
from planner_mode import HttpAIClient, InProcessAIClient, PlannerAI, PlannerEngine
from planner_mode.server import create_app
from shared.security import DEMO_CALLER
from tests.planner_mode.planner_fakes import scripted, text_model

SALES_2025 = {"operaciones": [{"funcion": "ventas_anuales", "parametros": {"anio": 2025}}]}


def answering(text: str, *memories: str) -> Any:
    def answer(_results: list[dict[str, Any]]) -> str:
        items = [{"contenido": item, "importancia": 0.8} for item in memories]
        return json.dumps({"respuesta": text, "memoria": items, "estado": {}})

    return scripted(SALES_2025, answer)


def engine(reply: Any, registry: Any, erp: Any, store: Any, **options: Any) -> PlannerEngine:
    return PlannerEngine(registry, erp, store, InProcessAIClient(PlannerAI(text_model(reply))), **options)


def test_an_invented_figure_is_refused_with_the_erps_own_results_and_nothing_is_stored(
    registry: Any, erp: Any, memory_store: Any
) -> None:
    planner = engine(answering("En 2025 vendimos ₲987.654.321."), registry, erp, memory_store)
    result = planner.ask("c1", "¿Cuánto vendimos en 2025?", DEMO_CALLER)
    assert result.failure == "ungrounded" and result.ungrounded_figures == ["987.654.321"]
    assert not result.recorded and memory_store.history("c1") == []
    assert "987.654.321" in result.answer and "ventas_anuales(anio=2025)" in result.answer
    total = result.operations[0].result["total"]
    assert f"total: {total:,}".replace(",", ".") in result.answer  # the ERP's figure, shown as such


def test_a_figure_the_erp_returned_passes_however_it_is_written(
    registry: Any, erp: Any, memory_store: Any
) -> None:
    total = PlannerEngine(registry, erp, memory_store, PlannerAI(text_model(scripted(SALES_2025))))
    truth = total.ask("c0", "¿Cuánto vendimos en 2025?", DEMO_CALLER).operations[0].result["total"]
    written = f"En 2025 vendimos ₲{truth:,}".replace(",", ".")
    result = engine(answering(written), registry, erp, memory_store).ask("c1", "¿Y en 2025?", DEMO_CALLER)
    assert result.failure is None and result.ungrounded_figures == [] and result.recorded


def test_flag_shows_and_records_the_answer_but_never_remembers_an_invented_figure(
    registry: Any, erp: Any, memory_store: Any
) -> None:
    reply = answering("Vendimos ₲987.654.321.", "Ventas 2025: ₲987.654.321", "Hablamos de ventas.")
    result = engine(reply, registry, erp, memory_store, grounding="flag").ask(
        "c1", "¿Ventas 2025?", DEMO_CALLER
    )
    assert result.failure is None and result.recorded and result.answer == "Vendimos ₲987.654.321."
    assert result.ungrounded_figures == ["987.654.321"]
    assert result.memories == ["Hablamos de ventas."]


def test_off_does_not_check(registry: Any, erp: Any, memory_store: Any) -> None:
    reply = answering("Vendimos ₲987.654.321.", "Ventas 2025: ₲987.654.321")
    result = engine(reply, registry, erp, memory_store, grounding="off").ask(
        "c1", "¿Ventas 2025?", DEMO_CALLER
    )
    assert result.failure is None and result.ungrounded_figures == [] and len(result.memories) == 1


def test_an_unknown_policy_is_refused_at_construction(registry: Any, erp: Any, memory_store: Any) -> None:
    with pytest.raises(ValueError, match="grounding policy"):
        engine(answering("x"), registry, erp, memory_store, grounding="maybe")


def test_through_the_ai_server_the_erp_still_refuses_an_invented_figure(
    registry: Any, erp: Any, memory_store: Any
) -> None:
    model = text_model(answering("En 2025 vendimos ₲987.654.321.", "Ventas 2025: ₲987.654.321"))
    with ServerThread(create_app(model)) as server, HttpAIClient([server.url], timeout=30) as client:
        result = PlannerEngine(registry, erp, memory_store, client).ask(
            "c1", "¿Cuánto vendimos en 2025?", DEMO_CALLER
        )
    assert result.failure == "ungrounded" and result.ungrounded_figures == ["987.654.321"]
    assert not result.recorded and memory_store.history("c1") == [] and memory_store.memories("c1") == []
    assert f"total: {result.operations[0].result['total']:,}".replace(",", ".") in result.answer
