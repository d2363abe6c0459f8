"""The bounded context the ERP sends with each call, and its one text rendering.

Both modes render it with :func:`render_context`; its labels are stable (the offline model and the prompt
snapshots rely on them).
"""

from __future__ import annotations

import json
from datetime import date
from typing import Any

from pydantic import BaseModel, Field


class Exchange(BaseModel):
    """One user message and the assistant's reply."""

    usuario: str
    asistente: str


class ConversationContext(BaseModel):
    """What the ERP knows about a conversation that a model needs for its next call."""

    hoy: date = Field(description="Today's date in the ERP (the demo ERP stores 2026-11-30).")
    memoria: list[str] = Field(default_factory=list, description="Most relevant memory items, best first.")
    estado: dict[str, Any] = Field(default_factory=dict, description="Structured conversation state.")
    ultimos_intercambios: list[Exchange] = Field(
        default_factory=list, description="The last exchanges, oldest first."
    )
    version: int = Field(
        default=0,
        exclude=True,
        description="The conversation's version this context was read at (0: never written). For the ERP "
        "only: pass it to MemoryStore.record_turn(expected_version=...) to detect a turn planned on stale "
        "state. Excluded from the JSON, so no model and no AI server ever sees it.",
    )


def render_context(context: ConversationContext) -> str:
    """Render a context as the labelled plain text that prompts embed."""
    lines = [f"Fecha de hoy: {context.hoy.isoformat()}"]
    if context.estado:
        lines.append("Estado de la conversación:")
        lines.extend(
            f"- {key}: {value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)}"
            for key, value in context.estado.items()
        )
    if context.memoria:
        lines.append("Memoria relevante:")
        lines.extend(f"- {item}" for item in context.memoria)
    if context.ultimos_intercambios:
        lines.append("Último intercambio:")
        for exchange in context.ultimos_intercambios:
            lines.append(f"Usuario: {exchange.usuario}")
            lines.append(f"Asistente: {exchange.asistente}")
    return "\n".join(lines)
