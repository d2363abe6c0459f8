"""The ERP schema, on each backend: relationships, and the constraints the database enforces."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import date
from typing import Any

import pytest
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from shared.erp.models import Customer, ErpBase, Invoice
from tests.shared.operations.conftest import build_tiny_erp


@pytest.fixture
def session(db_url: str) -> Iterator[Session]:
    """A session on a fresh copy of the hand-built ERP of ``tests/shared/operations/conftest.py``."""
    erp = build_tiny_erp(db_url)
    with Session(erp.engine) as session:
        yield session
    erp.engine.dispose()


def test_an_invoice_with_lines_round_trips(session: Session) -> None:
    stored = session.get(Invoice, 1)
    assert stored is not None
    assert (stored.number, stored.issue_date, stored.customer.name) == (
        "F-001",
        date(2025, 1, 10),
        "Empresa ABC",
    )
    assert [(line.product.sku, line.amount) for line in stored.lines] == [("YER", 30_000), ("GAS", 10_000)]


def _customer(id: int, name: str, **changes: Any) -> Customer:
    fields = {"name_folded": name.lower(), "ruc": f"8000009{id}-0", "city": "Luque", "vendedor": "ana"}
    return Customer(id=id, name=name, **(fields | changes))


def _invoice(id: int, customer_id: int, status: str) -> Invoice:
    return Invoice(
        id=id, number=f"X-{id}", customer_id=customer_id, issue_date=date(2025, 1, 1), status=status, total=0
    )


REFUSED_ROWS = {
    "an unknown invoice status": lambda: _invoice(91, 1, "refunded"),
    "an invoice of a missing customer": lambda: _invoice(92, 42, "paid"),
    "a second customer of the same name": lambda: _customer(93, "Empresa ABC"),
    "a customer of an unknown salesperson": lambda: _customer(94, "Otra", vendedor="zoe"),
    "a customer without a salesperson": lambda: _customer(95, "Sin", vendedor=None),
}


@pytest.mark.parametrize("row", REFUSED_ROWS.values(), ids=REFUSED_ROWS.keys())
def test_the_database_refuses(session: Session, row: Callable[[], ErpBase]) -> None:
    session.add(row())
    with pytest.raises(IntegrityError):
        session.commit()
