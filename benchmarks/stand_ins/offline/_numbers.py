"""The numbers a question names: years, a month, a list size.

Years and months are explicit or relative to the prompt's ``Fecha de hoy`` ("este año", "hace dos años") or
to the conversation's year ("ese año"); an expression the prompt cannot resolve is reported as unresolved,
never guessed. All functions read :func:`shared.text.fold`-ed text.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date

from benchmarks.stand_ins.offline._answers import MONTHS_ES

_NUMBERS = {
    "un": 1, "uno": 1, "una": 1, "one": 1, "a": 1, "dos": 2, "two": 2, "tres": 3, "three": 3,
    "cuatro": 4, "four": 4, "cinco": 5, "five": 5, "seis": 6, "six": 6, "siete": 7, "seven": 7,
    "ocho": 8, "eight": 8, "nueve": 9, "nine": 9, "diez": 10, "ten": 10, "veinte": 20, "twenty": 20,
}  # fmt: skip

_MONTHS_EN = [
    "january", "february", "march", "april", "may", "june",
    "july", "august", "september", "october", "november", "december",
]  # fmt: skip

_EXPLICIT = r"\b(?:19|20)\d{2}\b"
_THIS = (
    r"\beste ano\b|\bano actual\b|\bano en curso\b|\blo que va del? ano\b|\bthis year\b|\bcurrent year\b"
    r"|\byear to date\b"
)
_LAST = r"\bano pasado\b|\blast year\b"
_PREVIOUS = r"\bano anterior\b|\bprevious year\b|\byear before\b|\bprior year\b"
_AGO = r"\bhace (\w+) anos?\b|\b(\w+) years? ago\b"
_THAT = r"\b(?:ese|aquel|mismo|dicho) ano\b|\bthat year\b|\bsame year\b"
_NEXT = r"\bproximo ano\b|\bano que viene\b|\bnext year\b"
_PATTERN = re.compile(
    "|".join(
        f"(?P<{name}>{pattern})"
        for name, pattern in [
            ("explicit", _EXPLICIT),
            ("this", _THIS),
            ("last", _LAST),
            ("previous", _PREVIOUS),
            ("ago", _AGO.replace("(\\w+)", "\\w+")),
            ("that", _THAT),
            ("next", _NEXT),
        ]
    )
)
_TODAY_OFFSETS = {"this": 0, "last": -1, "next": 1}
"""Year expressions relative to the prompt's date, and how many years each one moves."""


@dataclass(frozen=True)
class Years:
    """The years a question refers to, in order of mention."""

    values: tuple[int, ...]
    mentioned: bool
    """Whether the question mentions a year at all, explicitly or relatively."""
    unresolved: bool
    """Whether a relative expression could not be resolved from the prompt."""


def _count(word: str) -> int | None:
    if word.isdigit():
        return int(word)
    return _NUMBERS.get(word)


def year_spans(
    folded: str, today: date | None, conversation_year: int | None
) -> list[tuple[int, int, int | None]]:
    """``(start, end, year)`` for each year expression in ``folded``; ``year`` is ``None`` if unresolved."""
    spans: list[tuple[int, int, int | None]] = []
    for match in _PATTERN.finditer(folded):
        kind = match.lastgroup
        value: int | None = None
        if kind == "explicit":
            value = int(match.group())
        elif kind in _TODAY_OFFSETS:
            value = today.year + _TODAY_OFFSETS[kind] if today else None
        elif kind == "previous":
            base = conversation_year or (today.year if today else None)
            value = base - 1 if base else None
        elif kind == "that":
            value = conversation_year
        elif kind == "ago":
            words = re.match(_AGO, match.group())
            word = next((g for g in words.groups() if g), "") if words else ""
            count = _count(word)
            value = today.year - count if today and count else None
        spans.append((match.start(), match.end(), value))
    return spans


def find_years(folded: str, today: date | None, conversation_year: int | None) -> Years:
    spans = year_spans(folded, today, conversation_year)
    values = tuple(dict.fromkeys(value for _, _, value in spans if value is not None))
    unresolved = any(value is None for _, _, value in spans)
    return Years(values=values, mentioned=bool(spans), unresolved=unresolved)


_MAY = re.compile(r"\bmayo\b|\b(?:in|about|of|for|during|since|until|from|and) may\b|\bmay (?:of |\d)")
"""English "may" is a month only where the modal verb cannot be ("in May", "May 2025")."""


def find_month(folded: str, today: date | None) -> tuple[int | None, int | None]:
    """``(month, year_override)`` named in the question: a month name, "este mes" or "el mes pasado"."""
    for index, (es, en) in enumerate(zip(MONTHS_ES, _MONTHS_EN, strict=True), start=1):
        if re.search(rf"\b(?:{es}|{en})\b", folded) and (en != "may" or _MAY.search(folded)):
            return index, None
    if today and re.search(r"\beste mes\b|\bthis month\b", folded):
        return today.month, today.year
    if today and re.search(r"\bmes pasado\b|\blast month\b", folded):
        if today.month == 1:
            return 12, today.year - 1
        return today.month - 1, today.year
    return None, None


_LIMITS = (
    re.compile(r"\btop\s*(\d{1,2}|\w+)\b"),
    re.compile(r"\b(\d{1,2}|\w+) (?:productos|products|articulos|items)\b"),
    re.compile(
        r"\b(?:los|las|the|primeros|primeras|first) (\d{1,2}|\w+) "
        r"(?:mas|mejores|primeros|principales|top|best|most|productos)\b"
    ),
)


def find_limit(folded: str) -> int | None:
    """A list size such as "top 3", "los 5 productos", "tres productos", "los 3 más vendidos"."""
    for pattern in _LIMITS:
        for match in pattern.finditer(folded):
            count = _count(match.group(1))
            if count and count <= 50:
                return count
    return None
