"""Whole-plan validation: nothing runs until every operation, parameter and reference checks out."""

from __future__ import annotations

from typing import Any

import pytest

from planner_mode.plan import Plan
from planner_mode.validation import UnresolvedReferenceError, find_refs, resolve_refs, validate_plan
from shared.operations.registry import OperationRegistry


def plan(*operations: dict[str, Any]) -> Plan:
    return Plan.model_validate({"operaciones": list(operations)})


def messages(registry: OperationRegistry, p: Plan, **kwargs: Any) -> list[str]:
    return [issue.message for issue in validate_plan(p, registry, **kwargs).issues]


def test_independent_operations_form_one_wave(toy_registry: OperationRegistry) -> None:
    validated = validate_plan(
        plan(
            {"funcion": "ventas_anuales", "parametros": {"anio": 2025}},
            {"funcion": "mejor_cliente", "parametros": {"anio": 2025}},
        ),
        toy_registry,
    )
    assert validated.ok
    assert validated.waves == [[0, 1]]


def test_dependent_operation_runs_in_a_later_wave(toy_registry: OperationRegistry) -> None:
    validated = validate_plan(
        plan(
            {
                "id": "op2",
                "funcion": "compras_cliente",
                "parametros": {"cliente": {"$ref": "op1.cliente"}, "anio": 2025},
            },
            {"id": "op1", "funcion": "mejor_cliente", "parametros": {"anio": 2025}},
        ),
        toy_registry,
    )
    assert validated.ok, validated.issues
    assert validated.waves == [[1], [0]]
    assert validated.dependencies == {0: {1}, 1: set()}


def test_unknown_operation_is_rejected_listing_the_valid_ones(toy_registry: OperationRegistry) -> None:
    [message] = messages(toy_registry, plan({"funcion": "consultar_ventas_totales", "parametros": {}}))
    assert "consultar_ventas_totales" in message
    assert "ventas_anuales" in message


def test_invalid_parameters_are_rejected_naming_the_parameter(toy_registry: OperationRegistry) -> None:
    [message] = messages(toy_registry, plan({"funcion": "ventas_anuales", "parametros": {"anio": "dos mil"}}))
    assert "invalid parameters" in message
    assert "anio" in message


def test_a_referenced_parameter_is_not_reported_missing(toy_registry: OperationRegistry) -> None:
    p = plan(
        {"id": "op1", "funcion": "mejor_cliente", "parametros": {"anio": 2025}},
        {"funcion": "compras_cliente", "parametros": {"cliente": {"$ref": "op1.cliente"}}},
    )
    # ``anio`` is really missing; ``cliente`` comes from op1 and is checked once resolved.
    [message] = messages(toy_registry, p)
    assert "anio" in message
    assert "cliente" not in message.split("invalid parameters:")[1]


@pytest.mark.parametrize(
    ("ref", "expected"),
    [
        ("op9.cliente", "dangling $ref 'op9.cliente': no operation has id 'op9'"),
        ("op1.clientes", "mejor_cliente results have no field 'clientes'"),
        ("", "malformed $ref"),
    ],
)
def test_dangling_or_malformed_refs_are_rejected(
    toy_registry: OperationRegistry, ref: str, expected: str
) -> None:
    p = plan(
        {"id": "op1", "funcion": "mejor_cliente", "parametros": {"anio": 2025}},
        {"funcion": "compras_cliente", "parametros": {"cliente": {"$ref": ref}, "anio": 2025}},
    )
    [message] = messages(toy_registry, p)
    assert expected in message


def test_self_reference_and_cycles_are_rejected(toy_registry: OperationRegistry) -> None:
    self_ref = plan(
        {"id": "a", "funcion": "compras_cliente", "parametros": {"cliente": {"$ref": "a.cliente"}, "anio": 1}}
    )
    assert "refers to the operation itself" in messages(toy_registry, self_ref)[0]

    cycle = plan(
        {
            "id": "a",
            "funcion": "compras_cliente",
            "parametros": {"cliente": {"$ref": "b.cliente"}, "anio": 1},
        },
        {
            "id": "b",
            "funcion": "compras_cliente",
            "parametros": {"cliente": {"$ref": "a.cliente"}, "anio": 1},
        },
        {"funcion": "ventas_anuales", "parametros": {"anio": 2025}},
    )
    validated = validate_plan(cycle, toy_registry)
    assert not validated.ok
    assert validated.waves == []
    [issue] = validated.issues
    assert issue.index is None
    assert "cycle" in issue.message and "id a" in issue.message and "id b" in issue.message
    assert "ventas_anuales" not in issue.message


def test_duplicate_ids_are_rejected(toy_registry: OperationRegistry) -> None:
    p = plan(
        {"id": "op1", "funcion": "ventas_anuales", "parametros": {"anio": 2024}},
        {"id": "op1", "funcion": "ventas_anuales", "parametros": {"anio": 2025}},
    )
    assert "duplicate id 'op1'" in messages(toy_registry, p)[0]


def test_too_many_operations_is_one_plan_level_issue(toy_registry: OperationRegistry) -> None:
    p = plan(*[{"funcion": "nope", "parametros": {}} for _ in range(4)])
    validated = validate_plan(p, toy_registry, max_operations=3)
    [issue] = validated.issues
    assert issue.index is None
    assert "4 operations; at most 3" in issue.message


def test_every_problem_is_reported_at_once(toy_registry: OperationRegistry) -> None:
    p = plan(
        {"funcion": "nope"},
        {"funcion": "ventas_anuales", "parametros": {}},
        {"funcion": "mejor_cliente", "parametros": {"anio": 2025}},
    )
    validated = validate_plan(p, toy_registry)
    assert [issue.index for issue in validated.issues] == [0, 1]


def test_find_refs_walks_nested_values() -> None:
    params = {"a": {"$ref": "op1.x"}, "b": [1, {"$ref": "op2.y.0"}], "c": {"d": {"$ref": "op3"}}}
    assert find_refs(params) == ["op1.x", "op2.y.0", "op3"]


def test_resolve_refs_follows_keys_and_list_indexes() -> None:
    results = {"op1": {"cliente": "Empresa ABC", "productos": [{"sku": "A-1"}, {"sku": "B-2"}]}}
    params = {"cliente": {"$ref": "op1.cliente"}, "sku": {"$ref": "op1.productos.1.sku"}, "anio": 2025}
    assert resolve_refs(params, results) == {"cliente": "Empresa ABC", "sku": "B-2", "anio": 2025}
    assert resolve_refs({"todo": {"$ref": "op1"}}, results) == {"todo": results["op1"]}
    assert resolve_refs({"sku": {"$ref": "op1.productos.-1.sku"}}, results) == {"sku": "B-2"}


@pytest.mark.parametrize(
    "ref",
    [
        "op1.productos.5.sku",
        "op1.nada",
        "op2.cliente",
        "op1.cliente.x",
        "op1.productos.²",  # str.isdigit() accepts it, int() does not
        "op1.productos.--0",
        "op1.productos. 0",
    ],
)
def test_resolve_refs_raises_when_the_path_is_not_in_the_result(ref: str) -> None:
    results = {"op1": {"cliente": "Empresa ABC", "productos": [{"sku": "A-1"}]}}
    with pytest.raises(UnresolvedReferenceError, match="\\$ref"):
        resolve_refs({"x": {"$ref": ref}}, results)
