"""A tiny hand-built ERP for the sales operation tests.

Every expected value in ``test_sales.py`` is computed by hand from the rows below (never by the code under
test). Amounts are ``quantity * unit price``:

=========  ========  ==========  =========  ===========================================  ========
invoice    customer  date        status     lines                                        total
=========  ========  ==========  =========  ===========================================  ========
F-001      ABC       2025-01-10  paid       YER x3 (30.000) + GAS x2 (10.000)            40.000
F-002      ABC       2025-03-05  pending    DET x5 (40.000)                              40.000
F-003      Ñandutí   2025-03-20  paid       YER x10 (100.000)                           100.000
F-004      Ñandutí   2025-12-31  cancelled  GAS x100 (500.000)                          500.000
F-005      Sur       2025-12-31  pending    GAS x4 (20.000) + DET x1 (8.000)             28.000
F-006      ABC       2024-12-31  paid       YER x50 (500.000)                           500.000
F-007      Sur       2026-01-01  pending    DET x2 (16.000)                              16.000
F-008      Ñandutí   2024-06-15  pending    GAS x3 (15.000)                              15.000
=========  ========  ==========  =========  ===========================================  ========

Products: YER (Yerba mate 1 kg, Almacén, 10.000), GAS (Gaseosa 2 L, Bebidas, 5.000),
DET (Detergente 750 ml, Limpieza, 8.000).

Salespeople (``vendedor``): ABC is ana's; Ñandutí and Sur are bruno's. ``gerente`` has no customers of
their own and sees everyone's (role ``gerencia``).
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import date

import pytest

from shared.erp.database import Erp, make_engine
from shared.erp.models import Customer, ErpBase, ErpUser, Invoice, InvoiceLine, Product
from shared.security import DEMO_POLICY, Caller, RolePolicy
from shared.text import fold
from tests.postgres import BACKENDS, fresh_url

GERENTE = Caller(user_id="gerente", roles=frozenset({"gerencia"}))
ANA = Caller(user_id="ana", roles=frozenset({"ventas"}))
BRUNO = Caller(user_id="bruno", roles=frozenset({"ventas"}))
ANALYST_POLICY = RolePolicy(
    roles={**DEMO_POLICY.roles, "ventas": DEMO_POLICY.roles["ventas"] | {"ventas:analisis"}}
)
"""The demo's roles, but salespeople may also run ``ventas_por_categoria`` (on their own customers only)."""

USERS = [
    ("gerente", "Gerencia", "gerencia"),
    ("ana", "Ana", "ventas"),
    ("bruno", "Bruno", "ventas"),
    ("carla", "Carla", "ventas"),  # no customers at all
]
CUSTOMERS = [
    (1, "Empresa ABC", "80000001-3", "Asunción", "ana"),
    (2, "Distribuidora Ñandutí S.A.", "80009735-1", "Itauguá", "bruno"),
    (3, "Distribuidora del Sur S.R.L.", "80012345-0", "Encarnación", "bruno"),
]
PRODUCTS = [
    (1, "YER", "Yerba mate 1 kg", "Almacén", 10_000),
    (2, "GAS", "Gaseosa 2 L", "Bebidas", 5_000),
    (3, "DET", "Detergente 750 ml", "Limpieza", 8_000),
]
# (id, number, customer_id, date, status, [(product_id, quantity, unit_price)])
INVOICES = [
    (1, "F-001", 1, date(2025, 1, 10), "paid", [(1, 3, 10_000), (2, 2, 5_000)]),
    (2, "F-002", 1, date(2025, 3, 5), "pending", [(3, 5, 8_000)]),
    (3, "F-003", 2, date(2025, 3, 20), "paid", [(1, 10, 10_000)]),
    (4, "F-004", 2, date(2025, 12, 31), "cancelled", [(2, 100, 5_000)]),
    (5, "F-005", 3, date(2025, 12, 31), "pending", [(2, 4, 5_000), (3, 1, 8_000)]),
    (6, "F-006", 1, date(2024, 12, 31), "paid", [(1, 50, 10_000)]),
    (7, "F-007", 3, date(2026, 1, 1), "pending", [(3, 2, 8_000)]),
    (8, "F-008", 2, date(2024, 6, 15), "pending", [(2, 3, 5_000)]),
]


def build_tiny_erp(url: str) -> Erp:
    """Create the tables at ``url`` and insert the rows above."""
    engine = make_engine(url)
    ErpBase.metadata.create_all(engine)
    erp = Erp(engine=engine, today=date(2026, 11, 30))
    with erp.session() as session:
        session.add_all(ErpUser(user_id=user_id, name=name, role=role) for user_id, name, role in USERS)
        session.flush()
        session.add_all(
            Customer(id=i, name=name, name_folded=fold(name), ruc=ruc, city=city, vendedor=vendedor)
            for i, name, ruc, city, vendedor in CUSTOMERS
        )
        session.add_all(
            Product(id=i, sku=sku, name=name, category=category, unit_price=price)
            for i, sku, name, category, price in PRODUCTS
        )
        session.flush()
        for invoice_id, number, customer_id, issued, status, lines in INVOICES:
            session.add(
                Invoice(
                    id=invoice_id,
                    number=number,
                    customer_id=customer_id,
                    issue_date=issued,
                    status=status,
                    total=sum(q * p for _, q, p in lines),
                    lines=[
                        InvoiceLine(product_id=product, quantity=q, unit_price=p, amount=q * p)
                        for product, q, p in lines
                    ],
                )
            )
    return erp


@pytest.fixture(scope="module", params=BACKENDS)
def tiny_erp(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Erp]:
    """The hand-built ERP above (read-only), on SQLite and on PostgreSQL."""
    erp = build_tiny_erp(fresh_url(request, request.param, tmp_path_factory.mktemp("tiny")))
    yield erp
    erp.engine.dispose()
