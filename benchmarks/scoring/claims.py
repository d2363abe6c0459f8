"""The claims check: nothing an answer states may be wrong, even what the scenario's facts do not ask for.

The rest of the answer is read against the ERP's data for the question (:class:`Evidence`: the calls the
expectation names, with their results as the turn's user sees the ERP, and the question itself):

- **figures** come from that data (:func:`shared.grounding.ungrounded_figures`, the ERP's own grounding
  check); a figure at the wrong scale is wrong: ``215.111 millones`` is not the ERP's ₲215.111.000; a badly
  grouped one (``396.100.00``) is wrong whatever its digits;
- **figures are said of what they are of**: a year's, customer's or product's figure said of another
  (:func:`shared.grounding.misattributed_figures`, also the ERP's own check) is wrong;
- **amounts are guaraníes**: ``$38,158,000`` or ``… pesos`` is wrong even with the ERP's digits;
- **customers** named are the ones the question involves (:meth:`ErpNames.customers_named`).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date
from typing import Any

from benchmarks.scoring.entities import ErpNames
from benchmarks.scoring.numbers import foreign_amounts
from shared.figures import NumberMention, extract_numbers
from shared.grounding import grounding_sources, misattributed_figures, ungrounded_figures
from shared.turn import ExecutedOperation

__all__ = ["Evidence", "claim_problems"]

SCALES = (1e3, 1e6, 1e9)
"""The factors a figure written at the wrong scale is off by (thousands, millions, billions)."""


@dataclass(frozen=True)
class Evidence:
    """What the ERP knows that bears on one question."""

    calls: Sequence[tuple[str, dict[str, Any], Any]]
    """The calls the expectation names, as ``(operation, parameters, result)`` (the result any JSON)."""
    question: str
    """What the user wrote."""
    today: date
    """The ERP's today (its year, month and day are figures an answer may state)."""

    @property
    def results(self) -> list[Any]:
        """The results and the parameters of the calls."""
        return [part for _, params, result in self.calls for part in (result, params)]

    @property
    def operations(self) -> list[ExecutedOperation]:
        """The calls as the ERP records operations it ran."""
        return [
            ExecutedOperation(function=name, parameters=params, result=result)
            for name, params, result in self.calls
        ]

    def sources(self) -> list[float]:
        """The figures an answer may state (:func:`shared.grounding.grounding_sources`)."""
        return grounding_sources(self.results, [self.question], self.today)

    def customers(self, names: ErpNames) -> set[str]:
        """The customers the data or the question name."""
        text = json.dumps(self.results, ensure_ascii=False, default=str)
        return names.customers_named(f"{text}\n{self.question}")


def _scaled(figure: str, sources: Sequence[float]) -> float | None:
    """The ERP figure ``figure`` would be at another scale (``215.111 millones`` for 215111000), if any."""
    for mention in extract_numbers(figure)[:1]:
        for factor in (*SCALES, *(1 / scale for scale in SCALES)):
            scaled = NumberMention(mention.value / factor, mention.tolerance / factor, mention.text)
            found = next((source for source in sources if source >= 1 and scaled.matches(source)), None)
            if found is not None:
                return found
    return None


def claim_problems(answer: str, evidence: Evidence, names: ErpNames) -> list[str]:
    """What the answer states wrongly, in words (empty list: nothing)."""
    problems: list[str] = []
    sources = evidence.sources()
    wrong = ungrounded_figures(answer, sources)
    if wrong:
        scaled = [(figure, _scaled(figure, sources)) for figure in wrong]
        shown = ", ".join(
            figure if value is None else f"{figure} (the ERP's figure is {value:.0f}: a wrong magnitude)"
            for figure, value in scaled
        )
        problems.append(f"the answer states figures the ERP's data for this question does not give: {shown}")
    misattributed = misattributed_figures(answer, evidence.operations)
    if misattributed:
        problems.append(
            "the answer attributes figures to a year, customer or product they are not of in the ERP's data "
            f"(each figure, then what it was said of): {', '.join(misattributed)}"
        )
    foreign = foreign_amounts(answer)
    if foreign:
        problems.append(
            f"the answer gives amounts in another currency ({', '.join(foreign)}): the ERP's are guaraníes"
        )
    others = names.customers_named(answer) - evidence.customers(names)
    if others:
        problems.append(
            f"the answer names customers the question does not involve: {', '.join(sorted(others))}"
        )
    return problems
