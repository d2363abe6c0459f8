"""Row-level scope on the seeded demo ERP: bruno never sees Empresa ABC, ana does, the manager sees it all."""

from __future__ import annotations

import json
from typing import Any

import pytest
from sqlalchemy import select

from shared.erp.database import Erp
from shared.erp.models import Customer
from shared.errors import CustomerNotFoundError, CustomerOutOfScopeError, OperationError, UnknownCallerError
from shared.operations.registry import OperationRegistry
from shared.operations.sales import sales_registry
from shared.operations.sales_queries import OWN_CUSTOMERS_SCOPE
from shared.security import DEMO_CALLER, Caller
from tests.shared.erp.test_seed import sales_by_customer
from tests.shared.operations.conftest import ANA, ANALYST_POLICY, BRUNO, GERENTE

ABC = "Empresa ABC"
ABC_2025 = 120_000_000


def _customer_totals(erp: Erp, year: int, vendedor: str) -> dict[str, int]:
    return dict(sales_by_customer(erp, year, vendedor))


def _own_customers(erp: Erp, vendedor: str) -> list[str]:
    with erp.session() as session:
        return list(session.scalars(select(Customer.name).where(Customer.vendedor == vendedor)))


def _every_request(customers: list[str]) -> list[tuple[str, dict[str, Any]]]:
    """Requests through all eight operations, over every year, month and a spread of search texts."""
    requests: list[tuple[str, dict[str, Any]]] = []
    for year in (2023, 2024, 2025, 2026):
        requests += [
            ("ventas_anuales", {"anio": year}),
            ("mejor_cliente", {"anio": year}),
            ("ventas_mensuales", {"anio": year}),
            ("top_productos", {"anio": year, "limite": 50}),
            ("ventas_por_categoria", {"anio": year}),
        ]
        requests += [("ventas_mensuales", {"anio": year, "mes": month}) for month in range(1, 13)]
        requests += [("compras_cliente", {"cliente": name, "anio": year}) for name in customers]
    requests += [("facturas_pendientes", {})]
    requests += [("facturas_pendientes", {"cliente": name}) for name in customers]
    texts = [
        "Empresa",
        "ABC",
        "abc",
        "Empresa ABD",
        "Empresa ABCD",
        "emprsa",
        "a",
        "S.A.",
        "800",
        "8000",
        "E",
    ]
    for text in texts:
        requests += [
            ("buscar_cliente", {"texto": text}),
            ("compras_cliente", {"cliente": text, "anio": 2025}),
        ]
        requests += [("facturas_pendientes", {"cliente": text})]
    return requests


@pytest.fixture(scope="module")
def analyst_registry() -> OperationRegistry:
    """Salespeople may also run ``ventas_por_categoria`` here, so its scoping is exercised too."""
    return sales_registry(ANALYST_POLICY)


def test_bruno_never_sees_empresa_abc_through_any_operation(
    analyst_registry: OperationRegistry, erp: Erp
) -> None:
    with erp.session() as session:
        abc_ruc = session.scalar(select(Customer.ruc).where(Customer.name == ABC))
    assert abc_ruc is not None
    requests = _every_request(_own_customers(erp, "bruno"))
    requests += [("buscar_cliente", {"texto": abc_ruc}), ("buscar_cliente", {"texto": abc_ruc[:6]})]
    seen: list[str] = []
    for name, params in requests:
        try:
            output = json.dumps(analyst_registry.execute(erp, name, params, caller=BRUNO), ensure_ascii=False)
        except OperationError as exc:
            output = f"{exc} {getattr(exc, 'suggestions', [])}"
        # Results and errors echo the text bruno typed (which may be "ABC"); only the rest may not leak.
        echoed = params.get("texto") or params.get("cliente") or ""
        seen.append(output.replace(json.dumps(echoed, ensure_ascii=False), "").replace(repr(echoed), ""))
    text = "\n".join(seen)
    assert "ABC" not in text
    assert str(ABC_2025) not in text and "120.000.000" not in text
    assert abc_ruc not in text
    assert sum('"total": 0' not in s for s in seen) > 50  # bruno saw plenty of his own figures


def test_bruno_cannot_tell_empresa_abc_from_a_customer_that_does_not_exist(
    registry: OperationRegistry, erp: Erp
) -> None:
    for name, params in [
        ("compras_cliente", {"cliente": ABC, "anio": 2025}),
        ("compras_cliente", {"cliente": ABC.lower(), "anio": 2025}),
        ("facturas_pendientes", {"cliente": ABC}),
    ]:
        with pytest.raises(CustomerOutOfScopeError) as theirs:
            registry.execute(erp, name, params, caller=BRUNO)
        invented = {**params, "cliente": params["cliente"].replace("ABC", "QXZ").replace("abc", "qxz")}
        with pytest.raises(CustomerNotFoundError) as nobody:
            registry.execute(erp, name, invented, caller=BRUNO)
        assert str(theirs.value).replace("ABC", "QXZ").replace("abc", "qxz") == str(nobody.value)
    # A part of the name is not enough to learn that someone else has such a customer.
    with pytest.raises(CustomerNotFoundError) as probed:
        registry.execute(erp, "compras_cliente", {"cliente": "abc", "anio": 2025}, caller=BRUNO)
    assert "ABC" not in " ".join(probed.value.suggestions)


