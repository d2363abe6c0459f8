"""Whole-plan validation: nothing runs until every operation, parameter and reference checks out."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel, ConfigDict, Field

from planner_mode.plan import Plan
from planner_mode.validation import UnresolvedReferenceError, find_refs, resolve_refs, validate_plan
from shared.operations.registry import Operation, OperationRegistry
from shared.security import DEMO_CALLER
from tests.planner_mode.planner_fakes import op, ref


def plan(*operations: dict[str, Any]) -> Plan:
    return Plan.model_validate({"operaciones": list(operations)})


def messages(registry: OperationRegistry, p: Plan, **kwargs: Any) -> list[str]:
    return [issue.message for issue in validate_plan(p, registry, **kwargs, caller=DEMO_CALLER).issues]


BEST = op("mejor_cliente", "op1", anio=2025)


def test_independent_operations_form_one_wave(toy_registry: OperationRegistry) -> None:
    validated = validate_plan(
        plan(op("ventas_anuales", anio=2025), op("mejor_cliente", anio=2025)),
        toy_registry,
        caller=DEMO_CALLER,
    )
    assert validated.ok
    assert validated.waves == [[0, 1]]


def test_dependent_operation_runs_in_a_later_wave(toy_registry: OperationRegistry) -> None:
    dependent = plan(op("compras_cliente", "op2", cliente=ref("op1.cliente"), anio=2025), BEST)
    validated = validate_plan(dependent, toy_registry, caller=DEMO_CALLER)
    assert validated.ok, validated.issues
    assert validated.waves == [[1], [0]]
    assert validated.dependencies == {0: {1}, 1: set()}


def test_unknown_operation_is_rejected_listing_the_valid_ones(toy_registry: OperationRegistry) -> None:
    [message] = messages(toy_registry, plan(op("consultar_ventas_totales")))
    assert "consultar_ventas_totales" in message
    assert "ventas_anuales" in message


def test_invalid_parameters_are_rejected_naming_the_parameter(toy_registry: OperationRegistry) -> None:
    [message] = messages(toy_registry, plan(op("ventas_anuales", anio="dos mil")))
    assert "invalid parameters" in message
    assert "anio" in message


def test_a_referenced_parameter_is_not_reported_missing(toy_registry: OperationRegistry) -> None:
    p = plan(BEST, op("compras_cliente", cliente=ref("op1.cliente")))
    # ``anio`` is really missing; ``cliente`` comes from op1 and is checked once resolved.
    [message] = messages(toy_registry, p)
    assert "anio" in message
    assert "cliente" not in message.split("invalid parameters:")[1]


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("op9.cliente", "dangling $ref 'op9.cliente': no operation has id 'op9'"),
        ("op1.clientes", "mejor_cliente results have no field 'clientes'"),
        ("", "malformed $ref"),
    ],
)
def test_dangling_or_malformed_refs_are_rejected(
    toy_registry: OperationRegistry, path: str, expected: str
) -> None:
    [message] = messages(toy_registry, plan(BEST, op("compras_cliente", cliente=ref(path), anio=2025)))
    assert expected in message


def test_self_reference_and_cycles_are_rejected(toy_registry: OperationRegistry) -> None:
    self_ref = plan(op("compras_cliente", "a", cliente=ref("a.cliente"), anio=1))
    assert "refers to the operation itself" in messages(toy_registry, self_ref)[0]

    cycle = plan(
        op("compras_cliente", "a", cliente=ref("b.cliente"), anio=1),
        op("compras_cliente", "b", cliente=ref("a.cliente"), anio=1),
        op("ventas_anuales", anio=2025),
    )
    validated = validate_plan(cycle, toy_registry, caller=DEMO_CALLER)
    assert not validated.ok
    assert validated.waves == []
    [issue] = validated.issues
    assert issue.index is None
    assert "cycle" in issue.message and "id a" in issue.message and "id b" in issue.message
    assert "ventas_anuales" not in issue.message


def test_duplicate_ids_are_rejected(toy_registry: OperationRegistry) -> None:
    p = plan(op("ventas_anuales", "op1", anio=2024), op("ventas_anuales", "op1", anio=2025))
    assert "duplicate id 'op1'" in messages(toy_registry, p)[0]


def test_too_many_operations_is_one_plan_level_issue(toy_registry: OperationRegistry) -> None:
    p = plan(*[op("nope")] * 4)
    validated = validate_plan(p, toy_registry, max_operations=3, caller=DEMO_CALLER)
    [issue] = validated.issues
    assert issue.index is None
    assert "4 operations; at most 3" in issue.message


def test_every_problem_is_reported_at_once(toy_registry: OperationRegistry) -> None:
    p = plan({"funcion": "nope"}, op("ventas_anuales"), op("mejor_cliente", anio=2025))
    validated = validate_plan(p, toy_registry, caller=DEMO_CALLER)
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


# -- $ref paths are checked against the referenced operation's result model, before anything runs ------------


def two_step(first: dict[str, Any], path: str) -> Plan:
    return plan({"id": "op1", **first}, op("compras_cliente", "op2", cliente=ref(path), anio=2025))


TOP = op("top_productos", anio=2025)
PENDING = op("facturas_pendientes")


@pytest.mark.parametrize(
    ("first", "path"),
    [
        (TOP, "op1.productos.0.producto"),
        (TOP, "op1.productos.-1.sku"),
        (TOP, "op1.productos"),
        (TOP, "op1"),
        (PENDING, "op1.facturas.0.cliente"),
        (PENDING, "op1.cliente"),  # Optional[str]: the field exists even when it may be null
        (op("buscar_cliente", texto="abc"), "op1.clientes.0.nombre"),
    ],
)
def test_refs_to_fields_of_the_result_model_are_accepted(
    registry: OperationRegistry, first: dict[str, Any], path: str
) -> None:
    assert messages(registry, two_step(first, path)) == []


@pytest.mark.parametrize(
    ("first", "path", "expected"),
    [
        (
            TOP,
            "op1.productos.0.nombre",
            "top_productos results have no field 'productos.0.nombre' "
            "(fields of productos.0: sku, producto, categoria, unidades, total)",
        ),
        (
            TOP,
            "op1.productos.producto",
            "'productos' is a list: use an index, as in 'op1.productos.0.producto'",
        ),
        (TOP, "op1.anio.valor", "'anio' is a single value (integer) with no fields"),
        (
            TOP,
            "op1.nombre_del_campo",
            "top_productos results have no field 'nombre_del_campo' (fields: alcance, anio, productos)",
        ),
        (PENDING, "op1.facturas.0.nombre", "(fields of facturas.0: numero, cliente, fecha, total)"),
        (PENDING, "op1.cliente.nombre", "'cliente' is a single value (string or null) with no fields"),
    ],
)
def test_refs_to_fields_the_result_model_does_not_have_are_refused(
    registry: OperationRegistry, first: dict[str, Any], path: str, expected: str
) -> None:
    [message] = messages(registry, two_step(first, path))
    assert f"dangling $ref {path!r}" in message
    assert expected in message


def test_a_ref_into_a_text_field_is_refused_with_the_toy_registry(toy_registry: OperationRegistry) -> None:
    [message] = messages(toy_registry, two_step(op("mejor_cliente", anio=2025), "op1.cliente.nombre"))
    assert "'cliente' is a single value (string) with no fields" in message


def test_the_prompts_placeholder_operation_is_refused_listing_the_real_ones(
    toy_registry: OperationRegistry,
) -> None:
    [message] = messages(toy_registry, plan(op("nombre_de_operacion", "op1", parametro="valor")))
    assert "La operación 'nombre_de_operacion' no existe" in message
    assert "ventas_anuales, mejor_cliente, compras_cliente" in message


class Free(BaseModel):
    """A result with open-ended parts: nothing below them can be checked."""

    datos: dict[str, Any]
    cualquiera: Any = None
    conteos: dict[str, int] = {}
    filas: list[dict[str, Any]] = []


class Loose(BaseModel):
    """A result model that keeps whatever the handler returns."""

    model_config = ConfigDict(extra="allow")

    total: int = 0


def free_registry(result_model: type[BaseModel]) -> OperationRegistry:
    return OperationRegistry(
        [
            Operation("libre", "Resultado libre.", NoParams, result_model, lambda _s, _p: result_model()),
            Operation("usar", "Usa un valor.", ValueParams, Free, lambda _s, _p: Free(datos={})),
        ]
    )


class NoParams(BaseModel):
    pass


class ValueParams(BaseModel):
    valor: Any = Field(description="Cualquier valor.")


@pytest.mark.parametrize(
    ("result_model", "path"),
    [
        (Free, "op1.datos.lo.que.sea"),
        (Free, "op1.cualquiera.x.0"),
        (Free, "op1.conteos.enero"),
        (Free, "op1.filas.0.columna"),
        (Loose, "op1.extra.campo"),
        (BaseModel, "op1.lo_que_sea"),
    ],
    ids=["dict-any", "any", "dict-of-int", "list-of-dicts", "extra-allowed", "unknown-result-model"],
)
def test_refs_below_open_ended_result_parts_are_not_refused(result_model: type[BaseModel], path: str) -> None:
    p = plan(op("libre", "op1"), op("usar", valor=ref(path)))
    assert messages(free_registry(result_model), p) == []


def test_a_ref_below_a_typed_value_of_an_open_dict_is_refused() -> None:
    p = plan(op("libre", "op1"), op("usar", valor=ref("op1.conteos.enero.x")))
    [message] = messages(free_registry(Free), p)
    assert "'conteos.enero' is a single value (integer) with no fields" in message
