"""The planner's prompts: templates stored as package data, rendered into LangChain messages.

The only placeholders of ``plan_system.md`` and ``answer_system.md`` are ``{{hoy}}`` and ``{{catalogo}}``,
replaced literally. **Stable first, per-turn last**, so that a provider's prompt cache reuses as much as it
can: a system message that is the same for every turn and day (instructions, call 1's catalog), then one
human message from the least to the most changing part (context, question, call 2's results). The human
messages follow the conventions the offline model reads (``docs/design.md``); the templates' examples never
use the suite's questions or the seeded ERP's values (``tests/test_prompt_leakage.py``).
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
    """One compact block per operation: ``- name(param: type, opt?: type = default): description``.

    Each parameter description follows on its own line, once: a parameter with the same name and the same
    description as one already described (``anio`` in most sales operations) is not described again.
    """
    blocks: list[str] = []
    described: set[tuple[str, str]] = set()
    for spec in catalog:
        properties: dict[str, Any] = spec.parameters.get("properties", {})
        required = set(spec.parameters.get("required", []))
        signature: list[str] = []
        details: list[str] = []
        for name, schema in properties.items():
            optional = "" if name in required else "?"
            default = f" = {json.dumps(schema['default'], ensure_ascii=False)}" if "default" in schema else ""
            signature.append(f"{name}{optional}: {_type_label(schema)}{default}")
            description = schema.get("description")
            if description and (name, description) not in described:
                described.add((name, description))
                details.append(f"    {name}: {description}")
        blocks.append("\n".join([f"- {spec.name}({', '.join(signature)}): {spec.description}", *details]))
    return "\n".join(blocks) if blocks else "(ninguna operación disponible)"


def plan_messages(
    message: str, context: ConversationContext, catalog: Sequence[OperationSpec]
) -> list[BaseMessage]:
    """Call 1: the planning system prompt and ``render_context`` + ``Nueva pregunta:`` + the message."""
    system = (
        load_template("plan_system.md")
        .replace("{{hoy}}", context.today.isoformat())
        .replace("{{catalogo}}", render_catalog(catalog))
    )
    human = f"{render_context(context)}\n\nNueva pregunta:\n{message}"
    return [SystemMessage(content=system), HumanMessage(content=human)]


def answer_messages(
    question: str, results: Sequence[OperationOutcome], context: ConversationContext
) -> list[BaseMessage]:
    """Call 2: the answer system prompt, then the context, ``Pregunta:`` and ``Resultados:`` + a JSON array.

    The context is today's date, the state and the memory, without the last exchange and the operations the
    user may not run: those were for call 1, to resolve what the question refers to and to refuse what needs
    a missing permission, and the plan has done it (the article's call 2 reads the question and the results,
    §8; an operation the ERP refused says why in its result). The array has one compact JSON object per
    line: readable for people, cheap in tokens for the model.
    """
    system = load_template("answer_system.md").replace("{{hoy}}", context.today.isoformat())
    items = [json.dumps(r.for_prompt(), ensure_ascii=False, default=str) for r in results]
    results_json = "[\n" + ",\n".join(items) + "\n]" if items else "[]"
    known = render_context(context.model_copy(update={"recent_exchanges": [], "denied_operations": []}))
    human = f"{known}\n\nPregunta: {question}\n\nResultados:\n{results_json}"
    return [SystemMessage(content=system), HumanMessage(content=human)]
