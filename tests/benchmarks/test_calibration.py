"""The scorer against the calibration set: real-model turns with human verdicts (benchmarks/calibration)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from benchmarks.rescore import rescore
from benchmarks.results import RunMeta, RunResults, TurnRow
from benchmarks.scenario import load_scenarios

LABELS = Path(__file__).resolve().parents[2] / "benchmarks" / "calibration" / "turns.jsonl"
MIN_AGREEMENT = 1.0
MAX_FALSE_PASSES = 0
MAX_FALSE_FAILS = 0
"""Where the scorer stands; a change to the scorer may only move these towards full agreement."""


def test_the_scorer_agrees_with_the_human_verdicts(registry: Any, erp: Any) -> None:
    labels = [json.loads(line) for line in LABELS.read_text(encoding="utf-8").splitlines() if line.strip()]
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
    assert agreement >= MIN_AGREEMENT, (
        f"agreement {agreement:.1%}; false passes {false_passes}, fails {false_fails}"
    )
    assert len(false_passes) <= MAX_FALSE_PASSES, false_passes
    assert len(false_fails) <= MAX_FALSE_FAILS, false_fails
