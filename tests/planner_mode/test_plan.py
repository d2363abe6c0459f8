"""The plan wire format: the article's keys, the $ref/respuesta_directa extensions, lenient nulls."""

from __future__ import annotations

import json
from typing import Any

import pytest
from pydantic import ValidationError

from planner_mode.parsing import parse_model_output
from planner_mode.plan import MAX_NESTING_DEPTH, OperationOutcome, Plan, nesting_depth
from shared.errors import ModelOutputError


def test_article_plan_parses_with_its_verbatim_keys() -> None:
    plan = Plan.model_validate(
        {
            "operaciones": [{"funcion": "ventas_anuales", "parametros": {"anio": 2025}}],
            "pregunta": "¿Cuánto vendimos en 2025?",
        }
    )
    assert plan.operations[0].function == "ventas_anuales"
    assert plan.operations[0].parameters == {"anio": 2025}
    assert plan.operations[0].id is None
    assert not plan.is_direct


def test_null_operations_and_parameters_mean_empty() -> None:
    plan = Plan.model_validate({"operaciones": [{"funcion": "x", "parametros": None}]})
    assert plan.operations[0].parameters == {}
    assert Plan.model_validate({"operaciones": None}).operations == []


def test_direct_answer_needs_no_operations_and_some_text() -> None:
    assert Plan(respuesta_directa="¡Hola!").is_direct
    assert not Plan(operaciones=[], respuesta_directa="   ").is_direct
    assert not Plan.model_validate(
        {"operaciones": [{"funcion": "ventas_anuales"}], "respuesta_directa": "Hola"}
    ).is_direct


def test_the_model_is_not_asked_to_echo_the_question_but_plans_with_it_stay_valid() -> None:
    """``pregunta`` costs output tokens on every call 1 and the ERP already has the question: the schema sent
    to providers leaves it out (and allows no other extra key), the model class still accepts it."""
    schema = Plan.model_json_schema()
    assert "pregunta" not in schema["properties"] and schema["additionalProperties"] is False
    assert Plan.model_validate({"operaciones": [], "pregunta": "¿Hola?"}).question == "¿Hola?"
    assert Plan.model_validate({"operaciones": []}).question == ""
    # What an HTTP API documents as its response keeps the whole plan.
    assert "pregunta" in Plan.model_json_schema(mode="serialization")["properties"]


def test_outcome_shows_call_two_either_a_result_or_an_error() -> None:
    ok = OperationOutcome(funcion="f", parametros={"a": 1}, resultado={"total": 5})
    failed = OperationOutcome(funcion="f", parametros={}, error="boom")
    assert ok.for_prompt() == {"funcion": "f", "parametros": {"a": 1}, "resultado": {"total": 5}}
    assert failed.for_prompt() == {"funcion": "f", "parametros": {}, "error": "boom"}


def test_call_two_reads_large_figures_as_the_erp_writes_them_and_the_outcome_keeps_the_numbers() -> None:
    outcome = OperationOutcome(
        funcion="f", parametros={"anio": 2025}, resultado={"anio": 2025, "total": 850000000}
    )
    assert outcome.for_prompt()["resultado"] == {"anio": 2025, "total": "850.000.000"}
    assert outcome.result == {"anio": 2025, "total": 850000000}


def test_numeric_ids_and_a_null_question_are_understood() -> None:
    plan = Plan.model_validate(
        {
            "operaciones": [
                {"id": 1, "funcion": "mejor_cliente", "parametros": {"anio": 2025}},
                {"id": 2, "funcion": "compras_cliente", "parametros": {"cliente": {"$ref": "1.cliente"}}},
            ],
            "pregunta": None,
        }
    )
    assert [op.id for op in plan.operations] == ["1", "2"]
    assert plan.question == ""


def nested(depth: int) -> dict[str, Any]:
    """``parametros`` whose lists and objects nest ``depth`` levels, the object itself included."""
    value: Any = 1
    for _ in range(depth - 1):
        value = [value]
    return {"x": value}


def test_parameters_may_not_nest_deeper_than_the_bound() -> None:
    assert nesting_depth(nested(MAX_NESTING_DEPTH)) == MAX_NESTING_DEPTH
    Plan.model_validate({"operaciones": [{"funcion": "f", "parametros": nested(MAX_NESTING_DEPTH)}]})
    with pytest.raises(ValidationError, match="nest more than"):
        Plan.model_validate({"operaciones": [{"funcion": "f", "parametros": nested(300)}]})


def test_nesting_depth_counts_lists_and_objects_without_recursion() -> None:
    assert nesting_depth(5) == 0
    assert nesting_depth({"a": 1, "b": [{"c": []}]}) == 4
    assert nesting_depth(nested(100_000)) == 100_000


@pytest.mark.parametrize(
    "data",
    [
        {},
        {"respuesta": "No tengo datos."},
        {"foo": 1},
        {"pregunta": "¿Cuánto vendimos?"},
        {"respuesta_directa": "   "},
        {"respuesta_directa": None, "pregunta": "x"},
    ],
    ids=["empty", "answer-shaped", "unrelated", "question-only", "blank-direct", "null-direct"],
)
def test_a_reply_that_ignores_the_plan_schema_is_not_an_empty_plan(data: dict[str, Any]) -> None:
    with pytest.raises(ValidationError, match="operaciones"):
        Plan.model_validate(data)
    with pytest.raises(ModelOutputError, match="operaciones"):  # and the tolerant parser says so too
        parse_model_output(json.dumps(data), Plan)


@pytest.mark.parametrize(
    "data",
    [
        {"operaciones": []},
        {"operaciones": None},
        {"operaciones": [], "pregunta": "x"},
        {"operaciones": [], "respuesta_directa": "¡Hola!"},
        {"respuesta_directa": "¡Hola!"},
    ],
)
def test_a_plan_needs_operaciones_or_a_direct_answer(data: dict[str, Any]) -> None:
    Plan.model_validate(data)


def test_a_validated_plan_revalidates() -> None:
    plan = Plan(respuesta_directa="¡Hola!")
    assert Plan.model_validate(plan) is plan
    assert Plan.model_validate(plan.model_dump()) == plan
