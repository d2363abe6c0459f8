"""``with_structured_output`` on the offline model: all methods, pydantic and dict schemas, include_raw."""

from __future__ import annotations

from typing import Any

import pytest
from langchain_core.messages import HumanMessage, SystemMessage
from pydantic import BaseModel, Field

from benchmarks.stand_ins.offline import OfflineSalesModel
from shared.answer import Answer
from tests.benchmarks.stand_ins.offline.offline_prompts import (
    CATALOG,
    QUESTION,
    answer_messages,
    outcome,
    plan_messages,
)

METHODS = ["json_schema", "json_mode", "function_calling"]


class PlannedOperation(BaseModel):
    funcion: str
    parametros: dict[str, Any] = Field(default_factory=dict)


class Plan(BaseModel):
    """A plan schema like the planner's (property ``operaciones``)."""

    operaciones: list[PlannedOperation]
    pregunta: str = ""


@pytest.mark.parametrize("method", METHODS)
def test_plan_schema_returns_a_parsed_plan(method: str) -> None:
    model = OfflineSalesModel().with_structured_output(Plan, method=method)  # type: ignore[arg-type]
    plan = model.invoke(plan_messages(QUESTION))
    assert isinstance(plan, Plan)
    assert [(op.funcion, op.parametros) for op in plan.operaciones] == [
        ("ventas_anuales", {"anio": 2025}),
        ("mejor_cliente", {"anio": 2025}),
    ]


@pytest.mark.parametrize("method", METHODS)
def test_answer_schema_returns_a_parsed_answer(method: str) -> None:
    model = OfflineSalesModel().with_structured_output(Answer, method=method)  # type: ignore[arg-type]
    answer = model.invoke(
        answer_messages("¿Cuál fue el mejor cliente?", [outcome("mejor_cliente", anio=2025)])
    )
    assert isinstance(answer, Answer)
    assert "Empresa ABC" in answer.text


def test_dict_schema_returns_a_dict() -> None:
    """The prompt mentions ``$ref``, so operations carry ids even though this schema does not declare them."""
    schema = Plan.model_json_schema()
    plan = (
        OfflineSalesModel().with_structured_output(schema).invoke(plan_messages("¿Cuánto vendimos en 2024?"))
    )
    assert plan == {
        "operaciones": [{"funcion": "ventas_anuales", "parametros": {"anio": 2024}}],
        "pregunta": "¿Cuánto vendimos en 2024?",
    }


def test_plan_schema_works_without_a_system_prompt_asking_for_json() -> None:
    messages = [
        SystemMessage(CATALOG),
        HumanMessage("Fecha de hoy: 2026-11-30\nNueva pregunta:\n¿Cuánto vendimos este año?"),
    ]
    plan = OfflineSalesModel().with_structured_output(Plan).invoke(messages)
    assert isinstance(plan, Plan)
    assert plan.operaciones[0].parametros == {"anio": 2026}


def test_unrelated_schema_is_filled_with_valid_placeholders() -> None:
    class Joke(BaseModel):
        setup: str
        punchline: str
        rating: int = Field(ge=1)

    joke = OfflineSalesModel().with_structured_output(Joke).invoke("Tell me a joke about cats.")
    assert isinstance(joke, Joke)
    assert joke.rating == 1


def test_include_raw_returns_raw_parsed_and_no_error() -> None:
    result = OfflineSalesModel().with_structured_output(Plan, include_raw=True).invoke(plan_messages("hola"))
    assert isinstance(result, dict)
    assert result["parsing_error"] is None
    assert isinstance(result["parsed"], Plan)
    assert result["raw"].usage_metadata["output_tokens"] > 0


def test_include_raw_reports_a_parsing_error_instead_of_raising() -> None:
    model = OfflineSalesModel(faults="malformed_json").with_structured_output(Plan, include_raw=True)
    result = model.invoke(plan_messages("¿Cuánto vendimos en 2025?"))
    assert isinstance(result, dict)
    assert result["parsed"] is None
    assert result["parsing_error"] is not None


def test_unknown_method_is_rejected() -> None:
    with pytest.raises(ValueError, match="Unrecognized method"):
        OfflineSalesModel().with_structured_output(Plan, method="xml")  # type: ignore[arg-type]


def branch(name: str, parameters: dict[str, Any], required: list[str]) -> dict[str, Any]:
    """One operation of a discriminated plan schema: its name as the only ``funcion``, its own parameters."""
    return {
        "type": "object",
        "additionalProperties": False,
        "properties": {
            "id": {"type": "string"},
            "funcion": {"type": "string", "enum": [name]},
            "parametros": {
                "type": "object",
                "additionalProperties": False,
                "properties": parameters,
                "required": required,
            },
        },
        "required": ["funcion", "parametros"],
    }


YEAR = {"anyOf": [{"type": "integer", "minimum": 2000, "maximum": 2100}, {"$ref": "#/$defs/ref"}]}


def union_schema(*branches: dict[str, Any]) -> dict[str, Any]:
    """A plan schema shaped like the planner's constrained one: operations as an ``anyOf`` of branches."""
    return {
        "title": "Plan",
        "type": "object",
        "additionalProperties": False,
        "properties": {
            "operaciones": {"type": "array", "items": {"anyOf": list(branches)}},
            "respuesta_directa": {"type": "string"},
        },
        "$defs": {"ref": {"type": "object", "additionalProperties": {"type": "string"}}},
    }


def test_a_union_plan_schema_is_followed_branch_by_branch() -> None:
    """Each operation is conformed to its own branch (chosen by ``funcion``), not to the first one: the second
    operation keeps its ``cliente`` reference, which the first branch does not declare."""
    schema = union_schema(
        branch("mejor_cliente", {"anio": YEAR}, ["anio"]),
        branch(
            "compras_cliente",
            {"cliente": {"anyOf": [{"type": "string"}, {"$ref": "#/$defs/ref"}]}, "anio": YEAR},
            ["cliente", "anio"],
        ),
    )
    plan = (
        OfflineSalesModel()
        .with_structured_output(schema)
        .invoke(plan_messages("¿Cuánto compró nuestro mejor cliente en 2025?"))
    )
    assert plan == {
        "operaciones": [
            {"id": "op1", "funcion": "mejor_cliente", "parametros": {"anio": 2025}},
            {"funcion": "compras_cliente", "parametros": {"anio": 2025, "cliente": {"$ref": "op1.cliente"}}},
        ]
    }


def test_only_the_operations_the_schema_names_are_planned() -> None:
    """The prompt's catalog offers every operation; the schema's ``funcion`` enum allows one of them."""
    schema = union_schema(branch("ventas_anuales", {"anio": YEAR}, ["anio"]))
    plan = OfflineSalesModel().with_structured_output(schema).invoke(plan_messages(QUESTION))
    assert plan["operaciones"] == [{"funcion": "ventas_anuales", "parametros": {"anio": 2025}}]


def test_a_schema_allowing_no_operation_gets_a_direct_answer() -> None:
    schema = union_schema()
    schema["properties"]["operaciones"] = {"type": "array", "items": {"type": "object"}, "maxItems": 0}
    plan = (
        OfflineSalesModel().with_structured_output(schema).invoke(plan_messages("¿Cuánto vendimos en 2025?"))
    )
    assert plan["operaciones"] == []
    assert plan["respuesta_directa"]
