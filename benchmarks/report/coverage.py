"""Which scenario categories a run covered, against the packaged suite: the categories it ran (with how many
of the suite's turns of each it has) and the categories it did not run at all."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

from benchmarks.results import TurnRow
from benchmarks.scenario import Scenario


@dataclass(frozen=True)
class CategoryCoverage:
    """One category: the suite's turns of it, and how many of them the run has (in its best-covered mode)."""

    category: str
    run_turns: int
    suite_turns: int


def category_coverage(rows: Sequence[TurnRow], suite: Sequence[Scenario]) -> list[CategoryCoverage]:
    """Every category of the suite or the rows, in name order. A turn counts once (scenario and turn),
    whatever its repetitions; the run's count is its best-covered mode's."""
    suite_turns: dict[str, int] = defaultdict(int)
    for scenario in suite:
        suite_turns[scenario.category] += len(scenario.turns)
    seen: dict[tuple[str, str], set[tuple[str, int]]] = defaultdict(set)
    for row in rows:
        if not row.warmup:
            seen[(row.category, f"{row.target}/{row.mode}")].add((row.scenario, row.turn))
    run_turns: dict[str, int] = defaultdict(int)
    for (category, _), turns in seen.items():
        run_turns[category] = max(run_turns[category], len(turns))
    return [
        CategoryCoverage(category, run_turns.get(category, 0), suite_turns.get(category, 0))
        for category in sorted(set(suite_turns) | set(run_turns))
    ]


def coverage_text(rows: Sequence[TurnRow], suite: Sequence[Scenario]) -> str:
    """``"Scenario categories covered (turns run of the suite's): articulo 5/5, …; not covered: none."``"""
    found = category_coverage(rows, suite)
    covered = [c for c in found if c.run_turns]
    missing = [c.category for c in found if not c.run_turns]
    ran = ", ".join(f"{c.category} {c.run_turns}/{c.suite_turns}" for c in covered) or "none"
    absent = ", ".join(missing) if missing else "none (every category of the packaged suite ran)"
    return f"Scenario categories covered (turns run of the packaged suite's): {ran}; not covered: {absent}."
