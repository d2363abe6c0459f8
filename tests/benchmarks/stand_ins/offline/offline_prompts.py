"""Prompt builders, canned results and stand-in tools for the tests of the offline model and the emulators.

They follow docs/design.md "What the offline model reads" without importing planner_mode or toolcalling_mode,
so these tests pin the model's side of the contract on their own.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from typing import Any

import pytest
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.tools import StructuredTool
from pydantic import BaseModel

from benchmarks.stand_ins.offline import OfflineSalesModel

QUESTION = "¿Cuánto vendimos en 2025 y cuál fue nuestro mejor cliente?"
"""The article's first question."""
CATALOG = """Operaciones disponibles (catálogo):
- ventas_anuales(anio): total vendido en un año.
- mejor_cliente(anio): el cliente que más compró en un año.
- compras_cliente(cliente, anio): compras de un cliente en un año.
- ventas_mensuales(anio, mes): ventas por mes.
- top_productos(anio, limite): productos más vendidos.
- ventas_por_categoria(anio): ventas por categoría.
- facturas_pendientes(cliente): facturas sin pagar.
- buscar_cliente(texto): busca clientes por nombre."""

PLAN_SYSTEM = (
    'Eres el planificador. Devuelve {"operaciones": [{"id": "op1", "funcion": "...", "parametros": {}}], '
    '"pregunta": "..."}. Referencias con {"$ref": "op1.cliente"}. Sin operaciones: "respuesta_directa".\n'
    + CATALOG
)
ANSWER_SYSTEM = (
    'Redacta la respuesta. Devuelve {"respuesta": "...", '
    '"memoria": [{"contenido": "...", "importancia": 0.8}], '
    '"estado": {"tema": "ventas"}}.'
)

RESULTS: dict[str, dict[str, Any]] = {
    "ventas_anuales": {"anio": 2025, "total": 850000000, "facturas": 120},
    "mejor_cliente": {"anio": 2025, "cliente": "Empresa ABC", "total": 120000000},
    "compras_cliente": {"cliente": "Empresa ABC", "anio": 2025, "total": 120000000, "facturas": 14},
    "ventas_mensuales": {
        "anio": 2025,
        "mes": None,
        "total": 30000,
        "meses": [{"mes": 1, "total": 10000}, {"mes": 2, "total": 20000}],
    },
    "top_productos": {
        "anio": 2025,
        "productos": [
            {
                "sku": "A-1",
                "producto": "Yerba Premium",
                "categoria": "Alimentos",
                "unidades": 500,
                "total": 9000000,
            },
            {"sku": "B-2", "producto": "Termo Acero", "categoria": "Bazar", "unidades": 40, "total": 4000000},
        ],
    },
    "ventas_por_categoria": {
        "anio": 2025,
        "total": 13000000,
        "categorias": [
            {"categoria": "Alimentos", "total": 9000000},
            {"categoria": "Bazar", "total": 4000000},
        ],
    },
    "facturas_pendientes": {
        "cliente": None,
        "cantidad": 2,
        "total": 3500000,
        "facturas": [
            {"numero": "F-001", "cliente": "Empresa ABC", "fecha": "2026-10-01", "total": 1500000},
            {"numero": "F-002", "cliente": "Comercial Sur", "fecha": "2026-11-02", "total": 2000000},
        ],
    },
    "buscar_cliente": {
        "texto": "sur",
        "clientes": [{"nombre": "Comercial Sur", "ruc": "80000001-1", "ciudad": "Encarnación"}],
    },
}
"""Canned results in the shapes docs/design.md fixes (the offline model never sees the real ERP)."""


class PlannedOperation(BaseModel):
    id: str | None = None
    funcion: str
    parametros: dict[str, Any]


class Plan(BaseModel):
    """The article's plan JSON, for structured output."""

    operaciones: list[PlannedOperation]


def outcome(funcion: str, **params: Any) -> dict[str, Any]:
    """An executed operation with its canned result, as call 2's ``Resultados`` lists it."""
    return {"funcion": funcion, "parametros": params, "resultado": RESULTS[funcion]}


def failed(funcion: str, error: str, **params: Any) -> dict[str, Any]:
    """An operation the ERP refused or could not run, as call 2's ``Resultados`` lists it."""
    return {"funcion": funcion, "parametros": params, "error": error}


def context(
    today: str | None = "2026-11-30",
    state: dict[str, Any] | None = None,
    memory: list[str] | None = None,
    exchange: tuple[str, str] | None = None,
) -> str:
    """The rendered context, with the labels of shared.memory.context.render_context."""
    lines = [f"Fecha de hoy: {today}"] if today else []
    if state:
        lines.append("Estado de la conversación:")
        lines += [
            f"- {k}: {v if isinstance(v, str) else json.dumps(v, ensure_ascii=False)}"
            for k, v in state.items()
        ]
    if memory:
        lines.append("Memoria relevante:")
        lines += [f"- {item}" for item in memory]
    if exchange:
        lines += ["Último intercambio:", f"Usuario: {exchange[0]}", f"Asistente: {exchange[1]}"]
    return "\n".join(lines)


def plan_messages(question: str, **ctx: Any) -> list[BaseMessage]:
    """A planner call-1 prompt."""
    return [SystemMessage(PLAN_SYSTEM), HumanMessage(f"{context(**ctx)}\nNueva pregunta:\n{question}")]


def plan(question: str, **ctx: Any) -> dict[str, Any]:
    """The offline model's plan (call 1) for ``question`` in the context ``ctx`` (see :func:`context`)."""
    data: dict[str, Any] = json.loads(str(OfflineSalesModel().invoke(plan_messages(question, **ctx)).content))
    return data


