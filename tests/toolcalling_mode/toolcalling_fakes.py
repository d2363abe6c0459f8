"""Fakes for tool-calling tests: tool-call builders for :mod:`tests.fakes`'s model, and a toy registry.

Tests drive the shared :class:`~tests.fakes.FunctionChatModel` (or :class:`~tests.fakes.StreamingChatModel`)
with a function ``(messages, info)``, where ``info`` says which tools were bound and which tool results this
turn has so far; :func:`call` and :func:`ask_tools` build the assistant steps that request tools. Every call
is recorded in ``model.calls``.
"""

from __future__ import annotations

import itertools
import json
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage
from sqlalchemy.orm import Session

from shared.errors import CustomerNotFoundError
from shared.operations.registry import OperationRegistry
from tests.fakes import (
    BestCustomer,
    CallInfo,
    CustomerParams,
    CustomerTotal,
    ModelFunction,
    YearParams,
    YearTotal,
    toy_operations,
)

_ids = itertools.count(1)


def call(name: str, **args: Any) -> dict[str, Any]:
    """A tool call with a fresh id."""
    return {"name": name, "args": args, "id": f"call_{next(_ids)}", "type": "tool_call"}


def ask_tools(*calls: dict[str, Any], text: str = "") -> AIMessage:
    """An assistant step that requests ``calls`` (in parallel)."""
    return AIMessage(content=text, tool_calls=list(calls))


def then_answer(first: AIMessage | str, answer: str = "Listo.") -> ModelFunction:
    """A model that replies ``first`` (a tool call, say), then ``answer`` once it has tool results."""
    return lambda messages, info: answer if info.tool_results else first


def two_parallel_tools(messages: list[BaseMessage], info: CallInfo) -> AIMessage | str:
    """Sales and the best customer at once (fixed call ids: runs compare equal), then an answer."""
    if not info.tool_results:
        return ask_tools(
            {"name": "ventas_anuales", "args": {"anio": 2025}, "id": "sales", "type": "tool_call"},
            {"name": "mejor_cliente", "args": {"anio": 2025}, "id": "best", "type": "tool_call"},
        )
    results = [json.loads(str(m.content)) for m in info.tool_results]
    return f"En 2025 vendimos {results[0]['total']} y el mejor cliente fue {results[1]['cliente']}."


# -- the toy registry's handlers, over fixed numbers ------------------------------------------------------

CUSTOMERS = {"acme": "ACME S.A.", "norte": "Distribuidora Norte"}
YEAR_TOTALS = {2024: 700_000_000, 2025: 850_000_000}


def _ventas_anuales(_session: Session, params: YearParams) -> YearTotal:
    return YearTotal(anio=params.anio, total=YEAR_TOTALS.get(params.anio, 0))


def _mejor_cliente(_session: Session, params: YearParams) -> BestCustomer:
    return BestCustomer(anio=params.anio, cliente="ACME S.A.", total=120_000_000)


def _compras_cliente(_session: Session, params: CustomerParams) -> CustomerTotal:
    name = CUSTOMERS.get(params.cliente.split()[0].lower())
    if name is None:
        raise CustomerNotFoundError("compras_cliente", params.cliente, sorted(CUSTOMERS.values()))
    return CustomerTotal(cliente=name, anio=params.anio, total=120_000_000)


def toy_registry() -> OperationRegistry:
    """``ventas_anuales``, ``mejor_cliente`` and ``compras_cliente`` over fixed numbers."""
    return OperationRegistry(toy_operations(_ventas_anuales, _mejor_cliente, _compras_cliente))