def test_bruno_figures_are_those_of_his_customers(registry: OperationRegistry, erp: Erp) -> None:
    own = _customer_totals(erp, 2025, "bruno")
    assert ABC not in own and len(own) >= 10
    for name in ("ventas_anuales", "ventas_mensuales"):
        assert registry.execute(erp, name, {"anio": 2025}, caller=BRUNO)["total"] == sum(own.values()) > 0
    best = max(own, key=lambda name: own[name])
    assert registry.execute(erp, "mejor_cliente", {"anio": 2025}, caller=BRUNO) == {
        "alcance": OWN_CUSTOMERS_SCOPE,
        "anio": 2025,
        "cliente": best,
        "total": own[best],
    }


def test_ana_sees_empresa_abc(registry: OperationRegistry, erp: Erp) -> None:
    assert registry.execute(erp, "mejor_cliente", {"anio": 2025}, caller=ANA) == {
        "alcance": OWN_CUSTOMERS_SCOPE,
        "anio": 2025,
        "cliente": ABC,
        "total": ABC_2025,
    }
    purchases = registry.execute(erp, "compras_cliente", {"cliente": "abc", "anio": 2025}, caller=ANA)
    assert purchases["total"] == ABC_2025
    found = registry.execute(erp, "buscar_cliente", {"texto": "ABC"}, caller=ANA)
    assert [c["nombre"] for c in found["clientes"]] == [ABC]
    own = _customer_totals(erp, 2025, "ana")
    assert registry.execute(erp, "ventas_anuales", {"anio": 2025}, caller=ANA)["total"] == sum(own.values())


def test_ana_and_bruno_together_make_the_whole_company(registry: OperationRegistry, erp: Erp) -> None:
    for year in (2023, 2024, 2025, 2026):
        every = registry.execute(erp, "ventas_anuales", {"anio": year}, caller=GERENTE)
        ana = registry.execute(erp, "ventas_anuales", {"anio": year}, caller=ANA)
        bruno = registry.execute(erp, "ventas_anuales", {"anio": year}, caller=BRUNO)
        assert ana["total"] + bruno["total"] == every["total"]
        assert ana["facturas"] + bruno["facturas"] == every["facturas"]
    pending = [registry.execute(erp, "facturas_pendientes", {}, caller=c)["cantidad"] for c in (ANA, BRUNO)]
    assert sum(pending) == registry.execute(erp, "facturas_pendientes", {}, caller=GERENTE)["cantidad"]
    assert all(pending)


def test_the_manager_sees_what_the_demo_caller_sees(registry: OperationRegistry, erp: Erp) -> None:
    for name, params in _every_request([ABC, "Importadora del Este S.A."]):
        try:
            default = registry.execute(erp, name, params, caller=DEMO_CALLER)
        except OperationError as exc:
            with pytest.raises(type(exc), match=r"."):
                registry.execute(erp, name, params, caller=GERENTE)
            continue
        assert registry.execute(erp, name, params, caller=GERENTE) == default
    assert DEMO_CALLER.roles == GERENTE.roles


# -- saying whose figures they are ---------------------------------------------------------------------------


SCOPED_REQUESTS = [
    ("ventas_anuales", {"anio": 2025}),
    ("mejor_cliente", {"anio": 2025}),
    ("ventas_mensuales", {"anio": 2025}),
    ("top_productos", {"anio": 2025}),
    ("ventas_por_categoria", {"anio": 2025}),
    ("facturas_pendientes", {}),
    ("buscar_cliente", {"texto": "S.A."}),
]
"""Every result computed over the customers a caller sees."""


@pytest.mark.parametrize(("name", "params"), SCOPED_REQUESTS, ids=[name for name, _ in SCOPED_REQUESTS])
def test_a_salespersons_results_say_they_are_their_customers_only(
    analyst_registry: OperationRegistry, erp: Erp, name: str, params: dict[str, Any]
) -> None:
    theirs = analyst_registry.execute(erp, name, params, caller=ANA)
    everyones = analyst_registry.execute(erp, name, params, caller=GERENTE)

    assert next(iter(theirs.items())) == ("alcance", OWN_CUSTOMERS_SCOPE)  # read before any figure
    assert "alcance" not in everyones


def test_one_customers_figures_need_no_scope(registry: OperationRegistry, erp: Erp) -> None:
    for name, params in [
        ("compras_cliente", {"cliente": ABC, "anio": 2025}),
        ("facturas_pendientes", {"cliente": ABC}),
    ]:
        assert "alcance" not in registry.execute(erp, name, params, caller=ANA)


def test_a_pending_listing_cut_short_says_which_invoices_it_lists(
    registry: OperationRegistry, erp: Erp
) -> None:
    pending = registry.execute(erp, "facturas_pendientes", {}, caller=GERENTE)
    one = registry.execute(erp, "facturas_pendientes", {"cliente": "Farmacia Itapúa"}, caller=GERENTE)

    assert pending["cantidad"] > len(pending["facturas"]) == 20
    assert pending["listado"] == f"las 20 más antiguas de {pending['cantidad']}"
    assert one["cantidad"] == len(one["facturas"]) and "listado" not in one


@pytest.mark.parametrize(
    ("name", "params"), [*SCOPED_REQUESTS[:4], ("compras_cliente", {"cliente": ABC, "anio": 2025})]
)
def test_a_scoped_caller_the_erp_does_not_know_is_refused_never_answered_zero(
    registry: OperationRegistry, erp: Erp, name: str, params: dict[str, Any]
) -> None:
    zoe = Caller(user_id="zoe", roles=frozenset({"ventas"}))

    with pytest.raises(UnknownCallerError, match="El usuario 'zoe' no figura entre los usuarios del ERP"):
        registry.execute(erp, name, params, caller=zoe)
