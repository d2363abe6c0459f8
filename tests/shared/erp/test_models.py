"""The ERP schema: table names, constraints the database enforces, relationships."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import date
from typing import Any

import pytest
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from shared.erp.database import make_engine
from shared.erp.models import INVOICE_STATUSES, Customer, ErpBase, ErpUser, Invoice, InvoiceLine, Product


@pytest.fixture
def session() -> Iterator[Session]:
    engine = make_engine("sqlite://")
    ErpBase.metadata.create_all(engine)
    with Session(engine) as session:
        session.add(ErpUser(user_id="ana", name="Ana", role="ventas"))
        session.flush()
        session.add(
            Customer(
                id=1,
                name="Empresa ABC",
                name_folded="empresa abc",
                ruc="80000001-3",
                city="Asunción",
                vendedor="ana",
            )
        )
        session.add(Product(id=1, sku="YER", name="Yerba", category="Almacén", unit_price=10_000))
        session.commit()
        yield session
    engine.dispose()


def test_tables_are_the_documented_ones() -> None:
    assert set(ErpBase.metadata.tables) == {
        "erp_users",
        "customers",
        "products",
        "invoices",
        "invoice_lines",
        "erp_settings",
    }
    assert INVOICE_STATUSES == ("paid", "pending", "cancelled")


def test_an_invoice_with_lines_round_trips(session: Session) -> None:
    invoice = Invoice(
        id=1,
        number="001-001-0000001",
        customer_id=1,
        issue_date=date(2025, 5, 2),
        status="paid",
        total=30_000,
        lines=[InvoiceLine(product_id=1, quantity=3, unit_price=10_000, amount=30_000)],
    )
    session.add(invoice)
    session.commit()
    session.expire_all()
    stored = session.get(Invoice, 1)
    assert stored is not None
    assert stored.customer.name == "Empresa ABC"
    assert [(line.product.sku, line.amount) for line in stored.lines] == [("YER", 30_000)]
    assert stored.issue_date == date(2025, 5, 2)


def _customer(id: int, name: str, **changes: Any) -> Customer:
    fields = {"name_folded": name.lower(), "ruc": f"8000000{id}-0", "city": "Luque", "vendedor": "ana"}
    return Customer(id=id, name=name, **(fields | changes))


REFUSED_ROWS = {
    "an unknown invoice status": lambda: Invoice(
        id=2, number="X", customer_id=1, issue_date=date(2025, 1, 1), status="refunded", total=0
    ),
    "an invoice of a missing customer": lambda: Invoice(
        id=3, number="Y", customer_id=42, issue_date=date(2025, 1, 1), status="paid", total=0
    ),
    "a second customer of the same name": lambda: _customer(2, "Empresa ABC"),
    "a customer of an unknown salesperson": lambda: _customer(3, "Otra", vendedor="zoe"),
    "a customer without a salesperson": lambda: _customer(4, "Sin", vendedor=None),
}


@pytest.mark.parametrize("row", REFUSED_ROWS.values(), ids=REFUSED_ROWS.keys())
def test_the_database_refuses(session: Session, row: Callable[[], ErpBase]) -> None:
    session.add(row())
    with pytest.raises(IntegrityError):
        session.commit()
