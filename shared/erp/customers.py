"""Finding customers by name the way a person (or a model) writes them.

Matching is case- and accent-insensitive (:func:`shared.text.fold`, stored in ``Customer.name_folded`` so the
lookup is a plain indexed query on any database):

1. the folded name equals the folded query → that customer;
2. otherwise, if every word of the query appears in exactly one name (``"abc"`` → ``Empresa ABC``), that one;
3. otherwise :class:`~shared.errors.CustomerNotFoundError`, whose ``suggestions`` are the partial matches
   (the query was ambiguous) or the closest names by :mod:`difflib` (nothing matched).
"""

from __future__ import annotations

import difflib
from typing import Final

from sqlalchemy import and_, bindparam, select
from sqlalchemy.orm import Session

from shared.erp.models import Customer
from shared.errors import CustomerNotFoundError
from shared.text import fold

MAX_SUGGESTIONS: Final = 5
SIMILARITY_CUTOFF: Final = 0.6
"""Minimum :class:`difflib.SequenceMatcher` ratio for a name to be suggested."""

_BY_FOLDED_NAME: Final = select(Customer).where(Customer.name_folded == bindparam("folded"))
"""The exact-match lookup, built once: it runs on every operation that names a customer."""


def _escape_like(text: str) -> str:
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


def _partial_matches(session: Session, folded: str, limit: int | None = None) -> list[Customer]:
    """Customers whose folded name contains every word of ``folded``, ordered by name."""
    words = folded.split()
    if not words:
        return []
    condition = and_(*(Customer.name_folded.like(f"%{_escape_like(w)}%", escape="\\") for w in words))
    query = select(Customer).where(condition).order_by(Customer.name)
    if limit is not None:
        query = query.limit(limit)
    return list(session.scalars(query))


def closest_names(session: Session, text: str, limit: int = MAX_SUGGESTIONS) -> list[str]:
    """Canonical names closest to ``text`` (difflib ratio on folded names), best first."""
    by_folded = {
        folded: name for name, folded in session.execute(select(Customer.name, Customer.name_folded))
    }
    close = difflib.get_close_matches(fold(text), list(by_folded), n=limit, cutoff=SIMILARITY_CUTOFF)
    return [by_folded[folded] for folded in close]


def resolve_customer(session: Session, text: str, operation: str) -> Customer:
    """The one customer ``text`` designates, or :class:`CustomerNotFoundError` naming the candidates.

    ``operation`` is the operation name carried by the error, so the caller knows which request failed.
    """
    folded = fold(text)
    exact = session.scalars(_BY_FOLDED_NAME, {"folded": folded}).first()
    if exact is not None:
        return exact
    partial = _partial_matches(session, folded, limit=MAX_SUGGESTIONS + 1)
    if len(partial) == 1:
        return partial[0]
    suggestions = [c.name for c in partial[:MAX_SUGGESTIONS]] or closest_names(session, text)
    raise CustomerNotFoundError(operation, text, suggestions)


def search_customers(session: Session, text: str, limit: int = 20) -> list[Customer]:
    """Customers whose name contains every word of ``text`` (folded), or whose RUC starts with ``text``.

    Matches come ordered by name. When nothing matches, the closest names (difflib) are returned instead,
    best first, so a typo still finds candidates.
    """
    found = {c.id: c for c in _partial_matches(session, fold(text))}
    stripped = text.strip()
    if stripped:
        pattern = f"{_escape_like(stripped)}%"
        found |= {
            c.id: c for c in session.scalars(select(Customer).where(Customer.ruc.like(pattern, escape="\\")))
        }
    if found:
        return sorted(found.values(), key=lambda c: c.name)[:limit]
    names = closest_names(session, text, limit)
    by_name = {c.name: c for c in session.scalars(select(Customer).where(Customer.name.in_(names)))}
    return [by_name[name] for name in names]
