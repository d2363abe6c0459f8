"""The planner's wire format: the call-1 plan and the operation outcomes that call 2 reads.

The keys are the article's, verbatim (``operaciones``, ``funcion``, ``parametros``, ``pregunta``), plus two
optional extensions: an ``id`` per operation so that later operations can reference its result with
``{"$ref": "op1.cliente"}``, and ``respuesta_directa`` for small talk that needs no operation.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from shared.answer import Answer, MemoryItem

__all__ = ["Answer", "MemoryItem", "OperationOutcome", "Plan", "PlannedOperation"]


class PlannedOperation(BaseModel):
    """One operation of a plan: which ERP function to run and with which parameters."""

    model_config = ConfigDict(extra="ignore")

    id: str | None = Field(
        default=None,
        description='Identificador opcional ("op1") para que otra operación use su resultado con $ref.',
    )
    funcion: str = Field(description="Nombre exacto de una operación del catálogo.")
    parametros: dict[str, Any] = Field(
        default_factory=dict,
        description='Parámetros de la operación. Un valor puede ser {"$ref": "op1.campo"}.',
    )

    @field_validator("parametros", mode="before")
    @classmethod
    def _null_means_no_parameters(cls, value: Any) -> Any:
        return {} if value is None else value


class Plan(BaseModel):
    """The article's call-1 output: an execution plan, never an answer for the user."""

    model_config = ConfigDict(extra="ignore")

    operaciones: list[PlannedOperation] = Field(
        default_factory=list, description="Operaciones a ejecutar, en orden."
    )
    pregunta: str = Field(default="", description="La pregunta del usuario.")
    respuesta_directa: str | None = Field(
        default=None,
        description="Respuesta breve cuando no hace falta ninguna operación (saludos, agradecimientos).",
    )

    @field_validator("operaciones", mode="before")
    @classmethod
    def _null_means_no_operations(cls, value: Any) -> Any:
        return [] if value is None else value

    @property
    def is_direct(self) -> bool:
        """True when the plan answers directly: no operations and a non-empty ``respuesta_directa``."""
        return not self.operaciones and bool(self.respuesta_directa and self.respuesta_directa.strip())


class OperationOutcome(BaseModel):
    """What call 2 reads about one planned operation: its result, or why it failed or was not run."""

    funcion: str
    parametros: dict[str, Any] = Field(default_factory=dict)
    resultado: Any = None
    error: str | None = None

    def for_prompt(self) -> dict[str, Any]:
        """``{"funcion", "parametros", "resultado"}`` or ``{"funcion", "parametros", "error"}``."""
        data: dict[str, Any] = {"funcion": self.funcion, "parametros": self.parametros}
        if self.error is not None:
            data["error"] = self.error
        else:
            data["resultado"] = self.resultado
        return data
