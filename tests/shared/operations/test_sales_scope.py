"""Row-level scope of every sales operation, on the hand-built ERP of ``conftest.py`` (values by hand).

ABC is ana's customer; Ñandutí and Sur are bruno's. A salesperson sees only their customers' invoices.

bruno, 2025: F-003 (Ñandutí, 100.000) + F-005 (Sur, 28.000) = 128.000 in 2 invoices; ana, 2025: F-001 +
F-002 (ABC) = 80.000 in 2 invoices. Pending: bruno F-008 15.000, F-005 28.000, F-007 16.000 (3, 59.000);
ana F-002 40.000. How a salesperson's customer names resolve, and what a search or a miss suggests, is
``tests/shared/erp/test_customers.py``; these pin that every operation passes the caller's scope down.
"""

from __future__ import annotations

from typing import Any

import pytest

from shared.erp.database import Erp
from shared.errors import CustomerOutOfScopeError, DomainError
from shared.operations.registry import OperationRegistry
from shared.operations.sales import sales_registry
from shared.security import Caller, RolePolicy

ANA = Caller(user_id="ana", roles=frozenset({"ventas"}))
BRUNO = Caller(user_id="bruno", roles=frozenset({"ventas"}))
CARLA = Caller(user_id="carla", roles=frozenset({"ventas"}))
"""A salesperson with no customers at all."""

ANALYST_POLICY = RolePolicy(roles={"ventas": frozenset({"ventas:leer", "ventas:analisis", "cobranzas:leer"})})
"""Salespeople who may also run ``ventas_por_categoria`` (still on their own customers only)."""


@pytest.fixture(scope="module")
def ops() -> OperationRegistry:
    return sales_registry(ANALYST_POLICY)


@pytest.fixture
def run(ops: OperationRegistry, tiny_erp: Erp) -> Any:
    def call(caller: Caller, name: str, **params: Any) -> dict[str, Any]:
        return ops.execute(tiny_erp, name, params, caller=caller)

    return call


def test_ventas_anuales_counts_only_the_callers_customers(run: Any) -> None:
    assert run(BRUNO, "ventas_anuales", anio=2025) == {"anio": 2025, "total": 128_000, "facturas": 2}
    assert run(ANA, "ventas_anuales", anio=2025) == {"anio": 2025, "total": 80_000, "facturas": 2}
    assert run(ANA, "ventas_anuales", anio=2024) == {"anio": 2024, "total": 500_000, "facturas": 1}


def test_a_caller_without_customers_sees_zero(run: Any) -> None:
    assert run(CARLA, "ventas_anuales", anio=2025) == {"anio": 2025, "total": 0, "facturas": 0}
    assert run(CARLA, "facturas_pendientes") == {"cliente": None, "cantidad": 0, "total": 0, "facturas": []}
    assert run(CARLA, "buscar_cliente", texto="Empresa") == {"texto": "Empresa", "clientes": []}
    with pytest.raises(DomainError, match="No hay ventas en 2025"):
        run(CARLA, "mejor_cliente", anio=2025)


def test_mejor_cliente_ranks_only_the_callers_customers(run: Any) -> None:
    assert run(ANA, "mejor_cliente", anio=2025) == {"anio": 2025, "cliente": "Empresa ABC", "total": 80_000}
    # 2024: ABC's 500.000 is the year's best, but not bruno's customer; his best is Ñandutí's pending 15.000.
    assert run(BRUNO, "mejor_cliente", anio=2024) == {
        "anio": 2024,
        "cliente": "Distribuidora Ñandutí S.A.",
        "total": 15_000,
    }


def test_ventas_mensuales_counts_only_the_callers_customers(run: Any) -> None:
    result = run(BRUNO, "ventas_mensuales", anio=2025)
    assert result["total"] == 128_000
    assert {m["mes"]: m["total"] for m in result["meses"] if m["total"]} == {3: 100_000, 12: 28_000}
    assert run(ANA, "ventas_mensuales", anio=2025, mes=3)["total"] == 40_000  # F-002; F-003 is bruno's


def test_top_productos_and_categories_count_only_the_callers_customers(run: Any) -> None:
    top = run(BRUNO, "top_productos", anio=2025)
    assert [(p["sku"], p["unidades"], p["total"]) for p in top["productos"]] == [
        ("YER", 10, 100_000),
        ("GAS", 4, 20_000),
        ("DET", 1, 8_000),
    ]
    top_ana = run(ANA, "top_productos", anio=2025)
    assert [(p["sku"], p["unidades"], p["total"]) for p in top_ana["productos"]] == [
        ("DET", 5, 40_000),
        ("YER", 3, 30_000),
        ("GAS", 2, 10_000),
    ]
    assert run(BRUNO, "ventas_por_categoria", anio=2025) == {
        "anio": 2025,
        "total": 128_000,
        "categorias": [
            {"categoria": "Almacén", "total": 100_000},
            {"categoria": "Bebidas", "total": 20_000},
            {"categoria": "Limpieza", "total": 8_000},
        ],
    }


def test_facturas_pendientes_lists_only_the_callers_customers(run: Any) -> None:
    result = run(BRUNO, "facturas_pendientes")
    assert (result["cantidad"], result["total"]) == (3, 59_000)
    assert [f["numero"] for f in result["facturas"]] == ["F-008", "F-005", "F-007"]
    assert run(ANA, "facturas_pendientes")["facturas"] == [
        {"numero": "F-002", "cliente": "Empresa ABC", "fecha": "2025-03-05", "total": 40_000}
    ]
    assert run(BRUNO, "facturas_pendientes", cliente="sur")["cantidad"] == 2


def test_compras_cliente_of_an_own_customer(run: Any) -> None:
    assert run(BRUNO, "compras_cliente", cliente="nanduti", anio=2025)["total"] == 100_000


@pytest.mark.parametrize("operation", ["compras_cliente", "facturas_pendientes"])
@pytest.mark.parametrize("written", ["Empresa ABC", "empresa abc", "EMPRESA ABC"])
def test_another_salespersons_customer_is_out_of_scope(run: Any, operation: str, written: str) -> None:
    params: dict[str, Any] = {"cliente": written} | ({"anio": 2025} if operation == "compras_cliente" else {})
    with pytest.raises(CustomerOutOfScopeError) as info:
        run(BRUNO, operation, **params)
    assert info.value.operation == operation
    assert "80.000" not in str(info.value) and "80000" not in str(info.value)
