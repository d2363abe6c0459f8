"""Where a turn's time goes, per mode, from the model calls each row records.

A turn's time splits into the model's (each call: waiting for its first token, while the server reads the
prompt or a slot frees, then writing) and the harness's (the ERP's operations, then everything else: context,
validation, checks, storage). Rows recorded before calls were kept have no breakdown and are left out.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from benchmarks.results import TurnRow
from benchmarks.stats import median
from shared.llm.usage import ModelCall

__all__ = ["BREAKDOWN_CAPTION", "CALLS_CAPTION", "breakdown_medians", "breakdown_table", "calls_table"]

BREAKDOWN_CAPTION = (
    "Medians per turn, in milliseconds, over the turns that recorded their model calls (so the columns need "
    "not add up to the whole turn). First tokens: the wait for each call's first token, summed over the "
    "turn's calls (the prompt being read, or a busy server); writing: the rest of the model's time; "
    "operations: the ERP running the turn's operations; rest: the rest of the harness (context, "
    "validation, checks and storage). Measured on the run's machine."
)
CALLS_CAPTION = (
    "Per model call, by what it was for (plan: the planner's call 1; answer: its call 2; agent: a "
    "tool-calling step). Medians; cached: share of the role's input tokens the prompt cache served."
)


def _groups(rows: Sequence[TurnRow]) -> dict[tuple[str, str], list[TurnRow]]:
    groups: dict[tuple[str, str], list[TurnRow]] = {}
    for row in rows:
        if not row.warmup and row.calls:
            groups.setdefault((row.target, row.mode), []).append(row)
    return groups


def _label(target: str, mode: str, targets: set[str]) -> str:
    return f"{target} · {mode}" if len(targets) > 1 else mode


def _ms(values: Sequence[float]) -> str:
    return f"{median(values):,.0f}" if values else "–"


def _first_tokens(row: TurnRow) -> float:
    return sum(call.first_token_ms or 0.0 for call in row.calls)


def _writing(row: TurnRow) -> float:
    return max(0.0, sum(call.ms for call in row.calls) - _first_tokens(row))


def breakdown_table(rows: Sequence[TurnRow]) -> tuple[list[str], list[list[str]]] | None:
    """One line per (target, mode): turns, calls per turn and the medians of each part of a turn's time;
    ``None`` when no row recorded its calls."""
    groups = _groups(rows)
    if not groups:
        return None
    targets = {target for target, _ in groups}
    parts: list[Callable[[TurnRow], float]] = [
        _first_tokens,
        _writing,
        lambda row: row.operations_ms,
        lambda row: max(0.0, row.harness_ms - row.operations_ms),
        lambda row: row.total_ms,
    ]
    header = ["mode", "turns", "calls/turn", "first tokens", "writing", "operations", "rest", "turn"]
    table = [
        [
            _label(target, mode, targets),
            str(len(group)),
            f"{sum(len(row.calls) for row in group) / len(group):.2f}",
            *(_ms([part(row) for row in group]) for part in parts),
        ]
        for (target, mode), group in groups.items()
    ]
    return header, table


def calls_table(rows: Sequence[TurnRow]) -> tuple[list[str], list[list[str]]] | None:
    """One line per (target, mode, call role): calls, time, time to first token and tokens; ``None`` when no
    row recorded its calls."""
    groups = _groups(rows)
    if not groups:
        return None
    targets = {target for target, _ in groups}
    header = ["mode", "call", "calls", "ms", "first token ms", "tokens in", "cached", "tokens out"]
    table: list[list[str]] = []
    for (target, mode), group in groups.items():
        by_role: dict[str, list[ModelCall]] = {}
        for row in group:
            for call in row.calls:
                by_role.setdefault(call.role, []).append(call)
        for role, calls in by_role.items():
            inputs = sum(call.input_tokens for call in calls)
            cached = sum(call.cached_input_tokens for call in calls)
            table.append(
                [
                    _label(target, mode, targets),
                    role,
                    str(len(calls)),
                    _ms([call.ms for call in calls]),
                    _ms([call.first_token_ms for call in calls if call.first_token_ms is not None]),
                    _ms([float(call.input_tokens) for call in calls]),
                    f"{cached / inputs:.0%}" if inputs else "–",
                    _ms([float(call.output_tokens) for call in calls]),
                ]
            )
    return header, table


def breakdown_medians(rows: Sequence[TurnRow]) -> list[tuple[str, list[tuple[str, float]]]]:
    """The figures of :func:`breakdown_table` as numbers: per (target, mode) its label and the median ms of
    each part of a turn (first tokens, writing, operations, rest); empty when no row recorded its calls."""
    groups = _groups(rows)
    targets = {target for target, _ in groups}
    parts: list[tuple[str, Callable[[TurnRow], float]]] = [
        ("first tokens", _first_tokens),
        ("writing", _writing),
        ("operations", lambda row: row.operations_ms),
        ("rest", lambda row: max(0.0, row.harness_ms - row.operations_ms)),
    ]
    return [
        (
            _label(target, mode, targets),
            [(name, median([part(row) for row in group])) for name, part in parts],
        )
        for (target, mode), group in groups.items()
    ]
