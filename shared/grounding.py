"""Grounded answers: every figure an answer states must come from what the ERP knows, said of what it is.

The sources are the numbers of the operations' results and parameters (list lengths and column sums
included), of the texts the ERP sent (question, context, catalog), today's date, and sums, differences and
percentages of two of those. Figures are read however they are written (:mod:`shared.figures`: grouped
digits, scale words, exponents, numbers in words) and compared with a person's rounding; dates, list
numbering, codes glued to letters and identifiers are not figures, and a badly grouped number
(``396.100.00``) is a figure no source supports.

A figure found in a result must also be said of its *referents* (:func:`misattributed_figures`): ``En 2024
vendimos ₲850.000.000`` is wrong when ₲850.000.000 is what 2025 sold, even though the turn ran both years.
"""

from __future__ import annotations

import bisect
import json
import math
import re
from collections.abc import Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import date
from itertools import combinations
from typing import Any, Literal

from shared.answer import MemoryItem
from shared.figures import NumberMention, extract_numbers
from shared.text import fold, without_legal_form, without_pack_size, words
from shared.turn import ExecutedOperation

GroundingPolicy = Literal["refuse", "flag", "off"]
"""What an engine does with an answer that states ungrounded figures: ``refuse`` (default) shows the user a
clear message instead and stores neither the answer nor its memories; ``flag`` shows and stores the answer but
reports the figures in the turn's result; ``off`` does not check."""

MAX_DERIVED_SOURCES = 120
"""Sources combined pairwise for derived figures (the largest ones; 120 numbers are 7,140 pairs)."""

MIN_ATTRIBUTED = 100
"""Figures below this are not checked for their referents: months, ranks and small counts coincide with
values of unrelated results too easily."""

_LETTERS = "A-Za-zÁÉÍÓÚÑáéíóúñ"
_CURRENCIES = r"PYG|USD|EUR|BRL|ARS|Gs\.?|GS\.?|US\$|U\$S|R\$|₲|\$|€"
"""Currency codes and symbols: glued to digits they make an amount, not a code (``PYG990000000``)."""
_IDENTIFIERS = (
    r"ruc|c\.i\.|ci|c[ée]dula|facturas?|nro\.?|n[°º]|n[úu]mero|comprobante|timbrado|c[óo]digo|recibo"
)
"""Words that say the dash-joined digits after them identify something (``RUC 80000001-3``, ``factura
001-001-0000169``)."""
# Every part is linear-time on any input: runs of letters, digits and spaces are entered only at their start
# (a lookbehind or ``^``) and consumed possessively, so a failed match never retries inside a run.
_NOT_FIGURES = re.compile(
    r"\d{4}-\d{1,2}-\d{1,2}"  # ISO dates
    r"|\d{1,2}/\d{1,2}/\d{2,4}"  # 30/11/2026
    r"|(?<![\d.,])(?:0?[1-9]|[12]\d|3[01])\.(?:0?[1-9]|1[0-2])\.(?:\d{4}|\d{2})(?!\d|[.,]\d)"  # 30.11.2026
    r"|\b\d{1,2}:\d{2}(?::\d{2})?\b"  # times
    r"|(?m:^[^\S\n]*+(?:[-*][^\S\n]*+)?\d{1,2}(?:\.\d{1,2})*[.)](?=\s))"  # list numbering: 1. 2) 1.2.
    # an amount (kept): a currency glued to digits, dash-joined ones too (₲990000000-1, USD1500000)
    rf"|(?P<amount>(?<![{_LETTERS}])(?:{_CURRENCIES})[^\S\n]*+\d++(?:[-.,\u00a0\u202f\u2009]\d++)*+)"
    # an identifier its label names: RUC 80000001-1, Factura 001-001-0000169
    rf"|(?<![{_LETTERS}])(?i:{_IDENTIFIERS})[^\S\n]*+[:#.]?[^\S\n]*+\d++(?:-\d++)++"
    # the reference of an ERP error: (ref 8219e736), not 8219·10⁷³⁶
    rf"|(?<![{_LETTERS}])(?i:ref)[^\S\n]*+[:#.]?[^\S\n]*+[0-9a-fA-F]++(?![{_LETTERS}\d])"
    # codes glued to letters: F-001, A-1, SKU12, A1B2 (not an exponent: the e8 of 9,1e8)
    rf"|(?<![{_LETTERS}])(?!(?<=\d)[eE][+-]?\d)[{_LETTERS}]++[-_]?\d++(?:[-/]\d++|[{_LETTERS}]++\d++)*+"
    r"|(?P<code>(?<!\d)\d++(?:-\d++)++)"  # a bare code: RUC 80000001-1, invoice 001-001-0000169
)
"""What is not a figure, to blank, and the amounts (group ``amount``) no other part may take. A bare
dash-joined code (group ``code``) is not a figure when the ERP wrote it (:attr:`GroundingSources.codes`)."""
_CODE = re.compile(r"(?<!\d)\d++(?:-\d++)++")
"""A dash-joined group of digits in the ERP's data: a RUC (``80000001-3``), an invoice number."""
_SENTENCE_BREAK = re.compile(r"(?<=[.!?…])\s++(?=[¿¡\"'«(*_]*+[A-ZÁÉÍÓÚÑ])|\n")
"""Where a sentence ends: after ``.``, ``!``, ``?`` and a space before a capital (not inside
``850.000.000``, nor after ``Gs.`` before a figure), and at every line break (list items, table rows)."""
_YEAR = re.compile(r"(?<![\w.,])(?:20\d\d|2100)(?!\w|[.,]\d)")
"""A year written in a sentence: four digits from 2000 to 2100, not part of a longer number or code."""
_YEAR_IN_VALUE = re.compile(r"(?<!\d)(?:20\d\d|2100)(?!\d)")
"""A year inside a result's text (a ``fecha`` ``2025-03-01``)."""
_LETTER = re.compile(r"[^\W\d_]")
_COMPARISON = re.compile(
    r"\b(?:mas|menos)\s(?:que|de\slo\sque)\b|\brespecto\b|\bfrente\sa\b|\bcompar|\bdiferencia|\bvariacion"
    r"|\bcrec|\baument|\bincrement|\bdisminu|\bcaida|\bcay|\bsuper(?:a|an|o|aron|ando|ior|iores)\b"
    r"|\bsuma|\bjunt[oa]s\b|\bambos\b|\bconjunto\b|\bvs\b|\bversus\b"
)
"""Words of a sentence that relates figures of several referents (``106.000.000 más que en 2024``, ``entre
ambos suman``), read on :func:`shared.text.fold`-ed text: its figures are not checked for their referents."""


