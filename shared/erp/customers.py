"""Finding customers by name the way a person (or a model) writes them.

Case- and accent-insensitive (``Customer.name_folded``): an exact folded name, else the one name that holds
every word of the query, else :class:`~shared.errors.CustomerNotFoundError` with suggestions. With
``vendedor`` only that salesperson's customers match or are suggested; another's customer named exactly raises
:class:`~shared.errors.CustomerOutOfScopeError`, which reads like a name that matches nobody.
"""

from __future__ import annotations

import difflib
from typing import Final

from sqlalchemy import ColumnElement, and_, bindparam, select
from sqlalchemy.orm import Session

from shared.erp.models import Customer
from shared.errors import CustomerNotFoundError, CustomerOutOfScopeError
from shared.text import fold

MAX_SUGGESTIONS: Final = 5
SIMILARITY_CUTOFF: Final = 0.6
"""Minimum :class:`difflib.SequenceMatcher` ratio for a name to be suggested."""

_BY_FOLDED_NAME: Final = select(Customer).where(Customer.name_folded == bindparam("folded"))
"""The exact-match lookup, built once: it runs on every operation that names a customer."""


def _escape_like(text: str) -> str:
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


def _in_scope(vendedor: str | None) -> list[ColumnElement[bool]]:
    """The condition that keeps ``vendedor``'s customers (none when every customer is visible)."""
    return [] if vendedor is None else [Customer.vendedor == vendedor]


def _partial_matches(
    session: Session, folded: str, limit: int | None = None, vendedor: str | None = None
) -> list[Customer]:
    """Customers (of ``vendedor``, if given) whose folded name contains every word of ``folded``, by name."""
    words = folded.split()
    if not words:
        return []
    condition = and_(*(Customer.name_folded.like(f"%{_escape_like(w)}%", escape="\\") for w in words))
    query = select(Customer).where(condition, *_in_scope(vendedor)).order_by(Customer.name)
    if limit is not None:
        query = query.limit(limit)
    return list(session.scalars(query))


def closest_names(
    session: Session, text: str, limit: int = MAX_SUGGESTIONS, *, vendedor: str | None = None
) -> list[str]:
    """Canonical names (of ``vendedor``'s customers, if given) closest to ``text`` by difflib, best first."""
    by_folded = {
        folded: name
        for name, folded in session.execute(
            select(Customer.name, Customer.name_folded).where(*_in_scope(vendedor))
        )
    }
    close = difflib.get_close_matches(fold(text), list(by_folded), n=limit, cutoff=SIMILARITY_CUTOFF)
    return [by_folded[folded] for folded in close]


def resolve_customer(session: Session, text: str, operation: str, *, vendedor: str | None = None) -> Customer:
    """The one customer ``text`` designates, or :class:`CustomerNotFoundError` naming the candidates."""
    folded = fold(text)
    exact = session.scalars(_BY_FOLDED_NAME, {"folded": folded}).all()
    mine = [customer for customer in exact if vendedor is None or customer.vendedor == vendedor]
    if mine:
        return mine[0]
    partial = _partial_matches(session, folded, limit=MAX_SUGGESTIONS + 1, vendedor=vendedor)
    if len(partial) == 1 and not exact:
        return partial[0]
    suggestions = [c.name for c in partial[:MAX_SUGGESTIONS]] or closest_names(
        session, text, vendedor=vendedor
    )
    if exact:  # someone else's customer: said exactly as a name that matches nobody would be
        raise CustomerOutOfScopeError(operation, text, suggestions)
    raise CustomerNotFoundError(operation, text, suggestions)


def search_customers(
    session: Session, text: str, limit: int = 20, *, vendedor: str | None = None
) -> list[Customer]:
    """Customers whose name contains every word of ``text`` (folded), or whose RUC starts with ``text``."""
    found = {c.id: c for c in _partial_matches(session, fold(text), vendedor=vendedor)}
    stripped = text.strip()
    if stripped:
        pattern = f"{_escape_like(stripped)}%"
        by_ruc = select(Customer).where(Customer.ruc.like(pattern, escape="\\"), *_in_scope(vendedor))
        found |= {c.id: c for c in session.scalars(by_ruc)}
    if found:
        return sorted(found.values(), key=lambda c: c.name)[:limit]
    names = closest_names(session, text, limit, vendedor=vendedor)
    by_name = {c.name: c for c in session.scalars(select(Customer).where(Customer.name.in_(names)))}
    return [by_name[name] for name in names]
