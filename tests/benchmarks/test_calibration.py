"""The scorer against human verdicts on real-model turns (benchmarks/calibration): the calibration set its
rules were written against, and a held-out set labeled after them and never used to tune them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, NamedTuple

import pytest

from benchmarks.rescore import rescore
from benchmarks.results import RunMeta, RunResults, TurnRow
from benchmarks.scenario import load_scenarios

CALIBRATION = Path(__file__).resolve().parents[2] / "benchmarks" / "calibration"


class Floor(NamedTuple):
    labels: str
    min_agreement: float
    max_false_passes: int
    max_false_fails: int


FLOORS = {
    "calibration": Floor("turns.jsonl", 1.0, 0, 0),
    "held-out": Floor("holdout/turns.jsonl", 0.95, 0, 13),
}
"""The calibration set's floor is where the scorer stands (a change may only move it towards full agreement);
the held-out set's is the bar a scorer must clear on turns it was not written against (it stands at 262/262:
a floor of 100% would make the set one more thing to tune to)."""


@pytest.mark.parametrize("name", FLOORS)
def test_the_scorer_agrees_with_the_human_verdicts(name: str, registry: Any, erp: Any) -> None:
    floor = FLOORS[name]
    text = (CALIBRATION / floor.labels).read_text(encoding="utf-8")
    labels = [json.loads(line) for line in text.splitlines() if line]
    rows = [TurnRow.model_validate(label["row"]) for label in labels]
    rescored, _ = rescore(RunResults(meta=RunMeta(), rows=rows), load_scenarios(), registry, erp)
    verdicts = [
        (label["id"], label["human"] == "pass", row.score is not None and row.score.passed)
        for label, row in zip(labels, rescored.rows, strict=True)
    ]
    false_passes = [turn for turn, human, scorer in verdicts if scorer and not human]
    false_fails = [turn for turn, human, scorer in verdicts if human and not scorer]
    agreement = sum(human == scorer for _, human, scorer in verdicts) / len(verdicts)
    assert len(labels) >= 150
    assert agreement >= floor.min_agreement, (
        f"agreement {agreement:.1%}; false passes {false_passes}, fails {false_fails}"
    )
    assert len(false_passes) <= floor.max_false_passes, false_passes
    assert len(false_fails) <= floor.max_false_fails, false_fails
