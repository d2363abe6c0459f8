"""How the offline model writes JSON: in the style of the prompt's examples and in the schema's key order.

A model copies the examples it is shown: compact examples (``{"a":1}``) get compact JSON, spaced ones (or
none) get JSON with spaces. A grammar built from a schema (llama.cpp's, Ollama's) writes the properties in the
schema's order, so the offline model does too; without a schema, in the order the prompt names the keys. A
direct answer leaves ``"operaciones": []`` out only when the prompt shows it alone. None of this changes what
is written, only how: the parsed JSON is the same.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage

from benchmarks.stand_ins.offline import OfflineSalesModel
from benchmarks.stand_ins.offline._prompt import compact_examples
from tests.benchmarks.stand_ins.offline.offline_prompts import (
    ANSWER_SYSTEM,
    CATALOG,
    answer_messages,
    outcome,
)

SPACED_PLAN = (
    'Eres el planificador. Devuelve {"operaciones": [{"funcion": "...", "parametros": {}}]}. '
    'Sin operaciones: {"operaciones": [], "respuesta_directa": "..."}.\n' + CATALOG
)
COMPACT_PLAN = (
    'Eres el planificador. Devuelve {"operaciones":[{"funcion":"...","parametros":{}}]}. '
    'Sin operaciones, solo: {"respuesta_directa":"..."}.\n' + CATALOG
)
COMPACT_ANSWER = 'Redacta la respuesta. Devuelve {"respuesta":"...","memoria":[],"estado":{"tema":"ventas"}}.'
DIRECT_FIRST = {
    "type": "object",
    "properties": {
        "respuesta_directa": {"type": "string"},
        "operaciones": {"type": "array", "items": {"type": "object"}},
    },
}
RESULTS_2025 = [outcome("ventas_anuales", anio=2025)]
OPERATIONS_FIRST = {"type": "object", "properties": dict(reversed(DIRECT_FIRST["properties"].items()))}


def ask(system: str, question: str, **kwargs: Any) -> str:
    messages: list[BaseMessage] = [SystemMessage(system), HumanMessage(f"Nueva pregunta:\n{question}")]
    return str(OfflineSalesModel().invoke(messages, **kwargs).content)


def with_schema(schema: dict[str, Any]) -> dict[str, Any]:
    return {"response_format": {"type": "json_schema", "json_schema": {"name": "Plan", "schema": schema}}}


@pytest.mark.parametrize(
    "text, compact",
    [
        ('Salida: {"a":1,"b":[{"c":"d"}]}', True),
        ('Salida: {"a": 1, "b": [{"c": "d"}]}', False),
        ('Salida: {"a":1, "b": 2}', False),
        ('Sin ejemplos: escribe "respuesta":\nun texto.', False),
        ("Sin JSON.", False),
    ],
    ids=["compact", "spaced", "mixed", "a-quoted-word-ending-a-sentence", "none"],
)
def test_the_style_of_the_examples_is_read_from_the_instructions(text: str, compact: bool) -> None:
    assert compact_examples(text) is compact


def test_compact_examples_get_compact_json_and_spaced_ones_json_with_spaces() -> None:
    question = "¿Cuánto vendimos en 2025?"
    compact, spaced = ask(COMPACT_PLAN, question), ask(SPACED_PLAN, question)
    assert compact == '{"operaciones":[{"funcion":"ventas_anuales","parametros":{"anio":2025}}]}'
    assert spaced == json.dumps(json.loads(compact))  # the same plan, with json.dumps' spaces
    model = OfflineSalesModel()
    tight = str(
        model.invoke([SystemMessage(COMPACT_ANSWER), *answer_messages("¿Y?", RESULTS_2025)[1:]]).content
    )
    loose = str(model.invoke(answer_messages("¿Y?", RESULTS_2025)).content)
    assert tight.startswith('{"respuesta":"') and loose.startswith('{"respuesta": "')
    assert json.loads(tight)["respuesta"] == json.loads(loose)["respuesta"]
    assert '"respuesta": ' in ANSWER_SYSTEM  # the spaced reference prompt


def test_a_direct_answer_is_written_alone_only_when_the_prompt_shows_it_alone() -> None:
    alone, with_empty = json.loads(ask(COMPACT_PLAN, "Hola")), json.loads(ask(SPACED_PLAN, "Hola"))
    assert list(alone) == ["respuesta_directa"]
    assert with_empty["operaciones"] == [] and with_empty["respuesta_directa"] == alone["respuesta_directa"]
    required = {**DIRECT_FIRST, "required": ["operaciones"]}
    assert list(json.loads(ask(COMPACT_PLAN, "Hola", **with_schema(required)))) == [
        "respuesta_directa",
        "operaciones",
    ]


@pytest.mark.parametrize(
    "schema, order",
    [
        (DIRECT_FIRST, ["respuesta_directa", "operaciones"]),
        (OPERATIONS_FIRST, ["operaciones", "respuesta_directa"]),
    ],
)
def test_keys_are_written_in_the_schemas_order(schema: dict[str, Any], order: list[str]) -> None:
    assert list(json.loads(ask(SPACED_PLAN, "Hola", **with_schema(schema)))) == order


def test_without_a_schema_keys_come_in_the_order_the_prompt_names_them() -> None:
    direct_named_first = 'Saluda con "respuesta_directa"; si no, {"operaciones": []}.\n' + CATALOG
    assert list(json.loads(ask(direct_named_first, "Hola"))) == ["respuesta_directa", "operaciones"]
    assert list(json.loads(ask(SPACED_PLAN, "Hola"))) == ["operaciones", "respuesta_directa"]


def test_a_fault_that_rewrites_the_reply_keeps_its_style() -> None:
    messages: list[BaseMessage] = [
        SystemMessage(COMPACT_PLAN),
        HumanMessage("Nueva pregunta:\n¿Ventas de 2025?"),
    ]
    text = str(OfflineSalesModel(faults="wrong_types").invoke(messages).content)
    assert text.startswith('{"operaciones":[{') and ": " not in text.split('"parametros"')[0]
