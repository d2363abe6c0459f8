"""The planner's prompts: templates stored as package data, rendered into LangChain messages.

The templates (``plan_system.md``, ``answer_system.md``) are loaded with :mod:`importlib.resources`; the only
placeholders are ``{{hoy}}`` and ``{{catalogo}}``, replaced literally (JSON braces in the templates stay as
they are). The human messages follow the conventions the offline model reads (see ``docs/design.md``).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from functools import cache
from importlib import resources
from typing import Any

from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage

from planner_mode.plan import OperationOutcome
from shared.memory.context import ConversationContext, render_context
from shared.operations.registry import OperationSpec

__all__ = ["answer_messages", "plan_messages", "render_catalog"]


@cache
def load_template(name: str) -> str:
    """The text of the prompt template ``name`` (a file of this package)."""
    return resources.files(__name__).joinpath(name).read_text(encoding="utf-8").strip()


def _type_label(schema: dict[str, Any]) -> str:
    if "enum" in schema:
        return " | ".join(json.dumps(v, ensure_ascii=False) for v in schema["enum"])
    if "type" in schema:
        kind = schema["type"]
        if kind == "array" and isinstance(schema.get("items"), dict):
            return f"array[{_type_label(schema['items'])}]"
        return str(kind)
    variants = [s for s in schema.get("anyOf", []) if isinstance(s, dict) and s.get("type") != "null"]
    if variants:
        return " | ".join(_type_label(v) for v in variants)
    return "any"


def render_catalog(catalog: Sequence[OperationSpec]) -> str:
    """One compact block per operation: ``- name(param: type, opt?: type = default): description``."""
    blocks: list[str] = []
    for spec in catalog:
        properties: dict[str, Any] = spec.parameters.get("properties", {})
        required = set(spec.parameters.get("required", []))
        signature: list[str] = []
        details: list[str] = []
        for name, schema in properties.items():
            optional = "" if name in required else "?"
            default = f" = {json.dumps(schema['default'], ensure_ascii=False)}" if "default" in schema else ""
            signature.append(f"{name}{optional}: {_type_label(schema)}{default}")
            if schema.get("description"):
                details.append(f"    {name}: {schema['description']}")
        blocks.append("\n".join([f"- {spec.name}({', '.join(signature)}): {spec.description}", *details]))
    return "\n".join(blocks) if blocks else "(ninguna operación disponible)"


def plan_messages(
    message: str, context: ConversationContext, catalog: Sequence[OperationSpec]
) -> list[BaseMessage]:
    """Call 1: the planning system prompt and ``render_context`` + ``Nueva pregunta:`` + the message."""
    system = (
        load_template("plan_system.md")
        .replace("{{hoy}}", context.hoy.isoformat())
        .replace("{{catalogo}}", render_catalog(catalog))
    )
    human = f"{render_context(context)}\n\nNueva pregunta:\n{message}"
    return [SystemMessage(content=system), HumanMessage(content=human)]


def answer_messages(
    question: str, results: Sequence[OperationOutcome], context: ConversationContext
) -> list[BaseMessage]:
    """Call 2: the answer system prompt and ``Pregunta:``, the context and ``Resultados:`` + a JSON array.

    The array has one compact JSON object per line: readable for people, cheap in tokens for the model.
    """
    system = load_template("answer_system.md").replace("{{hoy}}", context.hoy.isoformat())
    items = [json.dumps(r.for_prompt(), ensure_ascii=False, default=str) for r in results]
    results_json = "[\n" + ",\n".join(items) + "\n]" if items else "[]"
    human = f"Pregunta: {question}\n\n{render_context(context)}\n\nResultados:\n{results_json}"
    return [SystemMessage(content=system), HumanMessage(content=human)]
