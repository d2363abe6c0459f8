"""Re-scoring a recorded run with the current scorer, calling no model.

A real-model run costs an hour; improving the scorer must not. :func:`rescore` scores each recorded turn
again against its scenario's expectation, as the turn's user sees the ERP, exactly as the runner does after a
turn; everything else in the rows (tokens, timings, failures) is kept as recorded, but for the set each
scenario belongs to (suite or held-out), which is the scenario's, and the run line's scorer version.
"""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import BaseModel, Field

from benchmarks.results import RunResults, TurnRow
from benchmarks.run_turns import score_row
from benchmarks.scenario import Scenario, ScenarioTurn
from benchmarks.scoring import TurnScore, TurnScorer
from benchmarks.scoring.version import scorer_version
from shared.erp.database import Erp
from shared.erp.users import caller_for
from shared.errors import ErpAiError
from shared.operations.registry import OperationRegistry

__all__ = ["RescoreSummary", "ScenarioNotFound", "rescore"]


class RescoreSummary(BaseModel):
    """What re-scoring changed."""

    turns: int = 0
    """Turns re-scored (warm-up turns included: they are scored as in a run, and reported apart)."""
    now_passing: list[str] = Field(default_factory=list)
    """``scenario#turn (mode)`` of turns that failed before and pass now."""
    now_failing: list[str] = Field(default_factory=list)

    @property
    def changed(self) -> int:
        return len(self.now_passing) + len(self.now_failing)


class ScenarioNotFound(ValueError):
    """A row names a scenario turn the given scenario files do not hold."""


def rescore(
    results: RunResults, scenarios: Sequence[Scenario], registry: OperationRegistry, erp: Erp
) -> tuple[RunResults, RescoreSummary]:
    """``results`` with every turn's score computed again, and what changed; :class:`ScenarioNotFound`
    when a row's scenario or turn is not in ``scenarios`` (the run used other scenario files)."""
    by_id = {scenario.id: scenario for scenario in scenarios}
    scorer = TurnScorer(registry, erp)
    summary = RescoreSummary()
    rows: list[TurnRow] = []
    for row in results.rows:
        turn = _scenario_turn(by_id, row)
        try:
            caller = caller_for(erp, row.caller or "gerente")
        except ErpAiError as exc:
            score = TurnScore(passed=False, details=[f"scoring error: {exc}"])
        else:
            score = score_row(scorer, caller, turn, row)
        if row.score.passed != score.passed:
            changed = summary.now_passing if score.passed else summary.now_failing
            changed.append(f"{row.scenario}#{row.turn} ({row.mode})")
        summary.turns += 1
        split = by_id[row.scenario].split
        rows.append(row.model_copy(update={"score": score, "split": split}))
    meta = results.meta.model_copy(update={"scorer_version": scorer_version()})
    return results.model_copy(update={"meta": meta, "rows": rows}), summary


def _scenario_turn(by_id: dict[str, Scenario], row: TurnRow) -> ScenarioTurn:
    scenario = by_id.get(row.scenario)
    if scenario is None:
        raise ScenarioNotFound(
            f"The results name scenario {row.scenario!r}, which the scenario files given do not hold; pass "
            "the files the run used with --scenarios."
        )
    if not 1 <= row.turn <= len(scenario.turns):
        raise ScenarioNotFound(
            f"Scenario {row.scenario!r} has {len(scenario.turns)} turns, the results name turn {row.turn}; "
            "the scenario file changed since the run."
        )
    return scenario.turns[row.turn - 1]
