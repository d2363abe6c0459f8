"""The records of a comparison of two runs (:mod:`benchmarks.compare`): each group's figures in either run,
what changed, the turns that flipped, and the tolerances that make a change a regression."""

from __future__ import annotations

from pydantic import BaseModel, Field

from benchmarks.stats import Interval
from benchmarks.targets import DEFAULT_TARGET

ALL = "(all)"
"""The category name of a mode's overall figures."""

CALLS_TOLERANCE = 0.01
"""Model calls per turn may rise this much (absolute) before it counts as a regression."""

TOKENS_TOLERANCE = 0.02
"""Input or output tokens per turn may rise this share before it counts as a regression."""

LATENCY_TOLERANCE = 0.10
"""Latency p50 may rise this share before it counts as a regression."""

COMPARISON_FILE = "compare.md"


class GroupFigures(BaseModel):
    """The figures of one mode (and category) in one run."""

    turns: int
    passed: int
    accuracy: float
    accuracy_interval: Interval
    calls_mean: float
    input_tokens_mean: float
    output_tokens_mean: float
    latency_p50: float
    """Simulated latency p50 when the run has it, else measured."""
    simulated: bool
    first_answer_p50: float | None = None
    """Measured time to the first answer token, p50 ms (``None``: no turn streamed answer text)."""
    simulated_first_answer_p50: float | None = None
    """The same under the latency profile (``None``: no profile)."""
    plans_valid: int = 0
    plans_checked: int = 0
    """Turns whose request for operations was valid, out of those that recorded it."""

    @property
    def valid_plan_rate(self) -> float | None:
        """``plans_valid / plans_checked`` (``None``: not recorded)."""
        return self.plans_valid / self.plans_checked if self.plans_checked else None


class GroupChange(BaseModel):
    """One mode (``category`` :data:`ALL`) or one (mode, category) of one target, in run A and run B."""

    target: str = DEFAULT_TARGET
    mode: str
    category: str
    a: GroupFigures | None
    b: GroupFigures | None
    regression: bool = False
    reasons: list[str] = Field(default_factory=list)
    """Why this group is a regression, or why it was not compared (``"only in run A"``), in words."""

    @property
    def compared(self) -> bool:
        """Whether both runs have this group (only then can it be a regression)."""
        return self.a is not None and self.b is not None

    @property
    def accuracy_delta(self) -> float | None:
        """B's accuracy minus A's (``None`` when one side is missing)."""
        return None if self.a is None or self.b is None else self.b.accuracy - self.a.accuracy


class TurnFlip(BaseModel):
    """A turn that passed in one run and failed in the other."""

    target: str = DEFAULT_TARGET
    mode: str
    scenario: str
    turn: int
    repetition: int
    category: str
    now_passes: bool
    why: str = ""
    """Why it fails now (B's score details), for newly failing turns."""


class RunLabel(BaseModel):
    """What identifies a run in the comparison."""

    path: str
    started_at: str
    provider: str
    model: str | None
    latency_profile: str | None
    commit: str | None = None


class Comparison(BaseModel):
    """Run A (before) against run B (after)."""

    a: RunLabel
    b: RunLabel
    settings_changed: list[str] = Field(default_factory=list)
    """Settings that differ between the runs (provider, model, latency profile, repeat …)."""
    groups: list[GroupChange]
    """Regressions first, then every other group in mode and category order."""
    newly_failing: list[TurnFlip] = Field(default_factory=list)
    newly_passing: list[TurnFlip] = Field(default_factory=list)
    warnings: list[str] = Field(default_factory=list)
    """What reading the runs left out (``"run B: results file ends in an incomplete line: 14 rows read"``)."""
    flips_p_value: dict[str, float] = Field(default_factory=dict)
    """Per mode (``"target · mode"`` when the runs have targets): exact McNemar p of the flips (newly
    passing vs newly failing turns)."""
    targets: bool = False
    """Whether either run named its targets (then every group and flip is shown with its target)."""

    @property
    def regressions(self) -> list[GroupChange]:
        """The groups that got worse."""
        return [g for g in self.groups if g.regression]

    @property
    def not_compared(self) -> list[GroupChange]:
        """The groups only one run has."""
        return [g for g in self.groups if not g.compared]


GroupKey = tuple[str, str, str]
"""(target, mode, category)."""


def group_name(named: bool, target: str, mode: str) -> str:
    """``mode``, or ``target · mode`` when the runs have targets."""
    return f"{target} · {mode}" if named else mode
