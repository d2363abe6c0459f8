"""The turns a run did not pass, grouped by kind, with one example of each: a failure kind of the contract
(``shared.failures``), or an answer that failed the scorer's checks without any failure.

Each group keeps every turn it counts, so a report can link a count to its turns."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from benchmarks.report.md_table import clip
from benchmarks.results import TurnRow
from shared.failures import FAILURE_KINDS

WRONG_ANSWER = "failed checks"
"""The kind of a turn that ended normally but whose answer, operations or state failed the scorer's checks."""

KIND_ORDER = (*FAILURE_KINDS, WRONG_ANSWER)


@dataclass(frozen=True)
class FailureGroup:
    """The not-passed turns of one (target, mode) of one kind."""

    target: str
    mode: str
    kind: str
    turns: list[TurnRow]
    """Every turn of the group, in the run's order (repetition 1 first)."""

    @property
    def example(self) -> TurnRow:
        """The group's first turn: its example."""
        return self.turns[0]


def kind_of(row: TurnRow) -> str:
    """A not-passed turn's kind: its failure kind, else :data:`WRONG_ANSWER`."""
    return row.failure or ("provider" if row.failed else WRONG_ANSWER)


def failure_groups(rows: Sequence[TurnRow]) -> list[FailureGroup]:
    """The not-passed, not warm-up turns grouped by target, mode and kind, in the rows' target and mode order
    and the contract's kind order (failed checks last)."""
    groups: dict[tuple[str, str, str], list[TurnRow]] = {}
    order: dict[tuple[str, str], int] = {}
    for row in rows:
        order.setdefault((row.target, row.mode), len(order))
        if row.warmup or row.passed:
            continue
        groups.setdefault((row.target, row.mode, kind_of(row)), []).append(row)
    ranked = sorted(groups.items(), key=lambda kv: (order[kv[0][:2]], KIND_ORDER.index(kv[0][2])))
    return [
        FailureGroup(target, mode, kind, sorted(turns, key=lambda r: r.repetition))
        for (target, mode, kind), turns in ranked
    ]


def why(row: TurnRow) -> str:
    """What went wrong on the turn: the scorer's reasons, else the errors, else ``"failed"``."""
    return "; ".join(row.score.details or row.errors) or "failed"


def _flat(text: str) -> str:
    return " ".join(text.split())


def example_text(row: TurnRow, limit: int = 240) -> str:
    """``scenario · turn 3: “question” → “answer”: why`` (the answer and the reason cut to ``limit``)."""
    question, answer = clip(_flat(row.user), 120), clip(_flat(row.answer) or "(no answer)", limit)
    return f"{row.scenario} · turn {row.turn}: “{question}” → “{answer}”: {clip(_flat(why(row)), limit)}"
