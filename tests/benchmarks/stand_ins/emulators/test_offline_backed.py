"""Every emulator with their default backing model, the offline model, on the article's first question.

This is what ``erp-ai emulate`` serves: the real clients, the real sales tools and the seeded ERP.
"""

from __future__ import annotations

from typing import Any

import pytest
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage

from benchmarks.stand_ins.emulators import EmulatorServer
from shared.security import DEMO_CALLER
from tests.benchmarks.stand_ins.emulators.emulator_fakes import client as real_client
from tests.benchmarks.stand_ins.offline.offline_prompts import QUESTION, Plan

SYSTEM = "Eres el asistente de ventas del ERP. Fecha de hoy: 2026-11-30"


@pytest.fixture
def client(offline_server: EmulatorServer) -> BaseChatModel:
    return real_client(offline_server, temperature=0)


def test_tool_calling_turn_answers_from_the_erp(client: BaseChatModel, registry: Any, erp: Any) -> None:
    tools = {tool.name: tool for tool in registry.langchain_tools(erp, caller=DEMO_CALLER)}
    model = client.bind_tools(list(tools.values()))
    conversation: list[Any] = [SystemMessage(SYSTEM), HumanMessage(QUESTION)]

    first = model.invoke(conversation)
    assert isinstance(first, AIMessage)
    assert sorted((c["name"], c["args"]["anio"]) for c in first.tool_calls) == [
        ("mejor_cliente", 2025),
        ("ventas_anuales", 2025),
    ]
    assert first.usage_metadata is not None and first.usage_metadata["input_tokens"] > 100
    results = [
        ToolMessage(tools[c["name"]].invoke(c["args"]), tool_call_id=c["id"], name=c["name"])
        for c in first.tool_calls
    ]
    final = model.invoke([*conversation, first, *results])

    assert final.tool_calls == []  # type: ignore[attr-defined]
    assert "₲" in final.text and "2025" in final.text


def test_structured_plan_has_both_operations(client: BaseChatModel, registry: Any) -> None:
    catalog = "\n".join(f"- {spec.name}: {spec.description}" for spec in registry.catalog(DEMO_CALLER))
    planner = client.with_structured_output(Plan, method="json_schema")

    plan = planner.invoke(
        [
            SystemMessage(f'Devuelve el plan JSON con "operaciones". Operaciones disponibles:\n{catalog}'),
            HumanMessage(f"Fecha de hoy: 2026-11-30\nNueva pregunta: {QUESTION}"),
        ]
    )

    assert isinstance(plan, Plan)
    assert sorted(op.funcion for op in plan.operaciones) == ["mejor_cliente", "ventas_anuales"]
    assert all(op.parametros == {"anio": 2025} for op in plan.operaciones)
