"""Customer lookup: exact, accent/case-insensitive, unique partial match, ambiguity and typos."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from sqlalchemy.orm import Session

from shared.erp.customers import closest_names, resolve_customer, search_customers
from shared.erp.database import make_engine
from shared.erp.models import Customer, ErpBase
from shared.errors import CustomerNotFoundError
from shared.text import fold

NAMES = [
    ("Empresa ABC", "80000001-3"),
    ("Distribuidora Ñandutí S.A.", "80009735-1"),
    ("Distribuidora del Sur S.R.L.", "80012345-0"),
    ("Ferretería San Lorenzo", "80050000-7"),
    ("Empresa 100% Natural", "80060000-2"),
]


@pytest.fixture
def session() -> Iterator[Session]:
    engine = make_engine("sqlite://")
    ErpBase.metadata.create_all(engine)
    with Session(engine) as session:
        session.add_all(
            Customer(id=i, name=name, name_folded=fold(name), ruc=ruc, city="Asunción")
            for i, (name, ruc) in enumerate(NAMES, start=1)
        )
        session.commit()
        yield session
    engine.dispose()


@pytest.mark.parametrize(
    ("written", "expected"),
    [
        ("Empresa ABC", "Empresa ABC"),
        ("  EMPRESA   abc ", "Empresa ABC"),
        ("abc", "Empresa ABC"),
        ("distribuidora ñandutí s.a.", "Distribuidora Ñandutí S.A."),
        ("NANDUTI", "Distribuidora Ñandutí S.A."),
        ("sur distribuidora", "Distribuidora del Sur S.R.L."),
        ("ferreteria", "Ferretería San Lorenzo"),
        ("100%", "Empresa 100% Natural"),
    ],
)
def test_resolve_customer_finds_the_one_customer_meant(session: Session, written: str, expected: str) -> None:
    assert resolve_customer(session, written, "op").name == expected


def test_an_exact_name_wins_over_partial_matches(session: Session) -> None:
    session.add(Customer(id=99, name="Empresa", name_folded="empresa", ruc="80099999-1", city="Luque"))
    session.flush()
    assert resolve_customer(session, "empresa", "op").name == "Empresa"


def test_an_ambiguous_part_lists_the_candidates(session: Session) -> None:
    with pytest.raises(CustomerNotFoundError) as info:
        resolve_customer(session, "Distribuidora", "compras_cliente")
    assert info.value.suggestions == ["Distribuidora del Sur S.R.L.", "Distribuidora Ñandutí S.A."]
    assert info.value.operation == "compras_cliente"
    assert info.value.query == "Distribuidora"


def test_a_typo_suggests_the_closest_names(session: Session) -> None:
    with pytest.raises(CustomerNotFoundError) as info:
        resolve_customer(session, "Ferreteria San Lorenso", "op")
    assert info.value.suggestions[0] == "Ferretería San Lorenzo"
    assert "Closest customers: Ferretería San Lorenzo" in str(info.value)


def test_underscore_is_not_a_wildcard(session: Session) -> None:
    with pytest.raises(CustomerNotFoundError):
        resolve_customer(session, "Empresa_ABC", "op")


def test_closest_names_are_ranked_by_similarity(session: Session) -> None:
    assert closest_names(session, "Empresa ABD") == ["Empresa ABC"]
    assert closest_names(session, "qqqqqq") == []


def test_search_matches_names_and_ruc_prefixes_sorted_by_name(session: Session) -> None:
    assert [c.name for c in search_customers(session, "empresa")] == ["Empresa 100% Natural", "Empresa ABC"]
    assert [c.name for c in search_customers(session, "8000")] == [
        "Distribuidora Ñandutí S.A.",
        "Empresa ABC",
    ]
    assert [c.name for c in search_customers(session, "empresa", limit=1)] == ["Empresa 100% Natural"]
