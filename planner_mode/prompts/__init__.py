"""The planner's prompts: one template stored as package data, rendered into LangChain messages.

``system.md`` holds the instructions for both calls and the catalog (its only placeholder, ``{{catalogo}}``,
is replaced literally). **Stable first, per-turn last, and call 2 continues call 1**, so that a provider's
prompt cache serves as much as it can of both calls, even on a server with one slot:

* call 1: the system message (the same for every turn and day of a catalog), a worked example (a question and
  its compact plan), then one human message with the context and the question;
* call 2: every message of call 1, the plan that ran as the model's reply, then the results.

The human messages follow the conventions the offline model reads (``docs/design.md``); the examples never
use the suite's questions or the seeded ERP's values (``tests/test_prompt_leakage.py``).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from functools import cache
from importlib import resources
from typing import Any, Final

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage

from planner_mode.plan import OperationOutcome
from shared.memory.context import ConversationContext, render_context
from shared.operations.registry import OperationSpec

__all__ = [
    "EXAMPLE_PLAN",
    "EXAMPLE_QUESTION",
    "answer_messages",
    "compact_plan",
    "plan_messages",
    "render_catalog",
    "system_message",
]


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


EXAMPLE_QUESTION: Final = "¿Cuánto le compramos a Papelera Norte en 2019?"
"""The worked example before the user's message: a question about an operation no catalog has."""
EXAMPLE_PLAN: Final = (("compras_proveedor", {"proveedor": "Papelera Norte", "anio": 2019}),)
"""Its plan (written by :func:`compact_plan`): a model copies the shape of the reply it was shown, and a small
one wrote twice the tokens (indented JSON) when the only examples were in the instructions."""


def system_message(catalog: Sequence[OperationSpec]) -> SystemMessage:
    """The instructions for both calls and the catalog: the same for every turn of a caller's catalog."""
    return SystemMessage(content=load_template("system.md").replace("{{catalogo}}", render_catalog(catalog)))


def compact_plan(operations: Iterable[tuple[str, Mapping[str, Any]]]) -> str:
    """A plan of ``(funcion, parametros)`` pairs as the instructions ask a model to write it: compact JSON."""
    plan = {"operaciones": [{"funcion": name, "parametros": dict(params)} for name, params in operations]}
    return json.dumps(plan, ensure_ascii=False, separators=(",", ":"), default=str)


def plan_messages(
    message: str, context: ConversationContext, catalog: Sequence[OperationSpec]
) -> list[BaseMessage]:
    """Call 1: :func:`system_message`, the worked example (``Ejemplo``: a question and its plan), then
    ``render_context`` + ``Nueva pregunta:`` + the message."""
    return [
        system_message(catalog),
        HumanMessage(content=f"Ejemplo.\nNueva pregunta:\n{EXAMPLE_QUESTION}"),
        AIMessage(content=compact_plan(EXAMPLE_PLAN)),
        HumanMessage(content=f"{render_context(context)}\n\nNueva pregunta:\n{message}"),
    ]


def answer_messages(
    question: str,
    results: Sequence[OperationOutcome],
    context: ConversationContext,
    catalog: Sequence[OperationSpec],
) -> list[BaseMessage]:
    """Call 2: call 1's messages, the plan the results are for (as the model's reply: the operations with the
    parameters the ERP resolved), then ``Resultados:`` + a JSON array and the request to answer.

    Call 2 starts with every message of call 1, so a server's prefix cache serves all of it and reads only the
    plan and the results (article §8: call 2 reads the question and the results). The array has one compact
    JSON object per line: readable for people, cheap in tokens for the model.
    """
    items = [json.dumps(r.for_prompt(), ensure_ascii=False, default=str) for r in results]
    results_json = "[\n" + ",\n".join(items) + "\n]" if items else "[]"
    return [
        *plan_messages(question, context, catalog),
        AIMessage(content=compact_plan((r.function, r.parameters) for r in results)),
        HumanMessage(content=f"Resultados:\n{results_json}\n\nPaso 2: la respuesta a «{question}»."),
    ]
