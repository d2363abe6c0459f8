"""``turns.csv``: the turn table of a report, one row per recorded turn (warm-up turns included and marked),
for a reader who filters and sorts in a spreadsheet or loads it into a data frame.

A text cell that a spreadsheet would read as a formula (it starts with ``=``, ``+``, ``-``, ``@``, a tab or a
carriage return) gets a leading ``'``, so a user's message or a model's answer is shown, never evaluated
(OWASP, CSV injection)."""

from __future__ import annotations

import csv
import io
from collections.abc import Sequence

from benchmarks.results import RunResults, TurnRow

__all__ = ["COLUMNS", "TURNS_CSV", "render_turns_csv", "spreadsheet_text"]

TURNS_CSV = "turns.csv"

COLUMNS = (
    "target", "mode", "scenario", "category", "split", "turn", "repetition", "warmup", "passed", "failure",
    "model_calls", "input_tokens", "output_tokens", "cached_input_tokens", "latency_ms", "first_answer_ms",
    "simulated_latency_ms", "simulated_first_answer_ms", "user", "answer",
)  # fmt: skip
"""The columns of one run's ``turns.csv``; a report of several runs puts a ``run`` column first. Empty cells:
not recorded (cached tokens, times to the first answer, simulated times without a latency profile)."""

_FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def spreadsheet_text(text: str) -> str:
    """``text`` as a cell no spreadsheet evaluates: a leading ``'`` when it starts like a formula."""
    return "'" + text if text.startswith(_FORMULA_STARTS) else text


def _ms(value: float | None) -> str:
    return "" if value is None else str(round(value, 3))


def _count(value: int | None) -> str:
    return "" if value is None else str(value)


def _flag(value: bool) -> str:
    return "true" if value else "false"


def _cells(row: TurnRow) -> list[str]:
    texts = [row.target, row.mode, row.scenario, row.category, row.split]
    return [
        *map(spreadsheet_text, texts),
        str(row.turn),
        str(row.repetition),
        _flag(row.warmup),
        _flag(row.passed),
        spreadsheet_text(row.failure or ""),
        str(row.model_calls),
        str(row.input_tokens),
        str(row.output_tokens),
        _count(row.cached_input_tokens),
        _ms(row.latency_ms),
        _ms(row.first_answer_ms),
        _ms(row.simulated_latency_ms),
        _ms(row.simulated_first_answer_ms),
        spreadsheet_text(row.user),
        spreadsheet_text(row.answer),
    ]


def render_turns_csv(runs: Sequence[tuple[str | None, RunResults]]) -> str:
    """The CSV text of every turn of ``runs``, each given with its label (``None`` for a report of one run:
    then there is no ``run`` column), in the order recorded."""
    labeled = any(label is not None for label, _ in runs)
    buffer = io.StringIO()
    writer = csv.writer(buffer, quoting=csv.QUOTE_MINIMAL, lineterminator="\n")
    writer.writerow(["run", *COLUMNS] if labeled else COLUMNS)
    for label, results in runs:
        lead = [spreadsheet_text(label or "")] if labeled else []
        writer.writerows([*lead, *_cells(row)] for row in results.rows)
    return buffer.getvalue()