class GroundingSources(list[float]):
    """The values an answer may state (a list of numbers, the largest first) and the codes the ERP wrote."""

    codes: frozenset[str]
    """The dash-joined digit groups of the ERP's data (a RUC ``80000001-3``, an invoice number), as written:
    an answer may write them (see :func:`ungrounded_figures`)."""

    def __init__(self, values: Iterable[float] = (), codes: Iterable[str] = ()) -> None:
        super().__init__(values)
        self.codes = frozenset(codes)


def ungrounded_figures(text: str, sources: Sequence[float]) -> list[str]:
    """The figures ``text`` states that none of ``sources`` (see :func:`grounding_sources`) supports, as
    written, in order; ``[]`` when every figure is grounded (or the text states none).

    A figure matches a source with a person's rounding (:func:`_rounded`: ``₲850.000.000`` for 849.850.000),
    and a sum, difference or percentage of two sources (:func:`_derived`) at its written precision only (the
    half unit of its last written decimal or scale word). A percentage (``12,5 %``, ``12,5 por ciento``)
    matches a source or a percentage of two, at its written precision, never a sum.

    Codes: a currency glued to digits is an amount (``PYG990000000``, ``₲990000000-1``: each number is
    checked); a dash-joined group of digits its label names (``RUC 80000001-3``, ``factura
    001-001-0000169``) is an identifier, not a figure; a bare one (``80000001-3``, ``990000-000``) is a figure
    that only the very code in the ERP's data grounds (:attr:`GroundingSources.codes`): the ERP's own RUC is
    grounded, an invented one, or an amount written as one, is reported as written."""
    codes = sources.codes if isinstance(sources, GroundingSources) else frozenset[str]()
    known = _ascending(sources)
    derived: tuple[list[float], list[float]] | None = None
    missing: list[str] = []
    for mention in _figures(text, codes):
        if mention.malformed:
            missing.append(mention.text.strip())
            continue
        if _supported(mention if mention.percent else _rounded(mention), known):
            continue
        if derived is None:
            derived = _derived(sources)
        combined, percentages = derived
        if not _supported(mention, percentages) and (mention.percent or not _supported(mention, combined)):
            missing.append(mention.text.strip())
    return missing


