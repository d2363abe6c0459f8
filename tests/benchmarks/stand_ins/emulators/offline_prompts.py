"""Prompts for the offline-backed emulator tests: a plan request, an answer request, the sales tools."""

from __future__ import annotations

import json
from typing import Any

from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage
from pydantic import BaseModel

from tests.benchmarks.stand_ins.emulators.emulator_fakes import mejor_cliente, ventas_anuales

QUESTION = "¿Cuánto vendimos en 2025 y cuál fue nuestro mejor cliente?"
CATALOG = (
    "Operaciones disponibles: ventas_anuales(anio), mejor_cliente(anio), compras_cliente(cliente, anio), "
    "facturas_pendientes(cliente)."
)
PLAN_SYSTEM = (
    'Devuelve el plan JSON {"operaciones": [{"id": "op1", "funcion": "nombre_de_operacion", '
    '"parametros": {"parametro": "valor"}}]}; referencias con {"$ref": "op1.campo"}.\n' + CATALOG
)
ANSWER_SYSTEM = (
    'Redacta {"respuesta": "...", "memoria": [{"contenido": "...", "importancia": 0.8}], "estado": {}}.'
)
RESULTS = [
    {
        "funcion": "ventas_anuales",
        "parametros": {"anio": 2025},
        "resultado": {"anio": 2025, "total": 850000000},
    }
]


class PlannedOperation(BaseModel):
    """One operation of a plan."""

    id: str | None = None
    funcion: str
    parametros: dict[str, Any]


class Plan(BaseModel):
    """The plan JSON."""

    operaciones: list[PlannedOperation]


def plan_messages() -> list[BaseMessage]:
    """Planner call 1 for :data:`QUESTION`."""
    return [
        SystemMessage(PLAN_SYSTEM),
        HumanMessage(f"Fecha de hoy: 2026-11-30\nNueva pregunta:\n{QUESTION}"),
    ]


def answer_messages() -> list[BaseMessage]:
    """Planner call 2 with one result."""
    body = (
        f"Pregunta: ¿Cuánto vendimos en 2025?\nFecha de hoy: 2026-11-30\nResultados:\n{json.dumps(RESULTS)}"
    )
    return [SystemMessage(ANSWER_SYSTEM), HumanMessage(body)]


TOOLS = [ventas_anuales, mejor_cliente]
