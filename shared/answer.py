"""The structured final answer (the article's call 2): shared because both modes can produce it.

Validation is strict about what matters (a ``respuesta`` string, memory items with content) and forgiving
about what models commonly get slightly wrong: ``null`` for an empty ``memoria`` or ``estado``, and an
``importancia`` a little outside 0–1 (clamped). A good answer is not thrown away for those.

What an answer asks the ERP to store is bounded the same forgiving way (sanitised, never refused), so a model
that repeats one memory item until its output cap cannot leave a wall of text in the conversation:
``memoria`` loses its repeats (same content after folding case, accents and whitespace; the higher importance
wins), keeps its :data:`~shared.bounds.MAX_MEMORY_ITEMS_PER_TURN` most important items, each one line of at
most :data:`~shared.bounds.MAX_MEMORY_CHARS` characters; ``estado`` keeps at most
:data:`~shared.bounds.MAX_STATE_KEYS` keys with each value clipped (:func:`~shared.bounds.clip_state`). The
JSON schema sent to providers is unchanged. The memory store applies the same bounds again on write.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator

from shared.bounds import MAX_MEMORY_CHARS, MAX_MEMORY_ITEMS_PER_TURN, clip_line, clip_state
from shared.text import fold


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

    @field_validator("memoria")
    @classmethod
    def _bound_memory(cls, value: list[MemoryItem]) -> list[MemoryItem]:
        return bound_memories(value)

    @field_validator("estado")
    @classmethod
    def _bound_state(cls, value: dict[str, Any]) -> dict[str, Any]:
        return clip_state(value)


def bound_memories(
    items: Iterable[MemoryItem],
    *,
    max_items: int = MAX_MEMORY_ITEMS_PER_TURN,
    max_chars: int = MAX_MEMORY_CHARS,
) -> list[MemoryItem]:
    """Memory items fit to store: each content one line of at most ``max_chars`` characters (visibly clipped),
    empty ones dropped, repeats merged (same content after folding case, accents and whitespace; the first
    wording and the higher importance win), and at most ``max_items`` kept: the most important, in their
    original order (ties: the earlier one).
    """
    merged: dict[str, MemoryItem] = {}
    for item in items:
        content = clip_line(item.contenido, max_chars)
        if not content:
            continue
        key = fold(content)
        kept = merged.get(key)
        importance = max(item.importancia, kept.importancia) if kept is not None else item.importancia
        merged[key] = MemoryItem(contenido=kept.contenido if kept else content, importancia=importance)
    ranked = sorted(enumerate(merged.values()), key=lambda pair: (-pair[1].importancia, pair[0]))
    return [item for _, item in sorted(ranked[:max_items], key=lambda pair: pair[0])]
