"""Two modes compared turn by turn on a per-turn figure (model calls, input tokens, latency, time to the
first answer): on the turns both ran, how often each mode had the lower figure, and whether that split
could be chance.

The test is the exact sign test on the turns whose figures differ (ties left out): the same two-sided
binomial test as McNemar's on discordant pairs (:func:`benchmarks.stats.mcnemar_exact`), so a statement such
as "toolcalling answers sooner" is made only when the split is significant (p < 0.05)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TypeVar

from benchmarks.results import TurnRow
from benchmarks.stats import mcnemar_exact

ALPHA = 0.05
"""The significance level of every sign test."""

Read = Callable[[TurnRow], float | None]
"""A per-turn figure of a row (``None``: the row lacks it)."""


@dataclass(frozen=True)
class PairedFigure:
    """``base`` against ``other`` on one per-turn figure, over the turns both have it for."""

    base: str
    other: str
    pairs: int
    base_lower: int
    """Paired turns where ``base``'s figure was lower."""
    other_lower: int
    p_value: float
    """Exact two-sided sign test over the pairs that differ."""

    @property
    def lower(self) -> str | None:
        """The mode whose figure was lower on significantly more turns; ``None`` when the split is not
        significant."""
        if self.p_value >= ALPHA or self.base_lower == self.other_lower:
            return None
        return self.base if self.base_lower > self.other_lower else self.other

    def test_text(self) -> str:
        """``"lower for planner on 40, for toolcalling on 10 of 129 paired turns; sign test p < 0.001"``."""
        return (
            f"lower for {self.base} on {self.base_lower}, for {self.other} on {self.other_lower} of "
            f"{self.pairs} paired turns; sign test p {p_text(self.p_value)}"
        )


def p_text(value: float) -> str:
    """A p-value as the reports write it: ``"< 0.001"``, ``"= 0.004"``, ``"= 0.31"``."""
    return "< 0.001" if value < 0.001 else f"= {value:.3f}" if value < 0.01 else f"= {value:.2f}"


Key = tuple[str, int, int]
"""A turn both modes ran: (scenario, turn, repetition)."""

T = TypeVar("T")


def paired_values(
    rows: Sequence[TurnRow], base: str, other: str, read: Callable[[TurnRow], T | None]
) -> dict[Key, tuple[T, T]]:
    """``read`` of ``base`` and of ``other`` on every turn both ran and both have the figure for, in turn
    order. Warm-up rows are left out."""
    values: dict[str, dict[Key, T]] = {base: {}, other: {}}
    for row in rows:
        if row.warmup or row.mode not in values:
            continue
        value = read(row)
        if value is not None:
            values[row.mode][(row.scenario, row.turn, row.repetition)] = value
    keys = sorted(values[base].keys() & values[other].keys())
    return {key: (values[base][key], values[other][key]) for key in keys}


def paired_figure(rows: Sequence[TurnRow], base: str, other: str, read: Read) -> PairedFigure | None:
    """``base`` against ``other`` on ``read`` over the turns both ran and both have the figure for; ``None``
    when there is no such turn."""
    pairs = paired_values(rows, base, other, read)
    if not pairs:
        return None
    base_lower = sum(a < b for a, b in pairs.values())
    other_lower = sum(b < a for a, b in pairs.values())
    return PairedFigure(
        base=base,
        other=other,
        pairs=len(pairs),
        base_lower=base_lower,
        other_lower=other_lower,
        p_value=mcnemar_exact(base_lower, other_lower),
    )


def model_calls(row: TurnRow) -> float:
    return float(row.model_calls)


def input_tokens(row: TurnRow) -> float | None:
    return float(row.input_tokens) if row.usage_reported else None


def latency(simulated: bool) -> Read:
    """A turn's latency: simulated model time plus harness time under a profile, else measured."""
    return (lambda row: row.simulated_latency_ms) if simulated else (lambda row: row.latency_ms)


def first_answer(simulated: bool) -> Read:
    """A turn's time to its first answer token: simulated under a profile, else measured."""
    return (lambda row: row.simulated_first_answer_ms) if simulated else (lambda row: row.first_answer_ms)


def harness(row: TurnRow) -> float:
    return row.harness_ms
