"""Fakes for the planner tests: a plain-text model on :mod:`tests.fakes`, scripted replies, a toy registry.

:func:`text_model` is the shared :class:`~tests.fakes.FunctionChatModel` as the planner tests use it: it has
no native structured output, so ``PlannerAI`` takes its plain-text path (tolerant parsing), and every call
reports 100 input and 10 output tokens so usage totals are easy to assert. The offline model covers native
structured output.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from datetime import date
from typing import Any

from langchain_core.messages import BaseMessage, UsageMetadata
from sqlalchemy.orm import Session

from planner_mode.ai import PlannerAI
from planner_mode.client import last_item
from planner_mode.plan import Answer, Plan
from shared.errors import DomainError
from shared.memory.context import ConversationContext
from shared.operations.registry import OperationRegistry
from shared.turn_steps import run_until_complete
from tests.fakes import (
    BestCustomer,
    CallInfo,
    CustomerParams,
    CustomerTotal,
    FunctionChatModel,
    ModelFunction,
    YearParams,
    YearTotal,
    toy_operations,
)

CALL_USAGE = UsageMetadata(input_tokens=100, output_tokens=10, total_tokens=110)
"""What every call of a :func:`text_model` reports."""
CONTEXT = ConversationContext(hoy=date(2026, 11, 30))
"""An empty conversation's context, on the demo's date."""


def text_model(reply: ModelFunction) -> FunctionChatModel:
    """A model that answers ``reply(messages, info)`` as text only and reports :data:`CALL_USAGE` per call."""
    return FunctionChatModel(reply, usage=CALL_USAGE, native_structured_output=False)


def is_plan_request(messages: list[BaseMessage]) -> bool:
    """True for call 1: the last message asks a question (call 2's last message holds the results)."""
    return not str(messages[-1].content).startswith("Resultados:")


def results_of(messages: list[BaseMessage]) -> list[dict[str, Any]]:
    """The ``Resultados:`` JSON array of a call-2 prompt."""
    human = str(messages[-1].content)
    results, _end = json.JSONDecoder().raw_decode(human.removeprefix("Resultados:\n"))
    return list(results)


def scripted(
    plan: dict[str, Any] | str, answer: Callable[[list[dict[str, Any]]], str] | None = None
) -> ModelFunction:
    """A model function: ``plan`` for call 1, ``answer(results)`` (default: a JSON echo) for call 2."""

    def reply(messages: list[BaseMessage], _info: CallInfo) -> str:
        if is_plan_request(messages):
            return plan if isinstance(plan, str) else json.dumps(plan)
        results = results_of(messages)
        if answer is not None:
            return answer(results)
        return json.dumps(
            {
                "respuesta": "Resultados: " + json.dumps(results, ensure_ascii=False),
                "memoria": [{"contenido": "Se consultaron datos de prueba.", "importancia": 0.5}],
                "estado": {"tema": "pruebas"},
            }
        )

    return reply


# -- a toy registry ---------------------------------------------------------------------------------------


class Toy:
    """Handlers of the toy registry; a ``barrier`` makes ``ventas`` and ``mejor`` wait for each other."""

    def __init__(self) -> None:
        self.barrier: threading.Barrier | None = None
        self.log: list[str] = []
        self._lock = threading.Lock()

    def _note(self, entry: str) -> None:
        with self._lock:
            self.log.append(entry)
        if self.barrier is not None:
            self.barrier.wait()

    def ventas(self, _session: Session, params: YearParams) -> YearTotal:
        self._note(f"ventas {params.anio}")
        return YearTotal(anio=params.anio, total=850_000_000)

    def mejor(self, _session: Session, params: YearParams) -> BestCustomer:
        self._note(f"mejor {params.anio}")
        return BestCustomer(anio=params.anio, cliente="Empresa ABC", total=120_000_000)

    def compras(self, _session: Session, params: CustomerParams) -> CustomerTotal:
        with self._lock:
            self.log.append(f"compras {params.cliente} {params.anio}")
        if params.cliente != "Empresa ABC":
            raise DomainError("compras_cliente", f"No customer matches {params.cliente!r}.")
        return CustomerTotal(cliente=params.cliente, anio=params.anio, total=120_000_000)

    def registry(self) -> OperationRegistry:
        """``ventas_anuales``, ``mejor_cliente`` and ``compras_cliente`` backed by these handlers."""
        return OperationRegistry(toy_operations(self.ventas, self.mejor, self.compras))


def replace_handler(
    registry: OperationRegistry, name: str, handler: Callable[..., Any]
) -> Callable[..., Any]:
    """Make ``handler`` run ``name`` in ``registry`` (patched: operations are frozen); return the old one."""
    operation = registry.get(name)
    original = operation.handler
    operation.__dict__["handler"] = handler
    return original


def op(funcion: str, id: str | None = None, **parametros: Any) -> dict[str, Any]:
    """One planned operation as call 1 writes it; ``ref("a.cliente")`` for a value from operation ``a``."""
    return {**({"id": id} if id is not None else {}), "funcion": funcion, "parametros": parametros}


def ref(path: str) -> dict[str, str]:
    return {"$ref": path}


def plan(*operations: dict[str, Any]) -> dict[str, Any]:
    """Call 1's plan of ``operations`` (built with :func:`op`), as JSON data."""
    return {"operaciones": list(operations)}


# -- the two calls run to their result --------------------------------------------------------------------


def plan_of(ai: PlannerAI, question: str, context: ConversationContext, catalog: Any, **options: Any) -> Plan:
    """Call 1 of ``ai`` run to completion: its :class:`Plan` (the streamed text dropped)."""
    return run_until_complete(last_item(ai.plan(question, context, catalog, **options)))


def answer_of(
    ai: PlannerAI,
    question: str,
    results: Any,
    context: ConversationContext,
    catalog: Any = (),
    **options: Any,
) -> Answer:
    """Call 2 of ``ai`` run to completion: its :class:`Answer` (the streamed text dropped); ``catalog`` is
    call 1's (none by default)."""
    return run_until_complete(last_item(ai.answer(question, results, context, catalog, **options)))
