"""Finding numbers in an answer, however the model chose to write them.

``₲850.000.000``, ``850.000.000``, ``850,000,000``, ``850000000``, ``Gs. 850.000.000`` and
``850 millones`` all mention 850000000. A number written with a scale word or decimals (``853,4 millones``)
carries a tolerance of half a unit of its last written digit, so a model that rounds the way a person would
still matches.

Separator rules (Spanish and English styles both occur):

- both ``.`` and ``,`` present: the last one is the decimal separator, the other groups thousands;
- one kind, several times: thousands grouping (``1.234.567``);
- one kind, once: thousands if exactly three digits follow (``1.500`` is 1500), else decimal (``12,5``);
- non-breaking and thin spaces group thousands.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_SPACES = "\u00a0\u202f\u2009"
_TOKEN = re.compile(
    rf"(?<!\d)(?<!\d[.,])(?P<num>\d+(?:[.,{_SPACES}]\d+)*)"
    r"(?:\s*(?P<scale>mil\s+millones|millones|mill[oó]n|billones|bill[oó]n|mil)\b)?",
    re.IGNORECASE,
)
_SCALES = {"mil": 1e3, "millones": 1e6, "millon": 1e6, "millón": 1e6, "billones": 1e12, "billon": 1e12}
_SCALES["billón"] = 1e12


@dataclass(frozen=True)
class NumberMention:
    """A number found in a text."""

    value: float
    """The number, with any scale word applied."""
    tolerance: float
    """Half a unit of the last written digit (times the scale); 0 for plain integers."""
    text: str
    """The text the number was read from."""

    def matches(self, target: float) -> bool:
        """Whether this mention is a faithful rendering of ``target``."""
        return abs(self.value - target) <= self.tolerance + 1e-9 + 1e-15 * abs(target)


def _scale(word: str | None) -> float:
    if not word:
        return 1.0
    folded = " ".join(word.lower().split())
    if folded == "mil millones":
        return 1e9
    return _SCALES.get(folded, 1.0)


def parse_number(token: str) -> tuple[float, int] | None:
    """Parse one numeric token (digits and separators only) into ``(value, decimals)``."""
    text = token.strip()
    for space in _SPACES:
        text = text.replace(space, "")
    if not text or not re.fullmatch(r"\d+(?:[.,]\d+)*", text):
        return None
    has_dot, has_comma = "." in text, "," in text
    if has_dot and has_comma:
        decimal = "." if text.rfind(".") > text.rfind(",") else ","
        grouping = "," if decimal == "." else "."
        integer, _, fraction = text.replace(grouping, "").rpartition(decimal)
    elif has_dot or has_comma:
        sep = "." if has_dot else ","
        parts = text.split(sep)
        if len(parts) > 2 or len(parts[1]) == 3:
            integer, fraction = "".join(parts), ""
        else:
            integer, fraction = parts
    else:
        integer, fraction = text, ""
    value = float(f"{integer}.{fraction}") if fraction else float(integer)
    return value, len(fraction)


def extract_numbers(text: str) -> list[NumberMention]:
    """Every number mentioned in ``text``, in order of appearance."""
    mentions: list[NumberMention] = []
    for match in _TOKEN.finditer(text):
        parsed = parse_number(match.group("num"))
        if parsed is None:
            continue
        value, decimals = parsed
        scale = _scale(match.group("scale"))
        tolerance = 0.0 if scale == 1.0 and decimals == 0 else 0.5 * 10.0 ** (-decimals) * scale
        mentions.append(NumberMention(value=value * scale, tolerance=tolerance, text=match.group(0)))
    return mentions


def mentions_number(text: str, value: float) -> bool:
    """Whether ``text`` mentions ``value`` in any of the accepted notations."""
    return any(mention.matches(value) for mention in extract_numbers(text))
