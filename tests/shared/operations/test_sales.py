"""Each sales operation against the hand-built ERP of ``conftest.py``, for the manager and within one
salesperson's customers; expected values worked out by hand.

ABC is ana's customer; Ñandutí and Sur are bruno's; carla has none. A salesperson sees only their
customers' invoices: bruno, 2025: F-003 (Ñandutí, 100.000) + F-005 (Sur, 28.000) = 128.000 in 2 invoices;
ana, 2025: F-001 + F-002 (ABC) = 80.000 in 2 invoices. Pending: bruno F-008 15.000, F-005 28.000, F-007
16.000 (3, 59.000); ana F-002 40.000. How customer names resolve, and what a search or a miss suggests, is
``tests/shared/erp/test_customers.py``; these pin that every operation passes the lookup and the caller's
scope down.
"""

from __future__ import annotations

from datetime import date
from typing import Any

import pytest

from shared.erp.database import Erp
from shared.erp.models import Invoice, InvoiceLine
from shared.errors import CustomerNotFoundError, CustomerOutOfScopeError, DomainError
from shared.operations.registry import OperationRegistry
from shared.operations.sales import MAX_PENDING_LISTED, sales_registry
from shared.operations.sales_queries import OWN_CUSTOMERS_SCOPE
from shared.security import DEMO_CALLER, Caller
from tests.shared.operations.conftest import ANA, ANALYST_POLICY, BRUNO, build_tiny_erp

CARLA = Caller(user_id="carla", roles=frozenset({"ventas"}))
"""A salesperson with no customers at all."""
OWN = {"alcance": OWN_CUSTOMERS_SCOPE}
"""What a result computed over a salesperson's own customers adds: whose figures they are."""


@pytest.fixture(scope="module")
def ops() -> OperationRegistry:
    return sales_registry(ANALYST_POLICY)


@pytest.fixture
def run(ops: OperationRegistry, tiny_erp: Erp) -> Any:
    def call(name: str, caller: Caller = DEMO_CALLER, **params: Any) -> dict[str, Any]:
        return ops.execute(tiny_erp, name, params, caller=caller)

    return call


# -- ventas_anuales ------------------------------------------------------------------------------------------
def test_ventas_anuales_sums_the_callers_non_cancelled_invoices_from_jan_1_to_dec_31(run: Any) -> None:
    assert run("ventas_anuales", anio=2025) == {"anio": 2025, "total": 208_000, "facturas": 4}
    # 2024: F-006 (Dec 31) 500.000 + F-008 15.000; 2026: F-007 (Jan 1) 16.000.
    assert run("ventas_anuales", anio=2024) == {"anio": 2024, "total": 515_000, "facturas": 2}
    assert run("ventas_anuales", anio=2026) == {"anio": 2026, "total": 16_000, "facturas": 1}
    assert run("ventas_anuales", anio=2023) == {"anio": 2023, "total": 0, "facturas": 0}
    assert run("ventas_anuales", BRUNO, anio=2025) == OWN | {"anio": 2025, "total": 128_000, "facturas": 2}
    assert run("ventas_anuales", ANA, anio=2025) == OWN | {"anio": 2025, "total": 80_000, "facturas": 2}
    assert run("ventas_anuales", ANA, anio=2024) == OWN | {"anio": 2024, "total": 500_000, "facturas": 1}


def test_a_caller_without_customers_sees_zero(run: Any) -> None:
    assert run("ventas_anuales", CARLA, anio=2025) == OWN | {"anio": 2025, "total": 0, "facturas": 0}
    nothing_pending = {"cliente": None, "cantidad": 0, "total": 0, "facturas": []}
    assert run("facturas_pendientes", CARLA) == OWN | nothing_pending
    assert run("buscar_cliente", CARLA, texto="Empresa") == OWN | {"texto": "Empresa", "clientes": []}
    with pytest.raises(DomainError, match="No hay ventas en 2025"):
        run("mejor_cliente", CARLA, anio=2025)


