"""The structured final answer (the article's call 2): shared because both modes can produce it."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field


class MemoryItem(BaseModel):
    """A fact the model suggests the ERP should remember."""

    model_config = ConfigDict(extra="ignore")

    contenido: str = Field(description="Hecho a recordar, en una frase.")
    importancia: float = Field(ge=0.0, le=1.0, description="Importancia entre 0 y 1.")


class Answer(BaseModel):
    """`{"respuesta": …, "memoria": [...], "estado": {...}}` as in the article, section 9."""

    model_config = ConfigDict(extra="ignore")

    respuesta: str = Field(description="Respuesta para el usuario, en español.")
    memoria: list[MemoryItem] = Field(default_factory=list, description="Memoria sugerida.")
    estado: dict[str, Any] = Field(
        default_factory=dict,
        description="Estado estructurado de la conversación: tema, anio, cliente_actual, etc.",
    )
