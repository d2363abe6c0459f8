"""Customer lookup: exact, accent/case-insensitive, unique partial match, ambiguity and typos; within one
salesperson's customers (``vendedor=``) without revealing anyone else's."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from sqlalchemy.orm import Session

from shared.erp.customers import closest_names, resolve_customer, search_customers
from shared.erp.database import make_engine
from shared.erp.models import Customer, ErpBase, ErpUser
from shared.errors import CustomerNotFoundError, CustomerOutOfScopeError
from shared.text import fold

NAMES = [
    ("Empresa ABC", "80000001-3", "ana"),
    ("Distribuidora Ñandutí S.A.", "80009735-1", "bruno"),
    ("Distribuidora del Sur S.R.L.", "80012345-0", "bruno"),
    ("Ferretería San Lorenzo", "80050000-7", "ana"),
    ("Empresa 100% Natural", "80060000-2", "ana"),
]


@pytest.fixture
def session(db_url: str) -> Iterator[Session]:
    engine = make_engine(db_url)
    ErpBase.metadata.create_all(engine)
    with Session(engine) as session:
        session.add_all(ErpUser(user_id=u, name=u.title(), role="ventas") for u in ("ana", "bruno", "carla"))
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


def add_customer(session: Session, name: str) -> None:
    """One more customer of ana's."""
    session.add(
        Customer(id=99, name=name, name_folded=fold(name), ruc="80099999-1", city="Luque", vendedor="ana")
    )
    session.flush()


def test_an_exact_name_wins_over_partial_matches(session: Session) -> None:
    add_customer(session, "Empresa")
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
    assert "Clientes más parecidos: Ferretería San Lorenzo" in str(info.value)


def test_wildcards_are_literal(session: Session) -> None:
    with pytest.raises(CustomerNotFoundError):
        resolve_customer(session, "Empresa_ABC", "op")
    with pytest.raises(CustomerNotFoundError):
        resolve_customer(session, "Empresa%", "op")


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


# -- within one salesperson's customers ----------------------------------------------------------------------
def test_a_salesperson_resolves_their_own_customers(session: Session) -> None:
    assert resolve_customer(session, "nanduti", "op", vendedor="bruno").name == "Distribuidora Ñandutí S.A."
    # "Empresa" is ambiguous for everyone, but only Empresa ABC... and 100% Natural are ana's: still two.
    with pytest.raises(CustomerNotFoundError) as info:
        resolve_customer(session, "Empresa", "op", vendedor="ana")
    assert info.value.suggestions == ["Empresa 100% Natural", "Empresa ABC"]


def test_a_part_unique_among_the_own_customers_designates_that_one(session: Session) -> None:
    add_customer(session, "Distribuidora Norte")
    assert resolve_customer(session, "Distribuidora", "op", vendedor="ana").name == "Distribuidora Norte"


@pytest.mark.parametrize("written", ["Empresa ABC", "empresa abc", "EMPRESA ÁBC"])
def test_another_salespersons_customer_named_in_full_is_out_of_scope(session: Session, written: str) -> None:
    with pytest.raises(CustomerOutOfScopeError) as info:
        resolve_customer(session, written, "compras_cliente", vendedor="bruno")
    assert info.value.operation == "compras_cliente"
    assert info.value.customer == written  # what the caller wrote, never a name they were not told


@pytest.mark.parametrize("written", ["abc", "ABC EMPRESA", "Distribuidora"])
def test_a_part_of_others_customers_names_is_not_found_so_names_cannot_be_probed(
    session: Session, written: str
) -> None:
    with pytest.raises(CustomerNotFoundError) as info:
        resolve_customer(session, written, "op", vendedor="ana" if written == "Distribuidora" else "bruno")
    assert info.value.suggestions == [] or "ABC" not in " ".join(info.value.suggestions)


def test_ambiguity_and_typos_suggest_only_the_own_customers(session: Session) -> None:
    with pytest.raises(CustomerNotFoundError) as ambiguous:
        resolve_customer(session, "Distribuidora", "op", vendedor="bruno")
    assert ambiguous.value.suggestions == ["Distribuidora del Sur S.R.L.", "Distribuidora Ñandutí S.A."]
    with pytest.raises(CustomerNotFoundError) as typo:
        resolve_customer(session, "Empresa ABD", "op", vendedor="bruno")
    assert typo.value.suggestions == []
    assert closest_names(session, "Empresa ABD", vendedor="bruno") == []
    assert (
        closest_names(session, "Distribuidora del Sud", vendedor="bruno")[0] == "Distribuidora del Sur S.R.L."
    )
    assert closest_names(session, "Ferreteria San Lorenso", vendedor="bruno") == []  # ana's customer


def test_a_salesperson_without_customers_finds_nothing(session: Session) -> None:
    with pytest.raises(CustomerOutOfScopeError):
        resolve_customer(session, "Empresa ABC", "op", vendedor="carla")
    with pytest.raises(CustomerNotFoundError) as info:
        resolve_customer(session, "Nadie", "op", vendedor="carla")
    assert info.value.suggestions == []
    assert search_customers(session, "empresa", vendedor="carla") == []


def test_search_lists_only_the_own_customers(session: Session) -> None:
    assert [c.name for c in search_customers(session, "empresa", vendedor="bruno")] == []
    assert [c.name for c in search_customers(session, "8000", vendedor="bruno")] == [
        "Distribuidora Ñandutí S.A."
    ]
    assert [c.name for c in search_customers(session, "80000001", vendedor="bruno")] == []
    assert [c.name for c in search_customers(session, "Empresa ABD", vendedor="bruno")] == []
    assert search_customers(session, "Empresa ABD", vendedor="ana")[0].name == "Empresa ABC"
