"""Reading the figures a text states, however it was written (Spanish and English styles).

``₲850.000.000``, ``850,000,000``, ``Gs. 850.000.000``, ``850 millones`` and ``0,85 mil millones`` all mention
850000000. A figure with a scale word or decimals tolerates half a unit of its last written digit, at most
:data:`MAX_RELATIVE_ERROR`. With both ``.`` and ``,`` the last is the decimal separator; one kind repeated
groups thousands; one kind once groups thousands only before exactly three digits (``1.500``, not ``12,5``).
Malformed groups (``1.5.3``, ``396.100.00``) are not numbers: :func:`extract_numbers` skips them, or, asked
for them, reports each as a *malformed* mention, a figure that matches no value (a figure nobody can read is
not the ERP's, whatever its digits).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

MAX_RELATIVE_ERROR = 0.05
"""The widest rounding accepted, relative to the target: what two significant digits guarantee."""

_SPACES = "\u00a0\u202f\u2009"
NUMBER_TOKEN = re.compile(
    rf"(?<!\d)(?<!\d[.,{_SPACES}])(?P<num>\d+(?:[.,{_SPACES}]\d+)*)"
    r"(?:\s*(?P<scale>mil\s+millones|millones|mill[oó]n|billones|bill[oó]n|mil)\b)?",
    re.IGNORECASE,
)
"""One written number: its digits and separators (group ``num``) and any scale word after it (``scale``)."""
_SHAPE = re.compile(rf"\d+(?:[.,{_SPACES}]\d+)*")
_GROUPED = re.compile(r"[1-9]\d{0,2}(?:_\d{3})+")
"""An integer part whose thousands separators were all replaced by ``_``."""
_SCALES = {
    "mil": 1e3,
    "mil millones": 1e9,
    "millones": 1e6,
    "millon": 1e6,
    "millón": 1e6,
    "billones": 1e12,
    "billon": 1e12,
    "billón": 1e12,
}


@dataclass(frozen=True)
class NumberMention:
    """A number found in a text."""

    value: float
    """The number, with any scale word applied."""
    tolerance: float
    """Half a unit of the last written digit (times the scale); 0 for plain integers."""
    text: str
    """The text the number was read from."""

    @property
    def malformed(self) -> bool:
        """Whether the text is a badly grouped number (``396.100.00``): it stands for no value (``value`` is
        NaN)."""
        return math.isnan(self.value)

    def matches(self, target: float) -> bool:
        """Whether this mention is a faithful rendering of ``target`` (see :data:`MAX_RELATIVE_ERROR`); a
        malformed mention matches nothing."""
        if self.malformed:
            return False
        tolerance = min(self.tolerance, MAX_RELATIVE_ERROR * abs(target))
        return abs(self.value - target) <= tolerance + 1e-9 + 1e-15 * abs(target)


def _scale(word: str | None) -> float:
    if not word:
        return 1.0
    return _SCALES.get(" ".join(word.lower().split()), 1.0)


def _integer(text: str, grouping: str) -> str | None:
    """The digits of an integer part grouped by ``grouping`` (or spaces); ``None`` if badly grouped."""
    marked = re.sub(rf"[{re.escape(grouping)}{_SPACES}]", "_", text)
    if "_" not in marked:
        return marked
    return marked.replace("_", "") if _GROUPED.fullmatch(marked) else None


def parse_number(token: str) -> tuple[float, int] | None:
    """Parse one numeric token (digits and separators) into ``(value, decimals)``; ``None`` if malformed."""
    text = token.strip()
    if not _SHAPE.fullmatch(text):
        return None
    dots, commas = text.count("."), text.count(",")
    if dots and commas:
        decimal = "." if text.rfind(".") > text.rfind(",") else ","
        grouping = "," if decimal == "." else "."
        head, _, fraction = text.rpartition(decimal)
        if decimal in head:
            return None
    elif dots + commas == 1:
        decimal = "." if dots else ","
        grouping = decimal
        head, _, fraction = text.partition(decimal)
        if len(fraction) == 3 and re.fullmatch(r"[1-9]\d{0,2}", head):
            head, fraction = text, ""
    else:
        grouping = "." if dots else ","
        head, fraction = text, ""
    if re.search(rf"[{_SPACES}]", fraction):
        return None
    integer = _integer(head, grouping)
    if integer is None:
        return None
    value = float(f"{integer}.{fraction}") if fraction else float(integer)
    return value, len(fraction)


def extract_numbers(text: str, *, malformed: bool = False) -> list[NumberMention]:
    """Every number mentioned in ``text``, in order of appearance; with ``malformed``, the badly grouped ones
    too, as :attr:`~NumberMention.malformed` mentions (otherwise they are skipped)."""
    mentions: list[NumberMention] = []
    for match in NUMBER_TOKEN.finditer(text):
        parsed = parse_number(match.group("num"))
        if parsed is None:
            if malformed:
                mentions.append(NumberMention(value=math.nan, tolerance=0.0, text=match.group(0)))
            continue
        value, decimals = parsed
        scale = _scale(match.group("scale"))
        tolerance = 0.0 if scale == 1.0 and decimals == 0 else 0.5 * 10.0 ** (-decimals) * scale
        mentions.append(NumberMention(value=value * scale, tolerance=tolerance, text=match.group(0)))
    return mentions


def mentions_number(text: str, value: float) -> bool:
    """Whether ``text`` mentions ``value`` in any of the accepted notations."""
    return any(mention.matches(value) for mention in extract_numbers(text))
