"""Grounded answers: every figure an answer states must come from what the ERP knows.

The sources are the numbers of the operations' results and parameters (list lengths and column sums
included), of the texts the ERP sent (question, context, catalog), today's date, and sums, differences and
percentages of two of those. Figures are compared with a person's rounding (:mod:`shared.figures`); dates,
list numbering and codes glued to letters are not figures.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import date
from itertools import combinations
from typing import Any, Literal

from shared.answer import MemoryItem
from shared.figures import NumberMention, extract_numbers
from shared.result_text import call_text, result_lines
from shared.turn import ExecutedOperation

GroundingPolicy = Literal["refuse", "flag", "off"]
"""What an engine does with an answer that states ungrounded figures: ``refuse`` (default) shows the user a
clear message instead and stores neither the answer nor its memories; ``flag`` shows and stores the answer but
reports the figures in the turn's result; ``off`` does not check."""

MAX_DERIVED_SOURCES = 120
"""Sources combined pairwise for derived figures (the largest ones; 120 numbers are 7,140 pairs)."""

_NOT_FIGURES = re.compile(
    r"\d{4}-\d{1,2}-\d{1,2}"  # ISO dates
    r"|\d{1,2}/\d{1,2}/\d{2,4}"  # 30/11/2026
    r"|\b\d{1,2}:\d{2}(?::\d{2})?\b"  # times
    r"|(?m:^\s*(?:[-*]\s*)?\d{1,2}[.)](?=\s))"  # list numbering
    r"|[A-Za-zÁÉÍÓÚÑáéíóúñ]+[-_]?\d+(?:[-/]\d+)*"  # codes glued to letters: F-001, A-1, SKU12
    r"|\d+-\d+"  # RUC 80000001-1
)


def ungrounded_figures(text: str, sources: Sequence[float]) -> list[str]:
    """The figures ``text`` states that none of ``sources`` (see :func:`grounding_sources`) supports, as
    written, in order; ``[]`` when every figure is grounded (or the text states none)."""
    derived: list[float] | None = None
    missing: list[str] = []
    for mention in _figures(text):
        if any(mention.matches(value) for value in sources):
            continue
        if derived is None:
            derived = _derived(sources)
        if not any(mention.matches(value) for value in derived):
            missing.append(mention.text.strip())
    return missing


def grounding_sources(results: Iterable[Any], texts: Iterable[str], today: date) -> list[float]:
    """Every value an answer may state: the numbers of ``results`` (operation results and parameters, any
    JSON), of ``texts`` (the question, the rendered context, the catalog) and of ``today``. Derived figures
    (sums, differences, percentages of two result numbers) are added by :func:`ungrounded_figures`."""
    values: set[float] = set()
    for result in results:
        values.update(_numbers_in(result))
    for text in texts:
        values.update(mention.value for mention in extract_numbers(text))
    values.update(float(n) for n in (today.year - 1, today.year, today.year + 1, today.month, today.day))
    return sorted(values, key=abs, reverse=True)  # the largest first: derived figures combine those


def _figures(text: str) -> Iterator[NumberMention]:
    blanked = _NOT_FIGURES.sub(lambda match: " " * len(match.group(0)), text)
    for mention in extract_numbers(blanked):
        yield _rounded(mention)


def _rounded(mention: NumberMention) -> NumberMention:
    """A whole number ending in zeros stands for any value that rounds to it (``850.000.000`` for
    849.850.000): half a unit of its last non-zero digit."""
    value = mention.value
    if mention.tolerance or value < 1000 or not value.is_integer():
        return mention
    zeros = len(str(int(value))) - len(str(int(value)).rstrip("0"))
    return NumberMention(value=value, tolerance=0.5 * 10.0**zeros, text=mention.text)


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


def _derived(sources: Sequence[float]) -> list[float]:
    """Sums, differences, percentages and percentage changes of pairs of the largest sources."""
    base = [value for value in sources if value][:MAX_DERIVED_SOURCES]
    derived: list[float] = []
    for a, b in combinations(base, 2):
        derived.extend((a + b, abs(a - b), a / b * 100, b / a * 100))
        derived.extend((abs(a - b) / abs(b) * 100, abs(a - b) / abs(a) * 100))
    return derived


@dataclass(frozen=True)
class GroundingCheck:
    """An answer checked against the ERP's sources."""

    figures: list[str]
    """The answer's figures no source supports, as written (``[]``: grounded)."""
    memories: list[MemoryItem]
    """The memory items to store: those whose figures are all grounded (invented figures are never
    remembered, whatever the policy)."""


def check_answer(
    answer: str,
    memories: Sequence[MemoryItem],
    operations: Sequence[ExecutedOperation],
    texts: Iterable[str],
    today: date,
) -> GroundingCheck:
    """Check ``answer`` and ``memories`` against the results, parameters and refusals of the turn's
    ``operations``, the ``texts`` the ERP sent (question, context, catalog) and ``today``."""
    results: list[Any] = [op.result for op in operations if op.ok]
    results.extend(op.parameters for op in operations)
    refusals = [op.error for op in operations if op.error]  # what the ERP said when it refused
    sources = grounding_sources(results, [*texts, *refusals], today)
    kept = [item for item in memories if not ungrounded_figures(item.content, sources)]
    return GroundingCheck(figures=ungrounded_figures(answer, sources), memories=kept)


def ungrounded_answer(figures: Sequence[str], operations: Sequence[ExecutedOperation]) -> str:
    """What the user reads instead of an answer with ungrounded ``figures``: which figures, and the ERP's
    own plain-text rendering of the results of the operations that ran (:mod:`shared.result_text`; none ran:
    a request to ask again)."""
    shown = ", ".join(figures[:5]) + (" …" if len(figures) > 5 else "")
    head = (
        "Lo siento, no puedo confirmar con los datos del ERP algunas cifras de la respuesta del modelo "
        f"({shown}), así que no la muestro ni la guardo."
    )
    ran = [op for op in operations if op.ok]
    if not ran:
        return f"{head} ¿Puede intentarlo de nuevo o reformular la pregunta?"
    lines = [f"{head} Esto es lo que devolvió el ERP:"]
    for op in ran:
        lines.append(f"- {call_text(op.function, op.parameters)}:")
        lines += result_lines(op.result, indent="  ")
    return "\n".join(lines)
