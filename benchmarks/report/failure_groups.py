"""A run's not-passed turns grouped by target, mode and kind, with one example of each."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from benchmarks.results import TurnRow
from shared.failures import FAILURE_KINDS

WRONG_ANSWER = "failed checks"
"""The kind of a turn that ended normally but whose answer, operations or state failed the scorer's checks."""

KIND_ORDER = (*FAILURE_KINDS, WRONG_ANSWER)


@dataclass(frozen=True)
class FailureGroup:
    """The not-passed turns of one (target, mode) of one kind, in the run's order (repetition 1 first)."""

    target: str
    mode: str
    kind: str
    turns: list[TurnRow]

    @property
    def example(self) -> TurnRow:
        return self.turns[0]


def failure_groups(rows: Sequence[TurnRow]) -> list[FailureGroup]:
    """The not-passed, not warm-up turns grouped by target, mode and kind (a failure kind, else
    :data:`WRONG_ANSWER`), in the rows' target and mode order and the contract's kind order."""
    groups: dict[tuple[str, str, str], list[TurnRow]] = {}
    order: dict[tuple[str, str], int] = {}
    for row in rows:
        order.setdefault((row.target, row.mode), len(order))
        if not (row.warmup or row.passed):
            kind = row.failure or ("provider" if row.failed else WRONG_ANSWER)
            groups.setdefault((row.target, row.mode, kind), []).append(row)
    ranked = sorted(groups.items(), key=lambda kv: (order[kv[0][:2]], KIND_ORDER.index(kv[0][2])))
    return [FailureGroup(*key, sorted(turns, key=lambda r: r.repetition)) for key, turns in ranked]


def why(row: TurnRow) -> str:
    """What went wrong on the turn: the scorer's reasons, else the errors, else ``"failed"``."""
    return "; ".join(row.score.details or row.errors) or "failed"


def clip(text: str, limit: int) -> str:
    """``text`` cut to at most ``limit`` characters at a word boundary, with an ellipsis when cut."""
    if len(text) <= limit:
        return text
    cut = text[: limit - 1]
    head = cut.rsplit(" ", 1)[0] if " " in cut[limit // 2 :] else cut
    return head.rstrip(" ;,") + "…"


def example_text(row: TurnRow, limit: int = 240) -> str:
    """``scenario · turn 3: “question” → “answer”: why`` (the answer and the reason cut to ``limit``)."""

    def flat(text: str) -> str:
        return " ".join(text.split())

    question, answer = clip(flat(row.user), 120), clip(flat(row.answer) or "(no answer)", limit)
    return f"{row.scenario} · turn {row.turn}: “{question}” → “{answer}”: {clip(flat(why(row)), limit)}"