def grounding_sources(results: Iterable[Any], texts: Iterable[str], today: date) -> GroundingSources:
    """Every value an answer may state: the numbers of ``results`` (operation results and parameters, any
    JSON), of ``texts`` (the question, the rendered context, the catalog) and of ``today``, with the codes
    the results and texts write (``80000001-3``). Derived figures (sums, differences, percentages of two
    result numbers) are added by :func:`ungrounded_figures`."""
    values: set[float] = set()
    codes: set[str] = set()
    for result in results:
        values.update(_numbers_in(result))
        codes.update(code.group(0) for text in _texts_in(result) for code in _CODE.finditer(text))
    for text in texts:
        values.update(mention.value for mention in extract_numbers(text))
        codes.update(code.group(0) for code in _CODE.finditer(text))
    values.update(float(n) for n in (today.year - 1, today.year, today.year + 1, today.month, today.day))
    # the largest first: derived figures combine those
    return GroundingSources(sorted(values, key=abs, reverse=True), codes)


def _ascending(values: Iterable[float]) -> list[float]:
    return sorted(value for value in values if math.isfinite(value))


def _near(mention: NumberMention, ascending: Sequence[float]) -> range:
    """The positions in ``ascending`` of the values ``mention`` may match (:meth:`NumberMention.matches`
    accepts at most its tolerance, plus a floating-point error this margin covers)."""
    margin = mention.tolerance * (1 + 1e-9) + 1e-6 + 1e-12 * abs(mention.value)
    low = bisect.bisect_left(ascending, mention.value - margin)
    return range(low, bisect.bisect_right(ascending, mention.value + margin, lo=low))


def _supported(mention: NumberMention, ascending: Sequence[float]) -> bool:
    return any(mention.matches(ascending[i]) for i in _near(mention, ascending))


def _blanked(text: str, codes: Collection[str] = ()) -> tuple[str, list[re.Match[str]]]:
    """``text`` with what is not a figure (dates, times, list numbering, codes) turned into spaces, the same
    length, so a position in one is the same position in the other; and the bare codes not in ``codes``."""
    unknown: list[re.Match[str]] = []

    def blank(match: re.Match[str]) -> str:
        if match.group("amount") is not None:
            return match.group(0)
        if match.group("code") is not None and match.group(0) not in codes:
            unknown.append(match)
        return " " * len(match.group(0))

    return _NOT_FIGURES.sub(blank, text), unknown


def _figures(text: str, codes: Collection[str]) -> Iterator[NumberMention]:
    """The figures ``text`` states, in order, as written (malformed ones included): its numbers outside what
    is not a figure, and each bare code ``codes`` lacks, as a figure no value matches."""
    blanked, unknown = _blanked(text, codes)
    position = 0
    for code in unknown:
        yield from extract_numbers(blanked[position : code.start()], malformed=True)
        yield NumberMention(math.nan, 0.0, code.group(0))
        position = code.end()
    yield from extract_numbers(blanked[position:], malformed=True)


def _rounded(mention: NumberMention) -> NumberMention:
    """A whole number ending in zeros stands for any value that rounds to it (``850.000.000`` for
    849.850.000): half a unit of its last non-zero digit. Only for the sources themselves: a derived figure
    and a percentage are matched as written (``4.000%`` is no rounding of 3641)."""
    value = mention.value
    if mention.malformed or mention.tolerance or value < 1000 or not value.is_integer():
        return mention
    zeros = len(str(int(value))) - len(str(int(value)).rstrip("0"))
    return replace(mention, tolerance=0.5 * 10.0**zeros)


def _numbers_in(value: Any) -> Iterator[float]:
    """Numbers of a JSON value: numbers, numbers inside strings, list lengths, numeric column sums."""
    if isinstance(value, bool) or value is None:
        return
    if isinstance(value, int | float):
        if math.isfinite(value):
            yield float(value)
    elif isinstance(value, str):
        yield from (mention.value for mention in extract_numbers(value))
    elif isinstance(value, dict):
        for item in value.values():
            yield from _numbers_in(item)
    elif isinstance(value, list | tuple):
        yield float(len(value))
        columns: dict[str, float] = {}
        for item in value:
            yield from _numbers_in(item)
            if isinstance(item, dict):
                for key, cell in item.items():
                    if isinstance(cell, int | float) and not isinstance(cell, bool):
                        columns[key] = columns.get(key, 0.0) + float(cell)
        yield from columns.values()


def _derived(sources: Sequence[float]) -> tuple[list[float], list[float]]:
    """Sums and differences, then percentages and percentage changes, of pairs of the largest sources (each
    list ascending)."""
    base = [value for value in sources if value][:MAX_DERIVED_SOURCES]
    combined: list[float] = []
    percentages: list[float] = []
    for a, b in combinations(base, 2):
        combined.extend((a + b, abs(a - b)))
        percentages.extend((a / b * 100, b / a * 100, abs(a - b) / abs(b) * 100, abs(a - b) / abs(a) * 100))
    return _ascending(combined), _ascending(percentages)


