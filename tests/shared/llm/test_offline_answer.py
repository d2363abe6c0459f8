"""The offline model as the planner's call 2: ``respuesta``, ``memoria`` and ``estado`` from the results."""

from __future__ import annotations

import json
from typing import Any

import pytest

from shared.answer import Answer
from shared.llm.offline import OfflineSalesModel
from tests.shared.llm.offline_prompts import RESULTS, answer_messages

ARTICLE_QUESTION = "¿Cuánto vendimos en 2025 y cuál fue nuestro mejor cliente?"


def outcome(funcion: str, **params: Any) -> dict[str, Any]:
    return {"funcion": funcion, "parametros": params, "resultado": RESULTS[funcion]}


def answer(question: str, results: list[dict[str, Any]], **ctx: Any) -> Answer:
    reply = OfflineSalesModel().invoke(answer_messages(question, results, **ctx))
    return Answer.model_validate_json(str(reply.content))


def test_article_answer_has_the_figures_formatted_in_guaranies_and_the_state() -> None:
    result = answer(
        ARTICLE_QUESTION, [outcome("ventas_anuales", anio=2025), outcome("mejor_cliente", anio=2025)]
    )
    assert result.respuesta == (
        "En 2025 las ventas fueron de ₲850.000.000 (120 facturas). "
        "El mejor cliente de 2025 fue Empresa ABC, con compras por ₲120.000.000."
    )
    assert result.estado["tema"] == "ventas"
    assert result.estado["anio"] == 2025
    assert result.estado["cliente_actual"] == "Empresa ABC"
    assert result.estado["ultimas_operaciones"] == [
        {"funcion": "ventas_anuales", "parametros": {"anio": 2025}},
        {"funcion": "mejor_cliente", "parametros": {"anio": 2025}},
    ]
    assert result.memoria[0].contenido == "El mejor cliente de 2025 fue Empresa ABC."
    assert all(0 <= item.importancia <= 1 for item in result.memoria)
    assert len(result.memoria) <= 3


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
    text = answer("pregunta", [outcome(funcion, **params)]).respuesta
    for fragment in expected:
        assert fragment in text


def test_errors_are_explained_and_successes_still_reported() -> None:
    failed = {
        "funcion": "compras_cliente",
        "parametros": {"cliente": "Nadie"},
        "error": "No customer matches 'Nadie'.",
    }
    result = answer("¿Cuánto vendimos y cuánto compró Nadie?", [outcome("ventas_anuales", anio=2025), failed])
    assert "₲850.000.000" in result.respuesta
    assert "No pude consultar las compras del cliente" in result.respuesta
    assert result.estado["ultima_operacion"] == "ventas_anuales"


def test_no_results_gives_the_small_talk_reply_and_keeps_state() -> None:
    result = answer("¡Gracias!", [], state={"tema": "ventas", "anio": 2025})
    assert result.respuesta.startswith("¡De nada!")
    assert result.estado == {"tema": "ventas", "anio": 2025}
    assert result.memoria == []


def test_answer_request_is_recognised_without_structured_output() -> None:
    reply = OfflineSalesModel().invoke(
        answer_messages("¿Cuánto vendimos?", [outcome("ventas_anuales", anio=2025)])
    )
    assert set(json.loads(str(reply.content))) == {"respuesta", "memoria", "estado"}