# -- mejor_cliente -------------------------------------------------------------------------------------------
def test_mejor_cliente_ranks_the_callers_customers_ignoring_cancelled_invoices(run: Any) -> None:
    # Ñandutí's cancelled 500.000 would make it best by far; its real 2025 purchases are 100.000.
    best = {"anio": 2025, "cliente": "Distribuidora Ñandutí S.A.", "total": 100_000}
    assert run("mejor_cliente", anio=2025) == best
    assert run("mejor_cliente", anio=2024) == {"anio": 2024, "cliente": "Empresa ABC", "total": 500_000}
    assert run("mejor_cliente", ANA, anio=2025) == OWN | {
        "anio": 2025,
        "cliente": "Empresa ABC",
        "total": 80_000,
    }
    # 2024: ABC's 500.000 is the year's best, but not bruno's customer; his best is Ñandutí's pending 15.000.
    assert run("mejor_cliente", BRUNO, anio=2024) == OWN | best | {"anio": 2024, "total": 15_000}


def test_mejor_cliente_breaks_a_tie_by_name(ops: OperationRegistry, db_url: str) -> None:
    # 2026 holds only Sur's F-007 (16.000); one more 16.000 invoice for ABC makes a tie.
    erp = build_tiny_erp(db_url)
    try:
        with erp.session() as session:
            session.add(
                Invoice(
                    id=9,
                    number="F-009",
                    customer_id=1,
                    issue_date=date(2026, 2, 1),
                    status="paid",
                    total=16_000,
                    lines=[InvoiceLine(product_id=3, quantity=2, unit_price=8_000, amount=16_000)],
                )
            )
        assert ops.execute(erp, "mejor_cliente", {"anio": 2026}, caller=DEMO_CALLER) == {
            "anio": 2026,
            "cliente": "Distribuidora del Sur S.R.L.",
            "total": 16_000,
        }
    finally:
        erp.engine.dispose()


def test_mejor_cliente_without_sales_is_a_domain_error(run: Any) -> None:
    with pytest.raises(DomainError, match="No hay ventas en 2023") as info:
        run("mejor_cliente", anio=2023)
    assert info.value.operation == "mejor_cliente"


# -- compras_cliente and the customer lookup -----------------------------------------------------------------
def test_compras_cliente_returns_the_canonical_name(run: Any) -> None:
    assert run("compras_cliente", cliente="empresa abc", anio=2025) == {
        "cliente": "Empresa ABC",
        "anio": 2025,
        "total": 80_000,
        "facturas": 2,
    }
    assert run("compras_cliente", BRUNO, cliente="nanduti", anio=2025)["total"] == 100_000


@pytest.mark.parametrize("operation", ["compras_cliente", "facturas_pendientes"])
def test_an_ambiguous_or_unknown_customer_fails_naming_the_operation_and_the_candidates(
    run: Any, operation: str
) -> None:
    year = {"anio": 2025} if operation == "compras_cliente" else {}
    with pytest.raises(CustomerNotFoundError) as ambiguous:
        run(operation, cliente="distribuidora", **year)
    assert ambiguous.value.suggestions == ["Distribuidora del Sur S.R.L.", "Distribuidora Ñandutí S.A."]
    with pytest.raises(CustomerNotFoundError, match="Empresa ABD") as unknown:
        run(operation, cliente="Empresa ABD", **year)
    assert (unknown.value.operation, unknown.value.query) == (operation, "Empresa ABD")
    assert unknown.value.suggestions == ["Empresa ABC"]
    assert "Clientes más parecidos: Empresa ABC" in str(unknown.value)


@pytest.mark.parametrize("operation", ["compras_cliente", "facturas_pendientes"])
def test_another_salespersons_customer_is_out_of_scope(run: Any, operation: str) -> None:
    year = {"anio": 2025} if operation == "compras_cliente" else {}
    with pytest.raises(CustomerOutOfScopeError) as info:
        run(operation, BRUNO, cliente="empresa abc", **year)
    assert info.value.operation == operation
    assert "80.000" not in str(info.value) and "80000" not in str(info.value)


