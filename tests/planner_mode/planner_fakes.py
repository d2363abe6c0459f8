"""Fakes for the planner tests: a chat model driven by a plain function, and a tiny toy registry.

``FunctionChatModel`` follows pydantic-ai's ``FunctionModel``: the test writes a function from the prompt
messages to the reply text, and the model counts its calls. It has no ``bind_tools``, so ``PlannerAI`` takes
its plain-text path (tolerant parsing); the offline model covers native structured output.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from typing import Any

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from pydantic import BaseModel, ConfigDict, Field
from sqlalchemy.orm import Session

from shared.errors import DomainError
from shared.operations.registry import Operation

Reply = Callable[[list[BaseMessage]], str]


class FunctionChatModel(BaseChatModel):
    """A chat model whose reply is ``reply(messages)``; counts calls and records every prompt."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    reply: Reply
    calls: int = 0
    prompts: list[list[BaseMessage]] = Field(default_factory=list)

    @property
    def _llm_type(self) -> str:
        return "function-fake"

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        self.calls += 1
        self.prompts.append(list(messages))
        text = self.reply(messages)
        message = AIMessage(
            content=text,
            usage_metadata={"input_tokens": 100, "output_tokens": 10, "total_tokens": 110},
        )
        return ChatResult(generations=[ChatGeneration(message=message)])


def is_plan_request(messages: list[BaseMessage]) -> bool:
    """True for call 1 (the planning prompt)."""
    return '"operaciones"' in str(messages[0].content) and '"respuesta"' not in str(messages[0].content)


def results_of(messages: list[BaseMessage]) -> list[dict[str, Any]]:
    """The ``Resultados:`` JSON array of a call-2 prompt."""
    human = str(messages[-1].content)
    return list(json.loads(human.split("Resultados:\n", 1)[1]))


def scripted(
    plan: dict[str, Any] | str, answer: Callable[[list[dict[str, Any]]], str] | None = None
) -> Reply:
    """A reply function: ``plan`` for call 1, ``answer(results)`` (default: a JSON echo) for call 2."""

    def reply(messages: list[BaseMessage]) -> str:
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


class YearParams(BaseModel):
    anio: int = Field(description="Año.")


class TotalResult(BaseModel):
    anio: int
    total: int


class BestResult(BaseModel):
    anio: int
    cliente: str
    total: int


class CustomerParams(BaseModel):
    cliente: str = Field(description="Nombre del cliente.")
    anio: int = Field(description="Año.")


class CustomerResult(BaseModel):
    cliente: str
    anio: int
    total: int


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

    def ventas(self, _session: Session, params: YearParams) -> TotalResult:
        self._note(f"ventas {params.anio}")
        return TotalResult(anio=params.anio, total=850_000_000)

    def mejor(self, _session: Session, params: YearParams) -> BestResult:
        self._note(f"mejor {params.anio}")
        return BestResult(anio=params.anio, cliente="Empresa ABC", total=120_000_000)

    def compras(self, _session: Session, params: CustomerParams) -> CustomerResult:
        with self._lock:
            self.log.append(f"compras {params.cliente} {params.anio}")
        if params.cliente != "Empresa ABC":
            raise DomainError("compras_cliente", f"No customer matches {params.cliente!r}.")
        return CustomerResult(cliente=params.cliente, anio=params.anio, total=120_000_000)


def toy_operations(toy: Toy) -> list[Operation[Any, Any]]:
    """``ventas_anuales``, ``mejor_cliente`` and ``compras_cliente`` backed by ``toy``."""
    return [
        Operation("ventas_anuales", "Total de ventas de un año.", YearParams, TotalResult, toy.ventas),
        Operation("mejor_cliente", "Cliente que más compró en un año.", YearParams, BestResult, toy.mejor),
        Operation(
            "compras_cliente",
            "Total comprado por un cliente en un año.",
            CustomerParams,
            CustomerResult,
            toy.compras,
        ),
    ]