@dataclass(frozen=True)
class _Leaf:
    """One number of an operation's result, with what it is a number of."""

    value: float
    years: frozenset[int]
    """The years it is of: the operation's year parameter and any year inside the texts around it."""
    names: frozenset[str]
    """The texts around it that name something (customer, product, SKU, category), and the text parameters."""


def misattributed_figures(text: str, operations: Sequence[ExecutedOperation]) -> list[str]:
    """The figures ``text`` takes from an operation's result but says of another year, customer or product,
    as written (the number, as :func:`ungrounded_figures` shows it) with what they were said of
    (``850.000.000 (2024)`` for ``En 2024 vendimos ₲850.000.000``), in order; ``[]`` when there are none.

    Each number of a result is *of* the operation's year and text parameters and of the texts of the records
    around it (a product's row, the result's customer), with the years inside them. A sentence of ``text``
    names years (2000 to 2100) and those texts that a result writes (whole words; a customer without its
    legal form, a product without its pack size); only what some result number is of counts. A figure
    matching result numbers (as :func:`ungrounded_figures` reads it) is misattributed when the sentence
    names years or names and none of the matching numbers agrees with it: in each kind the sentence names, a
    number agrees when it is of one of them or of none of that kind (a year's total is of no customer).
    Figures matching no result number, below :data:`MIN_ATTRIBUTED`, written as a year, or in a sentence that
    compares (``más que``, ``suman``) are not checked."""
    leaves = sorted(_leaves(operations), key=lambda leaf: leaf.value)
    if not leaves:
        return []
    values = [leaf.value for leaf in leaves]
    known_years = frozenset(year for leaf in leaves for year in leaf.years)
    # a sentence names what the results write (a parameter may be a loose word of the model's: "este")
    written = {text for operation in operations if operation.ok for text in _texts_in(operation.result)}
    known_names = {name for leaf in leaves for name in leaf.names} & written
    aliases = {name: _aliases(name) for name in known_names}
    first_words = {name: words(name).split()[0] for name in known_names}
    blanked, _ = _blanked(text)
    wrong: list[str] = []
    for start, end in _sentences(text):
        sentence = text[start:end]
        read = extract_numbers(blanked[start:end], malformed=True)
        figures = [_rounded(mention) for mention in read if _attributable(mention)]
        if not figures or _COMPARISON.search(fold(sentence)):
            continue
        found = words(sentence)
        years = {int(match.group(0)) for match in _YEAR.finditer(sentence)} & known_years
        names = {name for name, forms in aliases.items() if any(form in found for form in forms)}
        if not years and not names:
            continue
        # a name shortened beyond its aliases (``el Taladro``) by its first word, unless that word starts a
        # name the sentence gives in full (``Comercial Sur`` is not ``Comercial Guaraní``)
        given = {first_words[name] for name in names}
        loose = {
            name
            for name, first in first_words.items()
            if len(first) >= 3 and first not in given and f" {first} " in found
        }
        for mention in figures:
            matching = [leaves[i] for i in _near(mention, values) if mention.matches(leaves[i].value)]
            if matching and not any(_agrees(leaf, years, names, loose) for leaf in matching):
                wrong.append(f"{mention.text.strip()} ({_said_of(matching, years, names)})")
    return wrong


def _leaves(operations: Sequence[ExecutedOperation]) -> Iterator[_Leaf]:
    for operation in operations:
        if operation.ok:
            years, names = _referents(operation.parameters.values())
            yield from _leaves_in(operation.result, years, names)


def _leaves_in(value: Any, years: frozenset[int], names: frozenset[str]) -> Iterator[_Leaf]:
    if isinstance(value, bool) or value is None:
        return
    if isinstance(value, int | float):
        # a result's own year (``anio``) is what its figures are of, not a figure of it
        if math.isfinite(value) and not (float(value).is_integer() and int(value) in years):
            yield _Leaf(float(value), years, names)
    elif isinstance(value, dict):
        more_years, more_names = _referents(item for item in value.values() if isinstance(item, str))
        years, names = years | more_years, names | more_names
        for item in value.values():
            yield from _leaves_in(item, years, names)
    elif isinstance(value, list | tuple):
        for item in value:
            yield from _leaves_in(item, years, names)


