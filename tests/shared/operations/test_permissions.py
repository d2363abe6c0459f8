"""Permissions: what each caller is offered, and that a forbidden operation never runs."""

from __future__ import annotations

import json
from typing import Annotated

import pytest
from pydantic import BaseModel, Field

from shared.erp.database import Erp
from shared.errors import InvalidParametersError, OperationForbiddenError, UnknownOperationError
from shared.operations.registry import OperationRegistry
from shared.operations.sales import sales_registry
from shared.security import DEMO_CALLER, DEMO_POLICY, Caller, OperationContext
from tests.shared.operations.conftest import ANA, ANALYST_POLICY, BRUNO, GERENTE

NOBODY = Caller(user_id="visita", roles=frozenset({"desconocido"}))

ALL_SALES = [
    "ventas_anuales",
    "mejor_cliente",
    "compras_cliente",
    "ventas_mensuales",
    "top_productos",
    "ventas_por_categoria",
    "facturas_pendientes",
    "buscar_cliente",
]
SALESPERSON = [name for name in ALL_SALES if name != "ventas_por_categoria"]


# -- the sales registry per role -----------------------------------------------------------------------------
def test_each_sales_operation_states_what_it_requires(registry: OperationRegistry) -> None:
    assert {op.name: set(op.requires) for op in registry} == {
        "ventas_anuales": {"ventas:leer"},
        "mejor_cliente": {"ventas:leer"},
        "compras_cliente": {"ventas:leer"},
        "ventas_mensuales": {"ventas:leer"},
        "top_productos": {"ventas:leer"},
        "ventas_por_categoria": {"ventas:analisis"},
        "facturas_pendientes": {"cobranzas:leer"},
        "buscar_cliente": {"ventas:leer"},
    }


@pytest.mark.parametrize(
    ("caller", "expected"),
    [(GERENTE, ALL_SALES), (ANA, SALESPERSON), (BRUNO, SALESPERSON), (NOBODY, [])],
    ids=["gerente", "ana", "bruno", "unknown-role"],
)
def test_catalog_names_and_tools_differ_per_role(
    registry: OperationRegistry, erp: Erp, caller: Caller, expected: list[str]
) -> None:
    assert [spec.name for spec in registry.catalog(caller)] == expected
    assert registry.names(caller) == expected
    assert [tool.name for tool in registry.langchain_tools(erp, caller=caller)] == expected
    assert [name for name in ALL_SALES if registry.permits(caller, name)] == expected


def test_without_a_caller_everything_defaults_to_the_demo_manager(
    registry: OperationRegistry, erp: Erp
) -> None:
    assert DEMO_CALLER.user_id == "gerente"
    assert [t.name for t in registry.langchain_tools(erp, caller=DEMO_CALLER)] == ALL_SALES
    assert registry.names() == ALL_SALES  # names() without a caller: every operation


def test_a_salesperson_catalog_is_the_managers_minus_the_forbidden_specs(registry: OperationRegistry) -> None:
    everything = {spec.name: spec for spec in registry.catalog(GERENTE)}
    assert registry.catalog(BRUNO) == [everything[name] for name in SALESPERSON]


def test_denied_names_what_a_role_may_not_run_by_name_and_description_only(
    registry: OperationRegistry,
) -> None:
    assert registry.denied(GERENTE) == []
    (line,) = registry.denied(BRUNO)
    assert line.startswith('"ventas_por_categoria": ') and line.endswith(
        registry.get("ventas_por_categoria").description
    )
    assert len(registry.denied(NOBODY)) == len(ALL_SALES)


def test_permits_an_unknown_operation_to_nobody_and_get_ignores_the_caller(
    registry: OperationRegistry,
) -> None:
    assert not registry.permits(GERENTE, "borrar_facturas")
    # The planner's validation reads result models through get(); permission is checked by validate().
    assert registry.get("ventas_por_categoria").name == "ventas_por_categoria"


def test_a_registry_copy_can_carry_another_policy() -> None:
    assert sales_registry(ANALYST_POLICY).names(BRUNO) == ALL_SALES
    assert sales_registry().names(BRUNO) == SALESPERSON
    assert sales_registry().policy is DEMO_POLICY


# -- refusals ------------------------------------------------------------------------------------------------
def test_validate_refuses_a_forbidden_operation_before_its_parameters(registry: OperationRegistry) -> None:
    with pytest.raises(OperationForbiddenError) as info:
        registry.validate("ventas_por_categoria", {"anio": "no es un año"}, caller=BRUNO)
    assert info.value.operation == "ventas_por_categoria"
    assert info.value.missing == ["ventas:analisis"]
    assert "no se ejecutó" in str(info.value)
    # The manager gets the parameter error for the same request.
    with pytest.raises(InvalidParametersError):
        registry.validate("ventas_por_categoria", {"anio": "no es un año"}, caller=GERENTE)


def test_an_unknown_operation_lists_only_what_the_caller_may_run(
    registry: OperationRegistry, erp: Erp
) -> None:
    with pytest.raises(UnknownOperationError) as info:
        registry.validate("borrar_facturas", {}, caller=BRUNO)
    assert info.value.available == SALESPERSON
    assert "ventas_por_categoria" not in str(info.value)
    with pytest.raises(UnknownOperationError) as everything:
        registry.execute(erp, "ventas_totales", {"anio": 2025}, caller=DEMO_CALLER)
    assert (everything.value.name, everything.value.available) == ("ventas_totales", ALL_SALES)
    assert "Operaciones válidas: ventas_anuales, mejor_cliente" in str(everything.value)


class _Total(BaseModel):
    total: int


@pytest.fixture
def spied() -> tuple[OperationRegistry, list[Caller]]:
    """A registry whose one operation needs ``ventas:analisis`` and records every caller it ran for."""
    registry = OperationRegistry()
    runs: list[Caller] = []

    @registry.operation(requires={"ventas:analisis"})
    def analisis(ctx: OperationContext, anio: Annotated[int, Field(description="Año.")]) -> _Total:
        """Análisis reservado a gerencia."""
        runs.append(ctx.caller)
        return _Total(total=anio)

    return registry, runs


def test_a_forbidden_handler_never_runs_and_a_tool_runs_as_the_caller_it_was_built_for(
    spied: tuple[OperationRegistry, list[Caller]], erp: Erp
) -> None:
    registry, runs = spied
    with pytest.raises(OperationForbiddenError):
        registry.execute(erp, "analisis", {"anio": 2025}, caller=BRUNO)
    assert registry.langchain_tools(erp, caller=BRUNO) == []  # no tool of his either
    assert runs == []
    assert registry.execute(erp, "analisis", {"anio": 2025}, caller=GERENTE) == {"total": 2025}
    [tool] = registry.langchain_tools(erp, caller=GERENTE)
    assert json.loads(tool.invoke({"anio": 2024})) == {"total": 2024}
    assert runs == [GERENTE, GERENTE]
