"""The structured final answer (the article's call 2): shared because both modes can produce it.

Validation is strict about what matters (a ``respuesta`` string, memory items with content) and forgiving
about what models commonly get slightly wrong: ``null`` for an empty ``memoria`` or ``estado``, and an
``importancia`` a little outside 0–1 (clamped). A good answer is not thrown away for those.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator


class MemoryItem(BaseModel):
    """A fact the model suggests the ERP should remember."""

    model_config = ConfigDict(extra="ignore")

    contenido: str = Field(description="Hecho a recordar, en una frase.")
    importancia: float = Field(ge=0.0, le=1.0, description="Importancia entre 0 y 1.")

    @field_validator("importancia", mode="before")
    @classmethod
    def _clamp(cls, value: Any) -> Any:
        if isinstance(value, int | float) and not isinstance(value, bool):
            return min(1.0, max(0.0, float(value)))
        return value  # anything else (e.g. "alta") still fails validation


class Answer(BaseModel):
    """`{"respuesta": …, "memoria": [...], "estado": {...}}` as in the article, section 9."""

    model_config = ConfigDict(extra="ignore")

    respuesta: str = Field(description="Respuesta para el usuario, en español.")
    memoria: list[MemoryItem] = Field(default_factory=list, description="Memoria sugerida.")
    estado: dict[str, Any] = Field(
        default_factory=dict,
        description="Estado estructurado de la conversación: tema, anio, cliente_actual, etc.",
    )

    @field_validator("memoria", "estado", mode="before")
    @classmethod
    def _null_is_empty(cls, value: Any, info: ValidationInfo) -> Any:
        if value is None:
            return [] if info.field_name == "memoria" else {}
        return value
