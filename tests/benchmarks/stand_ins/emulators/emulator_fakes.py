"""Fakes for the emulator tests: a scripted responder for :mod:`tests.fakes`'s ``FunctionChatModel``.

``FunctionChatModel(scripted_responder)`` stands behind the emulator servers, so the tests control exactly
what the server answers, independent of the offline model.
"""

from __future__ import annotations

import json
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage

from tests.fakes import CallInfo

GEMINI_KEY = "test-key"
"""The only API key the session's Gemini emulator accepts."""


def sample_for(schema: dict[str, Any]) -> Any:
    """A value that satisfies a simple JSON schema (objects, arrays, scalars)."""
    kind = schema.get("type")
    if kind == "object" or "properties" in schema:
        return {name: sample_for(sub) for name, sub in schema.get("properties", {}).items()}
    if kind == "array":
        return [sample_for(schema.get("items", {"type": "string"}))]
    if kind == "integer":
        return 2025
    if kind == "number":
        return 1.5
    if kind == "boolean":
        return True
    return "Empresa ABC"


def scripted_responder(messages: list[BaseMessage], info: CallInfo) -> AIMessage:
    """Schema → a sample JSON object; tools and a new question → one call; tool result → an answer."""
    last = messages[-1]
    if info.schema is not None:
        return AIMessage(content=json.dumps(sample_for(info.schema)))
    if info.tools and isinstance(last, HumanMessage):
        name = info.tool_choice if info.tool_choice not in (None, "any", "auto") else None
        name = name or info.tools[0]["function"]["name"]
        return AIMessage(content="", tool_calls=[{"name": name, "args": {"anio": 2025}, "id": "fake_1"}])
    if isinstance(last, ToolMessage):
        return AIMessage(content=f"Resultado de {last.name}: {last.content}")
    return AIMessage(content=f"Hola. Dijiste: {last.text}")
