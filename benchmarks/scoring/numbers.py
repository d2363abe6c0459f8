"""Finding the ERP's figures in an answer: what the scorer adds to the figure parser of :mod:`shared.figures`.

The ERP's amounts are guaraníes, so an amount written in another currency (``$38.158.000``, ``38.158.000
dólares``, ``pesos``) is not the ERP's figure, whatever its digits: :func:`mentions_number` does not count it
and :func:`foreign_amounts` lists it.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from shared.figures import NUMBER_TOKEN, extract_numbers

__all__ = ["foreign_amounts", "mentions_number"]

_FOREIGN_BEFORE = re.compile(r"(?:US\$|U\$S|\$|USD|€|EUR)\s*$", re.IGNORECASE)
_FOREIGN_AFTER = re.compile(r"^\s*(?:de\s+)?(?:d[oó]lares|dollars|pesos|euros|USD|EUR)\b", re.IGNORECASE)


def _amounts(text: str) -> Iterator[tuple[re.Match[str], str | None]]:
    """Every number written in ``text``, with the amount as written when it is in another currency."""
    for match in NUMBER_TOKEN.finditer(text):
        window = text[max(0, match.start() - 6) : match.start()]
        before = _FOREIGN_BEFORE.search(window)
        after = _FOREIGN_AFTER.match(text[match.end() : match.end() + 16])
        if before:
            yield match, before.group(0) + match.group(0)
        elif after:
            yield match, match.group(0) + after.group(0)
        else:
            yield match, None


def mentions_number(text: str, value: float) -> bool:
    """Whether ``text`` mentions ``value`` in any of the accepted notations, and not as an amount in another
    currency (``$38.158.000``, ``38.158.000 dólares`` or ``pesos``: the ERP's amounts are guaraníes, so a
    figure written in dollars or pesos is not the ERP's figure, whatever its digits)."""
    return any(
        foreign is None and any(mention.matches(value) for mention in extract_numbers(match.group(0)))
        for match, foreign in _amounts(text)
    )


def foreign_amounts(text: str) -> list[str]:
    """The amounts ``text`` writes in another currency (``$38,158,000``, ``12 millones de pesos``), as
    written, in order; ``[]`` when it writes none."""
    return [foreign.strip() for _, foreign in _amounts(text) if foreign is not None]
