"""How far a report's verdicts can be trusted: the scorer's agreement with the human-labeled calibration sets
(``benchmarks/calibration/turns.jsonl``, which the scorer was tuned on, and the held-out
``benchmarks/calibration/holdout/turns.jsonl``), said in one line of every report.

The figures are computed when a report is rendered, never written down: every labeled turn is re-scored with
the current scorer (:func:`benchmarks.calibration.summary.rescored`, against a fresh in-memory demo ERP) and
compared with its human verdict, so a change to the scorer shows in the next report. Re-scoring both sets
takes about a second, so nothing is cached on disk; within one process the result is kept
(:func:`scorer_agreement`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from benchmarks.calibration.summary import TURNS, Counts, load, rescored
from shared.errors import ErpAiError

CALIBRATION_SETS: tuple[tuple[str, Path], ...] = (
    ("the set it was tuned on", TURNS),
    ("the held-out set", TURNS.parent / "holdout" / "turns.jsonl"),
)
"""The human-labeled sets the reports measure the scorer on: (how a report names it, its file); a set whose
file is missing is left out."""

CALIBRATION_DIR = "benchmarks/calibration/"
"""How the reports name where the sets live."""


@dataclass(frozen=True)
class ScorerAgreement:
    """The current scorer against the human verdicts of one calibration set."""

    name: str
    turns: int
    false_passes: int
    """Turns the scorer passed and the human failed."""
    false_fails: int
    """Turns the scorer failed and the human passed."""

    @property
    def agreed(self) -> int:
        return self.turns - self.false_passes - self.false_fails

    @property
    def agreement(self) -> float:
        return self.agreed / self.turns if self.turns else 0.0

    def text(self) -> str:
        """``"on 150 of the 162 turns of the held-out set (92.6%: 8 false passes, 4 false fails)"``."""
        return (
            f"on {self.agreed} of the {self.turns} turns of {self.name} ({self.agreement:.1%}: "
            f"{self.false_passes} false passes, {self.false_fails} false fails)"
        )


def measure_agreement(sets: Sequence[tuple[str, Path]] = CALIBRATION_SETS) -> list[ScorerAgreement]:
    """Re-score every labeled turn of each set whose file exists with the current scorer
    (:func:`benchmarks.calibration.summary.rescored`) and count the disagreements with the human verdicts.

    Raises ``OSError``/``ValueError``/``KeyError`` for a set that cannot be read, ``ErpAiError`` when the demo
    ERP cannot be opened, and :class:`benchmarks.rescore.ScenarioNotFound` (a ``ValueError``) when a labeled
    turn is no longer in the packaged suite.
    """
    found = []
    for name, path in sets:
        if not path.exists():
            continue
        counts = Counts()
        for turn in rescored(load(path), path):
            counts.add(turn)
        found.append(ScorerAgreement(name, counts.turns, counts.false_pass, counts.false_fail))
    return found


@cache
def scorer_agreement() -> tuple[ScorerAgreement, ...] | str:
    """:func:`measure_agreement` of the packaged sets, once per process; a string saying why when it cannot
    be computed."""
    try:
        return tuple(measure_agreement())
    except (OSError, ValueError, KeyError, ErpAiError) as exc:
        return f"{type(exc).__name__}: {exc}".splitlines()[0]


def agreement_line(agreement: Sequence[ScorerAgreement] | str | None = None) -> str:
    """The line every report gives: how often the current scorer agrees with the human verdicts."""
    found = scorer_agreement() if agreement is None else agreement
    if isinstance(found, str) or not found:
        why = found or "no calibration set found"
        return (
            f"Scorer check: the agreement with the human-labeled sets ({CALIBRATION_DIR}) could not be "
            f"computed: {why}."
        )
    parts = " and ".join(a.text() for a in found)
    return (
        "Scorer check: re-scored when this report was rendered, the current scorer agrees with the human "
        f"verdicts of real-model turns ({CALIBRATION_DIR}) {parts}."
    )
