"""The planner's wire format: the call-1 plan and the operation outcomes that call 2 reads.

The keys are the article's (``operaciones``, ``funcion``, ``parametros``, ``pregunta``), plus an optional
``id`` per operation, so that later operations can use its result with ``{"$ref": "op1.cliente"}``, and
``respuesta_directa`` for small talk. The schema sent to providers omits ``pregunta`` (output tokens are the
slowest part of a call; the ERP fills it in), but plans that carry it are valid.
"""

from __future__ import annotations

from itertools import islice
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator, model_validator

from shared.answer import Answer, MemoryItem, ProviderSchemaModel
from shared.bounds import MAX_OPERATIONS_PER_TURN
from shared.result_text import for_model

__all__ = [
    "MAX_NESTING_DEPTH",
    "MAX_PLAN_OPERATIONS",
    "Answer",
    "MemoryItem",
    "OperationOutcome",
    "Plan",
    "PlannedOperation",
    "nesting_depth",
]

MAX_NESTING_DEPTH = 32
"""How deeply lists and objects may nest inside ``parametros`` (the object is level 1) or an answer's
``estado``: real values nest two or three levels, and the bound keeps the recursion in ``$ref`` search,
``json`` and pydantic's serialisation safe."""


def nesting_depth(value: Any) -> int:
    """How many lists and dicts nest in ``value`` (0 for a scalar), without recursion."""
    deepest = 0
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, level = stack.pop()
        if isinstance(item, dict):
            children: Any = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        deepest = max(deepest, level)
        stack.extend((child, level + 1) for child in children)
    return deepest


class PlannedOperation(ProviderSchemaModel):
    """One operation of a plan: which ERP function to run and with which parameters."""

    # Numbers become strings: a model that numbers its operations ("id": 1, "$ref": "1.x") is understood.
    model_config = ConfigDict(extra="ignore", coerce_numbers_to_str=True)
    schema_description: ClassVar[str] = "Una operación del catálogo."

    id: str | None = Field(default=None, description="Solo si otra operación usa su resultado con $ref.")
    function: str = Field(alias="funcion", description="Nombre exacto en el catálogo.")
    parameters: dict[str, Any] = Field(
        alias="parametros", default_factory=dict, description='Un valor puede ser {"$ref":"op1.campo"}.'
    )

    @field_validator("parameters", mode="before")
    @classmethod
    def _null_means_no_parameters(cls, value: Any) -> Any:
        return {} if value is None else value

    @field_validator("parameters")
    @classmethod
    def _bounded_nesting(cls, value: dict[str, Any]) -> dict[str, Any]:
        if nesting_depth(value) > MAX_NESTING_DEPTH:
            raise ValueError(f"parametros nest more than {MAX_NESTING_DEPTH} levels deep")
        return value


MAX_PLAN_OPERATIONS = MAX_OPERATIONS_PER_TURN
"""Most operations one plan may hold (the per-turn cap both modes share): validation refuses more, and the
call-1 schema says so (``maxItems``)
so that a grammar-constrained model cannot repeat operations until its output cap."""


class Plan(ProviderSchemaModel):
    """The article's call-1 output: an execution plan, never an answer for the user."""

    # A plan has ``operaciones`` (possibly empty or null) or a non-blank ``respuesta_directa``; anything else
    # (``{}``, ``{"respuesta": …}``) ignored the schema and is a ``model_output`` failure, not an empty plan.

    model_config = ConfigDict(extra="ignore")
    schema_description: ClassVar[str] = "Plan de ejecución para el ERP, no una respuesta."
    schema_omit: ClassVar[tuple[str, ...]] = ("pregunta",)

    # ``respuesta_directa`` first: a model writes in the schema's order, and a direct answer first can stream.
    direct_answer: str | None = Field(
        alias="respuesta_directa",
        default=None,
        description="Solo sin operaciones: respuesta breve (saludo, charla, imposible).",
    )
    operations: list[PlannedOperation] = Field(
        alias="operaciones", default_factory=list, description="En orden."
    )
    question: str = Field(
        alias="pregunta", default="", description="La pregunta del usuario (la completa el ERP)."
    )

    @model_validator(mode="before")
    @classmethod
    def _is_a_plan(cls, data: Any) -> Any:
        if not isinstance(data, dict) or "operaciones" in data or "operations" in data:
            return data
        direct = data.get("respuesta_directa", data.get("direct_answer"))
        if isinstance(direct, str) and direct.strip():
            return data
        keys = ", ".join(repr(str(key)[:40]) for key in islice(data, 10)) or "none"
        raise ValueError(
            "not a plan: it needs the key 'operaciones' (a list, possibly empty) or a non-empty "
            f"'respuesta_directa'; the reply's keys: {keys}"
        )

    @field_validator("operations", "question", mode="before")
    @classmethod
    def _null_means_empty(cls, value: Any, info: ValidationInfo) -> Any:
        if value is None:
            return [] if info.field_name == "operations" else ""
        return value

    @property
    def is_direct(self) -> bool:
        """True when the plan answers directly: no operations and a non-empty ``respuesta_directa``."""
        return not self.operations and bool(self.direct_answer and self.direct_answer.strip())


class OperationOutcome(BaseModel):
    """What call 2 reads about one planned operation: its result, or why it failed or was not run."""

    model_config = ConfigDict(
        validate_by_name=True, validate_by_alias=True, serialize_by_alias=True
    )  # Spanish aliases on the wire

    function: str = Field(alias="funcion")
    parameters: dict[str, Any] = Field(alias="parametros", default_factory=dict)
    result: Any = Field(alias="resultado", default=None)
    error: str | None = None

    def for_prompt(self) -> dict[str, Any]:
        """``{"funcion", "parametros", "resultado"}`` or ``{"funcion", "parametros", "error"}``; the result's
        large whole numbers written as the ERP shows them (:func:`shared.result_text.for_model`)."""
        data: dict[str, Any] = {"funcion": self.function, "parametros": self.parameters}
        if self.error is not None:
            data["error"] = self.error
        else:
            data["resultado"] = for_model(self.result)
        return data
