"""Fakes for tool-calling tests: tool-call builders for :mod:`tests.fakes`'s model, and a toy registry.

Tests drive the shared :class:`~tests.fakes.FunctionChatModel` with a function ``(messages, info)``, where
``info`` says which tools were bound and which tool results this turn has so far; :func:`call` and
:func:`ask_tools` build the assistant steps that request tools. Every call is recorded in ``model.calls``.
:class:`StreamingFunctionModel` is the same model streaming its replies word by word, and breaking midway
on request. :func:`run_turn` runs one turn through a named entry point (``ask``, ``aask`` or ``astream``).
"""

from __future__ import annotations

import itertools
import json
import re
from collections.abc import Iterator
from typing import Any

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage
from langchain_core.messages.tool import tool_call_chunk
from langchain_core.outputs import ChatGenerationChunk
from pydantic import BaseModel, Field
from sqlalchemy.orm import Session

from shared.errors import CustomerNotFoundError, ProviderError
from shared.events import TurnDone
from shared.operations.registry import Operation, OperationRegistry
from shared.security import DEMO_CALLER, Caller
from shared.turn import TurnResult
from tests.fakes import FunctionChatModel

_ids = itertools.count(1)


def call(name: str, **args: Any) -> dict[str, Any]:
    """A tool call with a fresh id."""
    return {"name": name, "args": args, "id": f"call_{next(_ids)}", "type": "tool_call"}


def ask_tools(*calls: dict[str, Any], text: str = "") -> AIMessage:
    """An assistant step that requests ``calls`` (in parallel)."""
    return AIMessage(content=text, tool_calls=list(calls))


async def run_turn(
    engine: Any, driver: str, conversation_id: str, question: str, caller: Caller = DEMO_CALLER, **kw: Any
) -> TurnResult:
    """One turn through ``engine.<driver>``; for ``astream``, the result of its last event (``TurnDone``)."""
    if driver == "ask":
        result: TurnResult = engine.ask(conversation_id, question, caller, **kw)
        return result
    if driver == "aask":
        return await engine.aask(conversation_id, question, caller, **kw)  # type: ignore[no-any-return]
    events = [event async for event in engine.astream(conversation_id, question, caller, **kw)]
    assert isinstance(events[-1], TurnDone)
    return events[-1].result


class StreamingFunctionModel(FunctionChatModel):
    """A :class:`FunctionChatModel` that streams: its reply's text word by word, then each tool call (name,
    id and arguments in one chunk), then an empty last chunk with the usage and the response metadata
    (finish reason), as OpenAI-compatible servers do.

    ``break_after=n`` drops the connection (``ProviderError``) after ``n`` text chunks of any reply whose text
    has more than ``n`` words: the stream fails midway through the answer.
    """

    break_after: int | None = None

    def _stream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> Iterator[ChatGenerationChunk]:
        reply = self._generate(messages, stop, **kwargs).generations[0].message
        assert isinstance(reply, AIMessage)
        for number, word in enumerate(re.findall(r"\S+\s*|\s+", reply.text)):
            if number == self.break_after:
                raise ProviderError("connection dropped mid-stream")
            yield ChatGenerationChunk(message=AIMessageChunk(content=word))
        chunks = [
            tool_call_chunk(name=c["name"], args=json.dumps(c["args"]), id=c["id"], index=i)
            for i, c in enumerate(reply.tool_calls)
        ]
        if chunks:
            yield ChatGenerationChunk(message=AIMessageChunk(content="", tool_call_chunks=chunks))
        yield ChatGenerationChunk(
            message=AIMessageChunk(
                content="",
                usage_metadata=reply.usage_metadata,
                response_metadata=reply.response_metadata,
                chunk_position="last",
            )
        )


# -- a toy registry: two operations whose results tests can predict --------------------------------------

CUSTOMERS = {"acme": "ACME S.A.", "norte": "Distribuidora Norte"}
YEAR_TOTALS = {2024: 700_000_000, 2025: 850_000_000}


class YearParams(BaseModel):
    anio: int = Field(description="Año de las ventas.")


class YearTotal(BaseModel):
    anio: int
    total: int


class BestCustomer(BaseModel):
    anio: int
    cliente: str
    total: int


class CustomerParams(BaseModel):
    cliente: str = Field(description="Nombre del cliente.")
    anio: int = Field(description="Año de las compras.")


class CustomerTotal(BaseModel):
    cliente: str
    anio: int
    total: int


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
    return OperationRegistry(
        [
            Operation("ventas_anuales", "Total vendido en un año.", YearParams, YearTotal, _ventas_anuales),
            Operation(
                "mejor_cliente", "Cliente que más compró en un año.", YearParams, BestCustomer, _mejor_cliente
            ),
            Operation(
                "compras_cliente",
                "Total comprado por un cliente en un año.",
                CustomerParams,
                CustomerTotal,
                _compras_cliente,
            ),
        ]
    )