# -- ventas_mensuales ----------------------------------------------------------------------------------------
def test_ventas_mensuales_lists_all_twelve_months(run: Any) -> None:
    result = run("ventas_mensuales", anio=2025)
    expected = {m: 0 for m in range(1, 13)} | {1: 40_000, 3: 140_000, 12: 28_000}
    assert (result["anio"], result["mes"], result["total"]) == (2025, None, 208_000)
    assert result["meses"] == [{"mes": m, "total": t} for m, t in expected.items()]
    bruno = run("ventas_mensuales", BRUNO, anio=2025)
    assert bruno["total"] == 128_000
    assert {m["mes"]: m["total"] for m in bruno["meses"] if m["total"]} == {3: 100_000, 12: 28_000}


def test_ventas_mensuales_of_one_month(run: Any) -> None:
    assert run("ventas_mensuales", anio=2025, mes=3) == {
        "anio": 2025,
        "mes": 3,
        "total": 140_000,
        "meses": [{"mes": 3, "total": 140_000}],
    }
    assert run("ventas_mensuales", anio=2025, mes=2)["total"] == 0
    # December ends on Dec 31: F-005 (28.000) counts; the cancelled F-004 does not, nor F-007 of 2026-01-01.
    assert run("ventas_mensuales", anio=2025, mes=12)["meses"] == [{"mes": 12, "total": 28_000}]
    assert run("ventas_mensuales", ANA, anio=2025, mes=3)["total"] == 40_000  # F-002; F-003 is bruno's


# -- top_productos -------------------------------------------------------------------------------------------
def test_top_productos_orders_by_amount_and_counts_units(run: Any) -> None:
    # YER: 3 + 10 units = 130.000; DET: 5 + 1 = 48.000; GAS: 2 + 4 = 30.000 (the cancelled 100 excluded).
    assert run("top_productos", anio=2025) == {
        "anio": 2025,
        "productos": [
            {
                "sku": "YER",
                "producto": "Yerba mate 1 kg",
                "categoria": "Almacén",
                "unidades": 13,
                "total": 130_000,
            },
            {
                "sku": "DET",
                "producto": "Detergente 750 ml",
                "categoria": "Limpieza",
                "unidades": 6,
                "total": 48_000,
            },
            {"sku": "GAS", "producto": "Gaseosa 2 L", "categoria": "Bebidas", "unidades": 6, "total": 30_000},
        ],
    }
    assert [p["sku"] for p in run("top_productos", anio=2025, limite=2)["productos"]] == ["YER", "DET"]


@pytest.mark.parametrize(
    ("caller", "expected"),
    [
        (BRUNO, [("YER", 10, 100_000), ("GAS", 4, 20_000), ("DET", 1, 8_000)]),
        (ANA, [("DET", 5, 40_000), ("YER", 3, 30_000), ("GAS", 2, 10_000)]),
    ],
    ids=["bruno", "ana"],
)
def test_top_productos_counts_only_the_callers_customers(
    run: Any, caller: Caller, expected: list[tuple[str, int, int]]
) -> None:
    top = run("top_productos", caller, anio=2025)["productos"]
    assert [(p["sku"], p["unidades"], p["total"]) for p in top] == expected


# -- ventas_por_categoria ------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("caller", "total", "categories"),
    [
        (DEMO_CALLER, 208_000, [("Almacén", 130_000), ("Limpieza", 48_000), ("Bebidas", 30_000)]),
        (BRUNO, 128_000, [("Almacén", 100_000), ("Bebidas", 20_000), ("Limpieza", 8_000)]),
    ],
    ids=["manager", "bruno"],
)
def test_ventas_por_categoria_groups_the_callers_lines_by_category(
    run: Any, caller: Caller, total: int, categories: list[tuple[str, int]]
) -> None:
    scope = {} if caller is DEMO_CALLER else OWN
    assert run("ventas_por_categoria", caller, anio=2025) == scope | {
        "anio": 2025,
        "total": total,
        "categorias": [{"categoria": name, "total": amount} for name, amount in categories],
    }
    assert run("ventas_por_categoria", caller, anio=2023) == scope | {
        "anio": 2023,
        "total": 0,
        "categorias": [],
    }


