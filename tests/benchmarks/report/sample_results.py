"""A small results set that exercises every part of the reports (three modes, 12 turns, growth, a failure),
and the turn records and results files the benchmark tests build."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from benchmarks.results import OperationRecord, ResultsWriter, RunMeta, TurnRow
from benchmarks.scoring.turn import TurnScore

MODES = ["planner", "toolcalling", "toolcalling-full"]


def rows() -> list[TurnRow]:
    out: list[TurnRow] = []
    for mode in MODES:
        calls = 2 if mode == "planner" else 3
        for turn in range(1, 13):
            growth = 1 if mode != "toolcalling-full" else turn
            failed = mode == "toolcalling" and turn == 3
            out.append(
                TurnRow(
                    mode=mode,
                    scenario="conversacion-larga",
                    category="long_conversation",
                    turn=turn,
                    repetition=1,
                    user=f"¿Cuánto vendimos en {2000 + turn}? <b>",
                    answer="" if failed else f"Vendimos ₲{turn}.000.000 <script>",
                    model_calls=calls,
                    input_tokens=1000 * growth,
                    output_tokens=50,
                    model_ms=1.0,
                    harness_ms=0.8,
                    plan={"operaciones": [{"funcion": "ventas_anuales"}]} if mode == "planner" else None,
                    operations=[OperationRecord(funcion="ventas_anuales", parametros={"anio": 2000 + turn})],
                    failed=failed,
                    failure="provider" if failed else None,
                    errors=["ProviderError: boom"] if failed else [],
                    score=TurnScore(passed=not failed, details=["the turn failed"] if failed else []),
                )
            )
    return out


def turn_row(mode: str = "planner", *, passed: bool = True, why: str | None = None, **values: Any) -> TurnRow:
    """A scored turn of ``mode``: scenario ``s``, category ``c``, turn 1 of repetition 1, user text ``u``,
    unless ``values`` say otherwise; a failed turn's score says ``why``."""
    fields: dict[str, Any] = {
        "scenario": "s",
        "category": "c",
        "turn": 1,
        "repetition": 1,
        "user": "u",
        **values,
    }
    details = [why] if why is not None and not passed else []
    return TurnRow(mode=mode, score=TurnScore(passed=passed, details=details), **fields)


def write_results(path: Path, meta: RunMeta, records: Iterable[TurnRow]) -> Path:
    """A results file at ``path``: the run line, then ``records``."""
    ResultsWriter(path).rewrite([meta, *records])
    return path
