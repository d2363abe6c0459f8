"""Reading the figures a text states, however it was written (Spanish and English styles).

``₲850.000.000``, ``850,000,000``, ``Gs. 850.000.000``, ``850 millones``, ``0,85 mil millones``, ``8,5e8``
and ``ochocientos cincuenta millones`` all mention 850000000. A figure with a scale word, an exponent or
decimals tolerates half a unit of its last written digit, at most :data:`MAX_RELATIVE_ERROR`. With both ``.``
and ``,`` the last is the decimal separator; one kind repeated groups thousands; one kind once groups
thousands only before exactly three digits (``1.500``, not ``12,5``). Malformed groups (``1.5.3``,
``396.100.00``) are not numbers: :func:`extract_numbers` skips them, or, asked for them, reports each as a
*malformed* mention, a figure that matches no value (a figure nobody can read is not the ERP's, whatever its
digits); so is a number too large to hold (``1e999``).

Numbers in words (Spanish and English: units, tens, hundreds, ``mil``/``thousand``, ``millón``/``million``,
``mil millones``, ``billón`` = 10¹², ``billion`` = 10⁹) are figures only when they name a scale or come to
100 or more (``nueve mil millones``, ``novecientos``, ``one billion``): ``uno de sus clientes`` and ``las dos
facturas`` state no figure, nor do ``mil`` or ``ciento`` alone (``mil gracias``, ``doce por ciento``). A
figure followed by ``%`` or ``por ciento`` is a percentage (:attr:`NumberMention.percent`).
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator
from dataclasses import dataclass, field

MAX_RELATIVE_ERROR = 0.05
"""The widest rounding accepted, relative to the target: what two significant digits guarantee."""

MAX_EXPONENT = 300
"""The largest power of ten an exponent may write (``1e300``); a larger one is read as a malformed figure."""

# Numbers in words: each small word with its value, the place it fills first and the place it leaves filled
# (3 hundreds, 2 tens, 1 units): ``quince`` fills the tens and the units, so no unit may follow it.
_UNITS = {
    **dict.fromkeys(("un", "uno", "una", "one"), 1),
    **dict.fromkeys(("dos", "two"), 2),
    **dict.fromkeys(("tres", "three"), 3),
    **dict.fromkeys(("cuatro", "four"), 4),
    **dict.fromkeys(("cinco", "five"), 5),
    **dict.fromkeys(("seis", "six"), 6),
    **dict.fromkeys(("siete", "seven"), 7),
    **dict.fromkeys(("ocho", "eight"), 8),
    **dict.fromkeys(("nueve", "nine"), 9),
}
_TEENS = {
    **dict.fromkeys(("diez", "ten"), 10),
    **dict.fromkeys(("once", "eleven"), 11),
    **dict.fromkeys(("doce", "twelve"), 12),
    **dict.fromkeys(("trece", "thirteen"), 13),
    **dict.fromkeys(("catorce", "fourteen"), 14),
    **dict.fromkeys(("quince", "fifteen"), 15),
    **dict.fromkeys(("dieciséis", "dieciseis", "sixteen"), 16),
    **dict.fromkeys(("diecisiete", "seventeen"), 17),
    **dict.fromkeys(("dieciocho", "eighteen"), 18),
    **dict.fromkeys(("diecinueve", "nineteen"), 19),
    **dict.fromkeys(("veintiún", "veintiun", "veintiuno", "veintiuna"), 21),
    **dict.fromkeys(("veintidós", "veintidos"), 22),
    **dict.fromkeys(("veintitrés", "veintitres"), 23),
    "veinticuatro": 24,
    "veinticinco": 25,
    **dict.fromkeys(("veintiséis", "veintiseis"), 26),
    "veintisiete": 27,
    "veintiocho": 28,
    "veintinueve": 29,
}
_TENS = {
    **dict.fromkeys(("veinte", "twenty"), 20),
    **dict.fromkeys(("treinta", "thirty"), 30),
    **dict.fromkeys(("cuarenta", "forty"), 40),
    **dict.fromkeys(("cincuenta", "fifty"), 50),
    **dict.fromkeys(("sesenta", "sixty"), 60),
    **dict.fromkeys(("setenta", "seventy"), 70),
    **dict.fromkeys(("ochenta", "eighty"), 80),
    **dict.fromkeys(("noventa", "ninety"), 90),
}
_HUNDREDS = {
    **dict.fromkeys(("cien", "ciento"), 100),
    **dict.fromkeys(("doscientos", "doscientas"), 200),
    **dict.fromkeys(("trescientos", "trescientas"), 300),
    **dict.fromkeys(("cuatrocientos", "cuatrocientas"), 400),
    **dict.fromkeys(("quinientos", "quinientas"), 500),
    **dict.fromkeys(("seiscientos", "seiscientas"), 600),
    **dict.fromkeys(("setecientos", "setecientas"), 700),
    **dict.fromkeys(("ochocientos", "ochocientas"), 800),
    **dict.fromkeys(("novecientos", "novecientas"), 900),
}
_SMALL = {
    **{word: (value, 1, 1) for word, value in _UNITS.items()},
    **{word: (value, 2, 1) for word, value in _TEENS.items()},
    **{word: (value, 2, 2) for word, value in _TENS.items()},
    **{word: (value, 3, 3) for word, value in _HUNDREDS.items()},
}
"""A small number word: its value, the place it fills first and the place it leaves filled."""
_THOUSANDS = frozenset(("mil", "thousand"))
_LARGE = {
    **dict.fromkeys(("millón", "millon", "millones", "million"), 1e6),
    "billion": 1e9,
    **dict.fromkeys(("billón", "billon", "billones"), 1e12),
}
"""Scale words that close a group: what the words before them count (``dos millones``)."""
_NOT_ALONE = frozenset(("mil", "ciento"))
"""Words that are prose when they are all a phrase says (``mil gracias``, ``por ciento``)."""
_NUMBER_WORDS = sorted([*_SMALL, *_THOUSANDS, *_LARGE, "hundred"], key=len, reverse=True)
_WORD = "(?:" + "|".join(_NUMBER_WORDS) + r")(?!\w)"
_WORD_TOKEN = re.compile(r"[^\W\d_]+")

_SPACES = "\u00a0\u202f\u2009"
NUMBER_TOKEN = re.compile(
    rf"(?<!\d)(?<!\d[.,{_SPACES}])(?P<num>\d+(?:[.,{_SPACES}]\d+)*)"
    r"(?:[eE](?P<exp>[+-]?\d++)"
    r"|\s*(?P<scale>mil\s+millones|millones|mill[oó]n|billones|bill[oó]n|mil|thousand|million|billion)\b)?"
    # a run of number words, entered only at a word's start and consumed possessively (linear time)
    rf"|(?<!\w)(?P<words>{_WORD}(?:(?:[^\S\n]++|-)(?:(?:y|and)[^\S\n]++)?{_WORD})*+)",
    re.IGNORECASE,
)
"""One written number: its digits and separators (group ``num``) and any exponent (``exp``, ``9,1e8``) or
scale word after it (``scale``); or a run of number words (``words``), which may state several numbers or none
(:func:`extract_numbers` reads it)."""
_PERCENT = re.compile(r"[^\S\n]*+(?:%|por[^\S\n]++ciento\b|percent\b)", re.IGNORECASE)
"""What makes the number before it a percentage."""
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
    "thousand": 1e3,
    "million": 1e6,
    "billion": 1e9,
}


@dataclass(frozen=True)
class NumberMention:
    """A number found in a text."""

    value: float
    """The number, with any scale word or exponent applied."""
    tolerance: float
    """Half a unit of the last written digit (times the scale); 0 for plain integers and numbers in words."""
    text: str
    """The text the number was read from."""
    percent: bool = field(default=False, kw_only=True)
    """Whether the text writes it as a percentage (followed by ``%`` or ``por ciento``)."""

    @property
    def malformed(self) -> bool:
        """Whether the text is a badly grouped number (``396.100.00``) or one too large to hold: it stands for
        no value (``value`` is NaN)."""
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


class _Spoken:
    """A number being read from words, one word at a time: ``add`` refuses a word that cannot continue it
    (``dos tres``, ``nueve nueve``: two numbers), so the caller starts the next number there."""

    def __init__(self) -> None:
        self.total = 0.0  # the groups closed by a large scale word (millones, billion)
        self.thousands = 0.0  # the current group's part before its mil/thousand
        self.small = 0  # the current group's part below a thousand
        self.place = 4  # the place the last small word left filled (4: none yet)
        self.large = math.inf  # the last large scale: the next one must be smaller
        self.after_mil = False
        self.scaled = False
        self.last = ""
        self.words: list[str] = []
        self.start = self.end = 0

    def add(self, word: str, start: int, end: int) -> bool:
        """Continue the number with ``word`` (at ``start:end``); ``False``, unchanged, if it cannot."""
        if word in _SMALL:
            value, first, left = _SMALL[word]
            if first >= self.place:
                return False
            self.small += value
            self.place = left
        elif word == "hundred":
            if self.place != 1 or not 0 < self.small < 100:
                return False
            self.small *= 100
            self.place = 3
        elif word in _THOUSANDS:
            if self.after_mil or (word == "thousand" and not self.small):
                return False
            self.thousands, self.small = (self.small or 1) * 1000.0, 0
            self.after_mil, self.place, self.scaled = True, 4, True
        elif word in _LARGE:
            count = self.thousands + self.small
            if not count or _LARGE[word] >= self.large:
                return False
            self.total += count * _LARGE[word]
            self.thousands, self.small, self.large = 0.0, 0, _LARGE[word]
            self.after_mil, self.place, self.scaled = False, 4, True
        else:
            return False
        self.start = start if not self.words else self.start
        self.end = end
        self.words.append(word)
        self.last = word
        return True

    def joins(self, joiner: str, following: str | None) -> bool:
        """Whether ``joiner`` (``y``, ``and``) joins this number to ``following``: ``noventa y nueve``,
        ``one hundred and five``; otherwise it separates two numbers (``dos y tres``)."""
        if following not in _SMALL or not self.words:
            return False
        if joiner == "y":
            return self.last in _TENS and _SMALL[following][1] == 1
        return self.last == "hundred" or self.last in _THOUSANDS or self.last in _LARGE

    @property
    def value(self) -> float:
        """The number the words read so far say."""
        return self.total + self.thousands + self.small

    @property
    def figure(self) -> bool:
        """Whether the words state a figure: they name a scale or come to 100 or more, and are not one word
        that is prose alone (``mil gracias``)."""
        if len(self.words) == 1 and self.words[0] in _NOT_ALONE:
            return False
        return self.scaled or self.value >= 100


def _spoken(run: str) -> Iterator[tuple[int, int, float]]:
    """``(start, end, value)`` of each figure a run of number words states (see :class:`_Spoken`)."""
    tokens = [(match.start(), match.end(), match.group(0).lower()) for match in _WORD_TOKEN.finditer(run)]
    number = _Spoken()
    for index, (start, end, word) in enumerate(tokens):
        if word in ("y", "and"):
            following = tokens[index + 1][2] if index + 1 < len(tokens) else None
            if number.joins(word, following):
                continue
        elif number.add(word, start, end):
            continue
        if number.figure:
            yield number.start, number.end, number.value
        number = _Spoken()
        number.add(word, start, end)  # a joiner, or a scale word with nothing to count, starts nothing
    if number.figure:
        yield number.start, number.end, number.value


def _digits(match: re.Match[str]) -> tuple[float, float]:
    """``(value, tolerance)`` of a number written in digits (NaN: malformed, or too large to hold)."""
    parsed = parse_number(match.group("num"))
    exponent = match.group("exp")
    if parsed is None or (exponent is not None and len(exponent.lstrip("+-")) > 3):
        return math.nan, 0.0
    value, decimals = parsed
    if exponent is not None:
        if abs(int(exponent)) > MAX_EXPONENT:
            return math.nan, 0.0
        scale = 10.0 ** int(exponent)
    else:
        scale = _scale(match.group("scale"))
    tolerance = 0.0 if scale == 1.0 and decimals == 0 else 0.5 * 10.0 ** (-decimals) * scale
    value *= scale
    return (value, tolerance) if math.isfinite(value) else (math.nan, 0.0)


def extract_numbers(text: str, *, malformed: bool = False) -> list[NumberMention]:
    """Every number mentioned in ``text``, in order of appearance; with ``malformed``, the badly grouped ones
    (and those too large to hold) too, as :attr:`~NumberMention.malformed` mentions (otherwise they are
    skipped)."""
    mentions: list[NumberMention] = []
    for match in NUMBER_TOKEN.finditer(text):
        percent = _PERCENT.match(text, match.end()) is not None
        run = match.group("words")
        if run is not None:
            for start, end, value in _spoken(run):
                said = NumberMention(value, 0.0, run[start:end], percent=percent and end == len(run))
                mentions.append(said)
            continue
        value, tolerance = _digits(match)
        if math.isnan(value) and not malformed:
            continue
        mentions.append(NumberMention(value, tolerance, match.group(0), percent=percent))
    return mentions


def mentions_number(text: str, value: float) -> bool:
    """Whether ``text`` mentions ``value`` in any of the accepted notations."""
    return any(mention.matches(value) for mention in extract_numbers(text))
