"""The ERP schema: table names, constraints the database enforces, relationships."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import date

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


def test_unknown_status_is_rejected_by_the_database(session: Session) -> None:
    session.add(
        Invoice(id=2, number="X", customer_id=1, issue_date=date(2025, 1, 1), status="refunded", total=0)
    )
    with pytest.raises(IntegrityError):
        session.commit()


def test_invoice_of_a_missing_customer_is_rejected(session: Session) -> None:
    session.add(
        Invoice(id=3, number="Y", customer_id=42, issue_date=date(2025, 1, 1), status="paid", total=0)
    )
    with pytest.raises(IntegrityError):
        session.commit()


def test_customer_names_are_unique(session: Session) -> None:
    session.add(
        Customer(
            id=2,
            name="Empresa ABC",
            name_folded="empresa abc",
            ruc="80000002-1",
            city="Luque",
            vendedor="ana",
        )
    )
    with pytest.raises(IntegrityError):
        session.commit()


def test_a_customer_of_an_unknown_salesperson_is_rejected(session: Session) -> None:
    session.add(
        Customer(id=3, name="Otra", name_folded="otra", ruc="80000003-8", city="Luque", vendedor="zoe")
    )
    with pytest.raises(IntegrityError):
        session.commit()


def test_a_customer_without_a_salesperson_is_rejected(session: Session) -> None:
    session.add(Customer(id=4, name="Sin", name_folded="sin", ruc="80000004-6", city="Luque"))
    with pytest.raises(IntegrityError):
        session.commit()
