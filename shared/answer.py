"""The structured final answer (the article's call 2), shared by both modes.

Strict about what matters (a ``respuesta`` string, memory items with content), forgiving about what models
commonly get slightly wrong (``null`` for ``memoria``/``estado``, ``importancia`` clamped to 0–1). What an
answer asks to store is sanitised, never refused, within :mod:`shared.bounds`. :class:`ProviderSchemaModel`
keeps the JSON schema a provider is shown (and pays for on every call) short: a Spanish
``schema_description``, no titles, optional ``X | None`` written as ``X``, bounds as schema keywords only.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field, GetJsonSchemaHandler, ValidationInfo, field_validator
from pydantic.json_schema import JsonSchemaValue
from pydantic_core import CoreSchema

from shared.bounds import MAX_MEMORY_CHARS, MAX_MEMORY_ITEMS_PER_TURN, clip_line, clip_state
from shared.text import fold


class ProviderSchemaModel(BaseModel):
    """A model whose JSON schema is sent to model providers: compact, and described for the model.

    Subclasses set :attr:`schema_description` (the schema's ``description``, for the model; the docstring is
    for developers) and may set :attr:`schema_omit` (fields the model is not asked to write). Only the
    validation-mode schema is trimmed; see the module docstring.
    """

    # English attribute names in Python; the article's Spanish names (the aliases) in JSON, prompts and
    # schemas. Either name is accepted on input.
    model_config = ConfigDict(validate_by_name=True, validate_by_alias=True, serialize_by_alias=True)
    schema_description: ClassVar[str] = ""
    """The schema's ``description``: what the model is asked to write, in the prompts' language."""
    schema_omit: ClassVar[tuple[str, ...]] = ()
    """Fields left out of the schema sent to providers (the ERP fills them); still accepted when present."""

    @classmethod
    def __get_pydantic_json_schema__(
        cls, core_schema: CoreSchema, handler: GetJsonSchemaHandler
    ) -> JsonSchemaValue:
        schema = handler(core_schema)
        if handler.mode != "validation":
            return schema
        target = handler.resolve_ref_schema(schema)
        if cls.schema_description:
            target["description"] = cls.schema_description
        target["additionalProperties"] = False
        properties: dict[str, Any] = target.get("properties", {})
        for name in cls.schema_omit:
            properties.pop(name, None)
        for name, prop in list(properties.items()):
            properties[name] = _plain_optional(prop)
        return schema


def _plain_optional(prop: dict[str, Any]) -> dict[str, Any]:
    """A property without its title, and ``{"anyOf": [X, {"type": "null"}], "default": null}`` as ``X``."""
    prop = {key: value for key, value in prop.items() if key != "title"}
    variants = prop.get("anyOf")
    if isinstance(variants, list) and prop.get("default", ...) is None:
        kept = [v for v in variants if v != {"type": "null"}]
        if len(kept) == 1 and isinstance(kept[0], dict):
            rest = {key: value for key, value in prop.items() if key not in ("anyOf", "default")}
            return {**kept[0], **rest}
    return prop


class MemoryItem(ProviderSchemaModel):
    """A fact the model suggests the ERP should remember."""

    model_config = ConfigDict(extra="ignore")
    schema_description: ClassVar[str] = "Un hecho a recordar, en una frase."

    content: str = Field(alias="contenido", json_schema_extra={"maxLength": MAX_MEMORY_CHARS})
    importance: float = Field(alias="importancia", ge=0.0, le=1.0)

    @field_validator("importance", mode="before")
    @classmethod
    def _clamp(cls, value: Any) -> Any:
        if isinstance(value, int | float) and not isinstance(value, bool):
            return min(1.0, max(0.0, float(value)))
        return value  # anything else (e.g. "alta") still fails validation


class Answer(ProviderSchemaModel):
    """`{"respuesta": …, "memoria": [...], "estado": {...}}` as in the article, section 9.

    ``respuesta`` is the first property, so a model writing the schema's order writes the user's text first
    and a streaming reader shows it before ``memoria`` and ``estado`` are written.
    """

    model_config = ConfigDict(extra="ignore")
    schema_description: ClassVar[str] = "Respuesta al usuario; memoria y estado son opcionales."

    text: str = Field(alias="respuesta", description="Texto para el usuario, en español.")
    memories: list[MemoryItem] = Field(
        alias="memoria",
        default_factory=list,
        description="Hechos a recordar.",
        json_schema_extra={"maxItems": MAX_MEMORY_ITEMS_PER_TURN},
    )
    state: dict[str, Any] = Field(
        alias="estado",
        default_factory=dict,
        description="Solo las claves del estado de la conversación que cambian.",
    )

    @field_validator("memories", "state", mode="before")
    @classmethod
    def _null_is_empty(cls, value: Any, info: ValidationInfo) -> Any:
        if value is None:
            return [] if info.field_name == "memories" else {}
        return value

    @field_validator("memories")
    @classmethod
    def _bound_memory(cls, value: list[MemoryItem]) -> list[MemoryItem]:
        return bound_memories(value)

    @field_validator("state")
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
        content = clip_line(item.content, max_chars)
        if not content:
            continue
        key = fold(content)
        kept = merged.get(key)
        importance = max(item.importance, kept.importance) if kept is not None else item.importance
        merged[key] = MemoryItem(content=kept.content if kept else content, importance=importance)
    ranked = sorted(enumerate(merged.values()), key=lambda pair: (-pair[1].importance, pair[0]))
    return [item for _, item in sorted(ranked[:max_items], key=lambda pair: pair[0])]
