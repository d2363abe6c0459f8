"""The bounded context the ERP sends with each call, and its one text rendering.

Both modes render it with :func:`render_context`; its labels are stable (the offline model and the prompt
snapshots rely on them).
"""

from __future__ import annotations

import json
from datetime import date
from typing import Any

from pydantic import BaseModel, ConfigDict, Field


class Exchange(BaseModel):
    """One user message and the assistant's reply."""

    model_config = ConfigDict(
        validate_by_name=True, validate_by_alias=True, serialize_by_alias=True
    )  # Spanish aliases on the wire

    user: str = Field(alias="usuario")
    assistant: str = Field(alias="asistente")


class ConversationContext(BaseModel):
    """What the ERP knows about a conversation that a model needs for its next call."""

    model_config = ConfigDict(
        validate_by_name=True, validate_by_alias=True, serialize_by_alias=True
    )  # Spanish aliases on the wire

    today: date = Field(alias="hoy", description="Today's date in the ERP (the demo ERP stores 2026-11-30).")
    memories: list[str] = Field(
        alias="memoria", default_factory=list, description="Most relevant memory items, best first."
    )
    state: dict[str, Any] = Field(
        alias="estado", default_factory=dict, description="Structured conversation state."
    )
    recent_exchanges: list[Exchange] = Field(
        alias="ultimos_intercambios", default_factory=list, description="The last exchanges, oldest first."
    )
    denied_operations: list[str] = Field(
        alias="operaciones_sin_permiso",
        default_factory=list,
        exclude_if=lambda value: not value,
        description="The operations the caller's role may not run, as 'name: description' (no data): a "
        "model told they exist says the permission is missing instead of answering something else.",
    )
    version: int = Field(
        default=0,
        exclude=True,
        description="The conversation's version this context was read at (0: never written). For the ERP "
        "only: pass it to MemoryStore.record_turn(expected_version=...) to detect a turn planned on stale "
        "state. Excluded from the JSON, so no model and no AI server ever sees it.",
    )


MONTHS = (
    "enero",
    "febrero",
    "marzo",
    "abril",
    "mayo",
    "junio",
    "julio",
    "agosto",
    "septiembre",
    "octubre",
    "noviembre",
    "diciembre",
)
"""Month names, January first."""


def relative_dates(today: date) -> str:
    """What "este año" and "el año pasado" mean on ``today``, spelled out so that a model need not compute
    them. Months are left to ``Fecha de hoy``: a small model read a spelled-out current month as a request
    for that month's sales."""
    return f"Fechas relativas: «este año» es {today.year} y «el año pasado», {today.year - 1}."


def render_context(context: ConversationContext) -> str:
    """Render a context as the labelled plain text that prompts embed."""
    lines = [f"Fecha de hoy: {context.today.isoformat()}", relative_dates(context.today)]
    if context.state:
        lines.append("Estado de la conversación:")
        lines.extend(
            f"- {key}: {value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)}"
            for key, value in context.state.items()
        )
    if context.memories:
        lines.append("Memoria relevante:")
        lines.extend(f"- {item}" for item in context.memories)
    if context.denied_operations:
        lines.append(
            "Operaciones sin permiso para este usuario (el ERP las rechaza; si la pregunta necesita una, "
            "responde que el usuario no tiene permiso para esa consulta):"
        )
        lines.extend(f"- {item}" for item in context.denied_operations)
    if context.recent_exchanges:
        lines.append("Último intercambio:")
        for exchange in context.recent_exchanges:
            lines.append(f"Usuario: {exchange.user}")
            lines.append(f"Asistente: {exchange.assistant}")
    return "\n".join(lines)
