"""Text helpers shared by the ERP, the offline model and the scorer."""

from __future__ import annotations

import unicodedata


def fold(text: str) -> str:
    """Case- and accent-insensitive form of ``text``: ``"Compañía Ñandú"`` → ``"compania nandu"``."""
    decomposed = unicodedata.normalize("NFKD", text)
    stripped = "".join(ch for ch in decomposed if not unicodedata.combining(ch))
    return " ".join(stripped.casefold().split())


def format_guaranies(amount: int | float) -> str:
    """Format an amount the Paraguayan way: ``850000000`` → ``"₲850.000.000"``."""
    value = round(amount)
    sign = "-" if value < 0 else ""
    return f"{sign}₲{abs(value):,}".replace(",", ".")