def operations(question: str, **ctx: Any) -> list[tuple[str, dict[str, Any]]]:
    """The ``(funcion, parametros)`` of the plan's operations."""
    return [(op["funcion"], op["parametros"]) for op in plan(question, **ctx)["operaciones"]]


def tool_turn(question: str, **ctx: Any) -> list[BaseMessage]:
    """A tool-calling prompt: the assistant's instructions with the context, then the question."""
    return [
        SystemMessage(f"Eres el asistente de ventas de un ERP.\n{context(**ctx)}"),
        HumanMessage(question),
    ]


def after_tool_call(
    question: str, name: str, args: dict[str, Any], result: str, *, error: bool = False
) -> list[BaseMessage]:
    """A tool-calling prompt once the model called ``name`` and the tool answered ``result``."""
    call = {"name": name, "args": args, "id": "c1", "type": "tool_call"}
    status = "error" if error else "success"
    return [
        *tool_turn(question),
        AIMessage("", tool_calls=[call]),
        ToolMessage(result, tool_call_id="c1", status=status),
    ]


def answer_messages(question: str, results: list[dict[str, Any]], **ctx: Any) -> list[BaseMessage]:
    """A planner call-2 prompt."""
    body = f"Pregunta: {question}\n{context(**ctx)}\nResultados:\n{json.dumps(results, ensure_ascii=False)}"
    return [SystemMessage(ANSWER_SYSTEM), HumanMessage(body)]


PLAN_PROMPT = plan_messages(QUESTION)
"""Planner call 1 for the article's question."""
ANSWER_PROMPT = answer_messages("¿Cuánto vendimos?", [outcome("ventas_anuales", anio=2025)])
"""Planner call 2 with the year's sales."""


def _tool(name: str, func: Callable[..., str], description: str) -> StructuredTool:
    return StructuredTool.from_function(func=func, name=name, description=description)


def sales_tools() -> list[StructuredTool]:
    """Stand-ins for the registry's tools: same names and parameters, canned JSON results."""

    def result(name: str, **params: Any) -> str:
        data = dict(RESULTS[name])
        if "anio" in params and "anio" in data:
            data["anio"] = params["anio"]
        return json.dumps(data, ensure_ascii=False)

    def ventas_anuales(anio: int) -> str:
        """Total vendido en un año."""
        return result("ventas_anuales", anio=anio)

    def mejor_cliente(anio: int) -> str:
        """El cliente que más compró en un año."""
        return result("mejor_cliente", anio=anio)

    def compras_cliente(cliente: str, anio: int) -> str:
        """Compras de un cliente en un año."""
        return result("compras_cliente", anio=anio)

    def top_productos(anio: int, limite: int = 5) -> str:
        """Productos más vendidos."""
        return result("top_productos", anio=anio)

    def facturas_pendientes(cliente: str | None = None) -> str:
        """Facturas sin pagar."""
        return result("facturas_pendientes")

    funcs = [ventas_anuales, mejor_cliente, compras_cliente, top_productos, facturas_pendientes]
    return [_tool(f.__name__, f, f.__doc__ or "") for f in funcs]


def run_turn(
    model: Any, messages: list[BaseMessage], tools: list[StructuredTool], limit: int = 6
) -> list[AIMessage]:
    """A minimal agent loop: call the model, run its tool calls, until it stops calling tools."""
    by_name = {t.name: t for t in tools}
    replies: list[AIMessage] = []
    for _ in range(limit):
        reply = model.invoke(messages)
        replies.append(reply)
        messages.append(reply)
        data_calls = [c for c in reply.tool_calls if c["name"] in by_name]
        if not data_calls:
            return replies
        messages.extend(by_name[c["name"]].invoke(c) for c in data_calls)
    raise AssertionError("the model never stopped calling tools")


def merged(chunks: Iterable[Any]) -> Any:
    """The chunks of a stream added up into one message."""
    total = None
    for chunk in chunks:
        total = chunk if total is None else total + chunk
    return total


def invoked_and_streamed(model: Any, messages: list[BaseMessage]) -> list[Any]:
    """``model``'s reply to ``messages``, invoked and then streamed (its chunks added up)."""
    return [model.invoke(messages), merged(model.stream(messages))]


# -- expected operations ---------------------------------------------------------------------------------

Operation = tuple[str, dict[str, Any]]
"""``(funcion, parametros)``."""


def state_after(*previous: Operation, **extra: Any) -> dict[str, Any]:
    """A conversation state as the ERP stores it after the given operations."""
    years = [p["anio"] for _, p in previous if "anio" in p]
    state: dict[str, Any] = {"tema": "ventas", **({"anio": years[-1]} if years else {}), **extra}
    state["ultimas_operaciones"] = [{"funcion": name, "parametros": params} for name, params in previous]
    return state


def case(question: str, *expected: Operation, id: str, **ctx: Any) -> Any:
    """A ``(question, ctx, expected)`` row: the question, in the context ``ctx``, plans ``expected``."""
    return pytest.param(question, ctx, list(expected), id=id)


def sales(year: int) -> Operation:
    return ("ventas_anuales", {"anio": year})


def pending(customer: str) -> Operation:
    return ("facturas_pendientes", {"cliente": customer})


def purchases(customer: str, year: int) -> Operation:
    return ("compras_cliente", {"anio": year, "cliente": customer})


def monthly(year: int, month: int) -> Operation:
    return ("ventas_mensuales", {"anio": year, "mes": month})


def top(**params: int) -> Operation:
    return ("top_productos", params)


def best(year: int) -> Operation:
    return ("mejor_cliente", {"anio": year})
