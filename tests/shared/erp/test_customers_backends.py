"""Customer lookup means the same on SQLite and on PostgreSQL (``shared/erp/customers.py``).

``LIKE`` differs between them (SQLite's is case-insensitive for ASCII, PostgreSQL's is not; both need the
escape for ``%`` and ``_``), so the lookups that use it run on both: folded names, escaped wildcards, RUC
prefixes, the order of the candidates, and a salesperson's scope. The full specification is
``test_customers.py``.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from sqlalchemy.orm import Session

from shared.erp.customers import resolve_customer, search_customers
from shared.erp.database import make_engine
from shared.erp.models import Customer, ErpBase, ErpUser
from shared.errors import CustomerNotFoundError, CustomerOutOfScopeError
from shared.text import fold
from tests.shared.erp.test_customers import NAMES


@pytest.fixture
def session(db_url: str) -> Iterator[Session]:
    engine = make_engine(db_url)
    ErpBase.metadata.create_all(engine)
    with Session(engine) as session:
        session.add_all(ErpUser(user_id=u, name=u.title(), role="ventas") for u in ("ana", "bruno"))
        session.flush()
        session.add_all(
            Customer(id=i, name=name, name_folded=fold(name), ruc=ruc, city="Asunción", vendedor=vendedor)
            for i, (name, ruc, vendedor) in enumerate(NAMES, start=1)
        )
        session.commit()
        yield session
    engine.dispose()


@pytest.mark.parametrize(
    ("written", "expected"),
    [
        ("  EMPRESA   abc ", "Empresa ABC"),
        ("NANDUTI", "Distribuidora Ñandutí S.A."),
        ("sur distribuidora", "Distribuidora del Sur S.R.L."),
        ("100%", "Empresa 100% Natural"),
    ],
)
def test_a_name_written_loosely_finds_the_one_customer(session: Session, written: str, expected: str) -> None:
    assert resolve_customer(session, written, "op").name == expected


def test_wildcards_are_literal_and_candidates_come_in_name_order(session: Session) -> None:
    with pytest.raises(CustomerNotFoundError):
        resolve_customer(session, "Empresa_ABC", "op")
    with pytest.raises(CustomerNotFoundError) as ambiguous:
        resolve_customer(session, "Distribuidora", "op")
    assert ambiguous.value.suggestions == ["Distribuidora del Sur S.R.L.", "Distribuidora Ñandutí S.A."]
    by_ruc = search_customers(session, "8000")
    assert [c.name for c in by_ruc] == ["Distribuidora Ñandutí S.A.", "Empresa ABC"]


def test_a_salesperson_sees_only_their_own_customers(session: Session) -> None:
    with pytest.raises(CustomerOutOfScopeError):
        resolve_customer(session, "EMPRESA ÁBC", "op", vendedor="bruno")
    assert [c.name for c in search_customers(session, "8000", vendedor="bruno")] == [
        "Distribuidora Ñandutí S.A."
    ]