# -- facturas_pendientes -------------------------------------------------------------------------------------
def test_facturas_pendientes_of_all_customers_oldest_first(run: Any) -> None:
    nanduti, sur = "Distribuidora Ñandutí S.A.", "Distribuidora del Sur S.R.L."
    assert run("facturas_pendientes") == {
        "cliente": None,
        "cantidad": 4,
        "total": 99_000,
        "facturas": [
            {"numero": "F-008", "cliente": nanduti, "fecha": "2024-06-15", "total": 15_000},
            {"numero": "F-002", "cliente": "Empresa ABC", "fecha": "2025-03-05", "total": 40_000},
            {"numero": "F-005", "cliente": sur, "fecha": "2025-12-31", "total": 28_000},
            {"numero": "F-007", "cliente": sur, "fecha": "2026-01-01", "total": 16_000},
        ],
    }


def test_facturas_pendientes_lists_only_the_callers_customers(run: Any) -> None:
    result = run("facturas_pendientes", BRUNO)
    assert (result["cantidad"], result["total"]) == (3, 59_000)
    assert [f["numero"] for f in result["facturas"]] == ["F-008", "F-005", "F-007"]
    assert run("facturas_pendientes", ANA)["facturas"] == [
        {"numero": "F-002", "cliente": "Empresa ABC", "fecha": "2025-03-05", "total": 40_000}
    ]


@pytest.mark.parametrize("caller", [DEMO_CALLER, BRUNO], ids=["manager", "bruno"])
def test_facturas_pendientes_of_one_customer(run: Any, caller: Caller) -> None:
    result = run("facturas_pendientes", caller, cliente="del sur")
    assert (result["cliente"], result["cantidad"], result["total"]) == (
        "Distribuidora del Sur S.R.L.",
        2,
        44_000,
    )
    assert [f["numero"] for f in result["facturas"]] == ["F-005", "F-007"]


def test_facturas_pendientes_lists_at_most_twenty_but_counts_all(
    registry: OperationRegistry, erp: Erp
) -> None:
    result = registry.execute(erp, "facturas_pendientes", {}, caller=DEMO_CALLER)
    assert len(result["facturas"]) == MAX_PENDING_LISTED == 20
    assert result["cantidad"] > 20
    assert result["total"] > sum(f["total"] for f in result["facturas"])
    dates = [f["fecha"] for f in result["facturas"]]
    assert dates == sorted(dates)


# -- buscar_cliente ------------------------------------------------------------------------------------------
def test_buscar_cliente_by_part_of_the_name_without_accents(run: Any) -> None:
    assert run("buscar_cliente", texto="DISTRIBUIDORA") == {
        "texto": "DISTRIBUIDORA",
        "clientes": [
            {"nombre": "Distribuidora del Sur S.R.L.", "ruc": "80012345-0", "ciudad": "Encarnación"},
            {"nombre": "Distribuidora Ñandutí S.A.", "ruc": "80009735-1", "ciudad": "Itauguá"},
        ],
    }


@pytest.mark.parametrize(
    ("texto", "found"),
    [
        ("80009735", ["Distribuidora Ñandutí S.A."]),  # a RUC prefix
        ("Empreza ABC", ["Empresa ABC"]),  # a typo falls back to similar names
        ("zzzz", []),
        ("%", []),  # LIKE wildcards are literal
    ],
)
def test_buscar_cliente_by_ruc_typo_or_nothing(run: Any, texto: str, found: list[str]) -> None:
    assert [c["nombre"] for c in run("buscar_cliente", texto=texto)["clientes"]] == found
