"""An answer is words for a person, not the machinery behind it (benchmarks/scoring/machinery.py)."""

from __future__ import annotations

import pytest

from benchmarks.scoring.machinery import PROMPT_LABELS, machinery_problems
from shared.operations.sales import sales_registry

OPERATIONS = [op.name for op in sales_registry()]


@pytest.mark.parametrize(
    ("answer", "problem"),
    [
        ('{"name": "ventas_anuales", "arguments": {"anio": 2025}}', "raw JSON"),
        ('```json\n{\n  "name": "mejor_cliente",\n  "arguments": {"anio": 2025}\n}\n```', "raw JSON"),
        ('Resultado:\n```\n{\n  "total": 744000000,\n  "facturas": 1489\n}\n```', "raw JSON"),
        ("ventas_mensuales(anio=2025, mes=3)", "writes out a call"),
        ('Facturas_pendientes(cliente="Empresa ABC", anio=2024)', "writes out a call"),
        ("Nueva pregunta:\n¿Cuál fue el cliente que más compró este año?", "echoes the prompt"),
        (
            "Ningún cliente coincide.\n\nNueva pregunta: ¿Cuánto compró?\nAsistente: Ningún cliente.",
            "echoes the prompt",
        ),
    ],
)
def test_json_calls_and_prompt_echoes_are_machinery(answer: str, problem: str) -> None:
    assert any(problem in found for found in machinery_problems(answer, OPERATIONS))


def test_the_prompts_labels_come_from_the_rendered_context() -> None:
    assert PROMPT_LABELS[0] == "Nueva pregunta:"
    assert {"Fecha de hoy:", "Último intercambio:", "Asistente:"} <= set(PROMPT_LABELS)


def test_an_english_error_message_is_machinery() -> None:
    problems = machinery_problems("Error: the customer was not found in the database.", OPERATIONS)
    assert problems == ["the answer is English text"]


@pytest.mark.parametrize(
    "answer",
    [
        "Empresa ABC",
        "744000000",
        "El mejor cliente de 2025 fue Empresa ABC, con ₲120.000.000.",
        "Clínica Santa Clara S.A. (RUC: 80031586-3) se encuentra en Fernando de la Mora.",
        "Puedo consultar las ventas anuales (ventas_anuales) y el mejor cliente.",
        "Aceite de soja 900 ml (caja x 12) (SKU: ALM-004): 203 unidades",
    ],
)
def test_plain_answers_show_no_machinery(answer: str) -> None:
    assert machinery_problems(answer, OPERATIONS) == []
