"""Readable fakes for tool-calling tests: a chat model driven by a plain function, and a toy registry.

``FunctionChatModel`` follows pydantic-ai's ``FunctionModel``: each model call runs ``fn(messages, info)``,
where ``info`` says which tools were bound, and what it returns (an ``AIMessage`` or text) is the model's
reply. Every call is recorded in ``model.calls`` so tests can assert what the model saw.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel, LanguageModelInput
from langchain_core.messages import AIMessage, BaseMessage, SystemMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.runnables import Runnable
from langchain_core.utils.function_calling import convert_to_openai_tool
from pydantic import BaseModel, Field
from sqlalchemy.orm import Session

from shared.errors import CustomerNotFoundError
from shared.operations.registry import Operation, OperationRegistry


@dataclass
class CallInfo:
    """What one model call received besides the messages."""

    index: int
    """0 for the first call of the model's life, then 1, 2, …"""
    messages: list[BaseMessage]
    tools: list[dict[str, Any]] = field(default_factory=list)
    """Bound tools in OpenAI format."""
    tool_choice: Any = None
    response_format: Any = None

    @property
    def tool_names(self) -> list[str]:
        return [tool["function"]["name"] for tool in self.tools]

    @property
    def system(self) -> str:
        first = self.messages[0] if self.messages else None
        return str(first.content) if isinstance(first, SystemMessage) else ""

    @property
    def tool_results(self) -> list[ToolMessage]:
        """Tool results since the last human message (this turn's results so far)."""
        results: list[ToolMessage] = []
        for message in reversed(self.messages):
            if message.type == "human":
                break
            if isinstance(message, ToolMessage):
                results.insert(0, message)
        return results


Behaviour = Callable[[list[BaseMessage], CallInfo], AIMessage | str]


class FunctionChatModel(BaseChatModel):
    """A chat model whose every reply is computed by ``fn``."""

    fn: Behaviour
    calls: list[CallInfo] = Field(default_factory=list)

    @property
    def _llm_type(self) -> str:
        return "function"

    def bind_tools(
        self,
        tools: Sequence[Any],
        *,
        tool_choice: Any = None,
        **kwargs: Any,
    ) -> Runnable[LanguageModelInput, AIMessage]:
        formatted = [convert_to_openai_tool(tool) for tool in tools]
        return self.bind(tools=formatted, tool_choice=tool_choice, **kwargs)

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        info = CallInfo(
            index=len(self.calls),
            messages=list(messages),
            tools=list(kwargs.get("tools") or []),
            tool_choice=kwargs.get("tool_choice"),
            response_format=kwargs.get("response_format"),
        )
        self.calls.append(info)
        reply = self.fn(list(messages), info)
        message = reply if isinstance(reply, AIMessage) else AIMessage(content=reply)
        input_tokens = sum(len(str(m.content)) for m in messages) // 4 + 1
        output_tokens = len(str(message.content)) // 4 + 1
        message.usage_metadata = {
            "input_tokens": input_tokens,
            "output_tokens": output_tokens,
            "total_tokens": input_tokens + output_tokens,
        }
        return ChatResult(generations=[ChatGeneration(message=message)])


_ids = itertools.count(1)


def call(name: str, **args: Any) -> dict[str, Any]:
    """A tool call with a fresh id."""
    return {"name": name, "args": args, "id": f"call_{next(_ids)}", "type": "tool_call"}


def ask_tools(*calls: dict[str, Any], text: str = "") -> AIMessage:
    """An assistant step that requests ``calls`` (in parallel)."""
    return AIMessage(content=text, tool_calls=list(calls))


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
