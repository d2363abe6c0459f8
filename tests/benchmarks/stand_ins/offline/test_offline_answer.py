"""The offline model as the planner's call 2: ``respuesta``, ``memoria`` and ``estado`` from the results.

``respuesta`` comes first; ``estado`` holds the keys the instructions name (the article's ``tema``, ``anio``,
``cliente_actual`` when they name none) whose value changed; ``memoria`` restates the results unless the
instructions keep it for what the results do not say. Empty ones are left out.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage

from benchmarks.stand_ins.offline import OfflineSalesModel
from shared.answer import Answer
from tests.benchmarks.stand_ins.offline.offline_prompts import (
    QUESTION,
    answer_messages,
    context,
    failed,
    outcome,
)


def answer(question: str, results: list[dict[str, Any]], **ctx: Any) -> Answer:
    reply = OfflineSalesModel().invoke(answer_messages(question, results, **ctx))
    return Answer.model_validate_json(str(reply.content))


def answer_with(system: str, question: str, results: list[dict[str, Any]], **ctx: Any) -> dict[str, Any]:
    """The raw answer JSON to a call-2 prompt whose system instructions are ``system``."""
    messages: list[BaseMessage] = [
        SystemMessage(system),
        HumanMessage(f"Pregunta: {question}\n{context(**ctx)}\nResultados:\n{json.dumps(results)}"),
    ]
    data: dict[str, Any] = json.loads(str(OfflineSalesModel().invoke(messages).content))
    return data


ERP_DERIVES = (
    'Devuelve {"respuesta": "...", "memoria": [...], "estado": {"tema": "..."}}. El ERP ya guarda años, '
    'clientes y operaciones. "estado": solo claves que cambian, como "tema". "memoria" es opcional: solo '
    "hechos que no estén en los resultados ni en el estado."
)
"""Instructions like the planner's: the ERP keeps the facts, the model adds only what it alone knows."""
ARTICLE_STATE = 'Devuelve {"respuesta": "...", "memoria": [...], "estado": {...}}.'
"""Instructions that name no state key: the model keeps the article's state (§9)."""


def test_article_answer_has_the_figures_formatted_in_guaranies_and_the_named_state() -> None:
    result = answer(QUESTION, [outcome("ventas_anuales", anio=2025), outcome("mejor_cliente", anio=2025)])
    assert result.text == (
        "En 2025 las ventas fueron de ₲850.000.000 (120 facturas). "
        "El mejor cliente de 2025 fue Empresa ABC, con compras por ₲120.000.000."
    )
    assert result.state == {"tema": "ventas"}  # the only key the instructions name
    assert result.memories[0].content == "El mejor cliente de 2025 fue Empresa ABC."
    assert all(0 <= item.importance <= 1 for item in result.memories)
    assert len(result.memories) <= 3


def test_instructions_that_name_no_key_get_the_articles_state() -> None:
    data = answer_with(ARTICLE_STATE, QUESTION, [outcome("mejor_cliente", anio=2025)])
    assert data["estado"] == {"anio": 2025, "cliente_actual": "Empresa ABC", "tema": "ventas"}


def test_when_the_erp_derives_the_state_the_answer_is_the_text_and_what_changed() -> None:
    results = [outcome("mejor_cliente", anio=2025)]
    first = answer_with(ERP_DERIVES, "¿Cuál fue el mejor cliente de 2025?", results)
    assert list(first) == ["respuesta", "estado"]  # no memory: the ERP keeps the results
    assert first["estado"] == {"tema": "ventas"}
    again = answer_with(ERP_DERIVES, "¿Y el mejor cliente?", results, state={"tema": "ventas", "anio": 2025})
    assert list(again) == ["respuesta"]  # nothing changed: nothing but the text is written


def test_an_answer_request_without_structured_output_gets_the_answer_json_text_first() -> None:
    reply = OfflineSalesModel().invoke(
        answer_messages("¿Cuánto vendimos?", [outcome("ventas_anuales", anio=2025)])
    )
    assert str(reply.content).startswith('{"respuesta": "En 2025 las ventas fueron de')
    assert set(json.loads(str(reply.content))) == {"respuesta", "memoria", "estado"}


def test_state_keys_in_the_rendered_context_are_not_instructions() -> None:
    """A system prompt that embeds the context (tool calling) shows state keys; they ask for nothing."""
    system = ERP_DERIVES + "\n" + context(state={"anio": 2024, "cliente_actual": "Otro"})
    data = answer_with(system, QUESTION, [outcome("mejor_cliente", anio=2025)])
    assert data["estado"] == {"tema": "ventas"}


@pytest.mark.parametrize(
    ("funcion", "params", "expected"),
    [
        (
            "compras_cliente",
            {"cliente": "Empresa ABC", "anio": 2025},
            ["Empresa ABC compró ₲120.000.000 en 2025"],
        ),
        ("ventas_mensuales", {"anio": 2025}, ["enero: ₲10.000", "febrero: ₲20.000", "₲30.000"]),
        ("top_productos", {"anio": 2025}, ["Yerba Premium", "₲9.000.000", "Termo Acero", "₲4.000.000"]),
        (
            "ventas_por_categoria",
            {"anio": 2025},
            ["Alimentos: ₲9.000.000", "Bazar: ₲4.000.000", "₲13.000.000"],
        ),
        ("facturas_pendientes", {}, ["2 facturas pendientes", "₲3.500.000", "F-001", "₲1.500.000", "F-002"]),
        ("buscar_cliente", {"texto": "sur"}, ["Comercial Sur", "80000001-1", "Encarnación"]),
    ],
)
def test_every_operation_result_is_written_with_each_item_and_total(
    funcion: str, params: dict[str, Any], expected: list[str]
) -> None:
    text = answer("pregunta", [outcome(funcion, **params)]).text
    for fragment in expected:
        assert fragment in text


def test_errors_are_explained_and_successes_still_reported() -> None:
    results = [
        outcome("ventas_anuales", anio=2025),
        failed("compras_cliente", "No customer matches 'Nadie'.", cliente="Nadie"),
    ]
    result = answer("¿Cuánto vendimos y cuánto compró Nadie?", results)
    assert "₲850.000.000" in result.text
    assert "No pude consultar las compras del cliente" in result.text
    data = answer_with('{"respuesta": "...", "estado": {"ultima_operacion": "..."}}', "¿Cuánto?", results)
    assert data["estado"] == {"ultima_operacion": "ventas_anuales"}  # the failed operation says nothing


def test_no_results_gives_the_small_talk_reply_and_changes_no_state() -> None:
    result = answer("¡Gracias!", [], state={"tema": "ventas", "anio": 2025})
    assert result.text.startswith("¡De nada!")
    assert result.state == {}  # the store keeps the state as it is
    assert result.memories == []