def _texts_in(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _texts_in(item)
    elif isinstance(value, list | tuple):
        for item in value:
            yield from _texts_in(item)


def _referents(values: Iterable[Any]) -> tuple[frozenset[int], frozenset[str]]:
    """The years and the names among ``values`` (parameters, or the texts of a record): a year is a number
    from 2000 to 2100 or one inside a text; a name is a text with a letter (``2025-03-01`` is none)."""
    years: set[int] = set()
    names: set[str] = set()
    for value in values:
        if isinstance(value, str):
            years.update(int(match.group(0)) for match in _YEAR_IN_VALUE.finditer(value))
            if _LETTER.search(value):
                names.add(value)
        elif isinstance(value, int) and not isinstance(value, bool) and 2000 <= value <= 2100:
            years.add(value)
    return frozenset(years), frozenset(names)


def _aliases(name: str) -> tuple[str, ...]:
    """The :func:`shared.text.words` forms that name ``name``: itself, without its legal form (a customer)
    and without its pack size (a product)."""
    forms = {words(name), words(without_legal_form(name)), words(without_pack_size(name))}
    return tuple(form for form in forms if form.strip())


def _sentences(text: str) -> Iterator[tuple[int, int]]:
    """The ``(start, end)`` of each sentence of ``text``."""
    start = 0
    for match in _SENTENCE_BREAK.finditer(text):
        yield start, match.start()
        start = match.end()
    yield start, len(text)


def _attributable(mention: NumberMention) -> bool:
    """Whether a figure can be checked for its referents: readable, not small, not a year."""
    if mention.malformed or abs(mention.value) < MIN_ATTRIBUTED:
        return False
    return not _YEAR.fullmatch(mention.text.strip())


def _agrees(leaf: _Leaf, years: set[int], names: set[str], loose: set[str]) -> bool:
    """Whether ``leaf`` may be what a sentence naming ``years`` and ``names`` (and, shortened, ``loose``)
    speaks of: in each kind the sentence names, of one of them or of none of that kind."""
    if years and leaf.years and not leaf.years & years:
        return False
    return not names or not leaf.names or bool(leaf.names & (names | loose))


def _said_of(matching: Sequence[_Leaf], years: set[int], names: set[str]) -> str:
    """What a misattributed figure was said of: the sentence's years and names that no matching number is
    of, in the kinds the numbers have (all it names when that leaves nothing)."""
    of_years = {year for leaf in matching for year in leaf.years}
    of_names = {name for leaf in matching for name in leaf.names}
    shown = [str(year) for year in sorted(years - of_years)] if of_years else []
    shown += _distinct(names - of_names) if of_names else []
    return ", ".join(shown or [*map(str, sorted(years)), *_distinct(names)])


def _distinct(names: Iterable[str]) -> list[str]:
    """``names`` sorted, one per customer or product (``Importadora del Este S.A.``, not also the
    ``Importadora del Este`` a parameter gave)."""
    shown: dict[str, str] = {}
    for name in sorted(names, key=len, reverse=True):
        shown.setdefault(words(without_legal_form(without_pack_size(name))), name)
    return sorted(shown.values())


@dataclass(frozen=True)
class GroundingCheck:
    """An answer checked against the ERP's sources."""

    figures: list[str]
    """The answer's figures no source supports, as written, then those it says of the wrong year, customer or
    product, with what it said them of (``850.000.000 (2024)``; :func:`misattributed_figures`); ``[]``:
    grounded."""
    memories: list[MemoryItem]
    """The memory items to store: those whose figures are all grounded and rightly attributed (wrong figures
    are never remembered, whatever the policy)."""
    state: dict[str, Any] = field(default_factory=dict)
    """The model-written state to store: its entries whose figures are all grounded (a made-up figure in
    ``estado`` would otherwise ground a later answer)."""


def check_answer(
    answer: str,
    memories: Sequence[MemoryItem],
    operations: Sequence[ExecutedOperation],
    texts: Iterable[str],
    today: date,
    state: Mapping[str, Any] | None = None,
) -> GroundingCheck:
    """Check ``answer``, ``memories`` and the model-written ``state`` against the results, parameters and
    refusals of the turn's ``operations``, the ``texts`` the ERP sent (question, context without the
    model-written state, catalog) and ``today``."""
    results: list[Any] = [op.result for op in operations if op.ok]
    results.extend(op.parameters for op in operations)
    refusals = [op.error for op in operations if op.error]  # what the ERP said when it refused
    sources = grounding_sources(results, [*texts, *refusals], today)

    def wrong(text: str) -> list[str]:
        return [*ungrounded_figures(text, sources), *misattributed_figures(text, operations)]

    kept = [item for item in memories if not wrong(item.content)]
    written = {
        key: value
        for key, value in (state or {}).items()
        if not wrong(value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str))
    }
    return GroundingCheck(figures=wrong(answer), memories=kept, state=written)
