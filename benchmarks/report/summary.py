"""The figures every report shows, as records: per mode (:class:`ModeSummary`), per category, the paired
comparison of two modes, the context-growth curve, and the whole :class:`Summary` (one per target in a
matrix run). :mod:`benchmarks.report.aggregate` computes them from turn records."""

from __future__ import annotations

from typing import ClassVar

from pydantic import BaseModel, Field

from benchmarks.stats import Interval
from benchmarks.targets import BenchTarget


class ModeSummary(BaseModel):
    """The figures of one mode over a set of turns."""

    mode: str
    turns: int
    passed: int
    failed_turns: int
    """Turns that ended in a failure kind (see ``shared.failures``)."""
    failures: dict[str, int] = Field(default_factory=dict)
    """Failed turns per failure kind (kinds with no turn are left out)."""
    accuracy: float
    pass_k: dict[int, float] = Field(default_factory=dict)
    """pass^k for k = 1 … repetitions (scenario-turns are the tasks)."""
    calls_mean: float
    calls_max: int
    input_tokens_mean: float
    output_tokens_mean: float
    latency_p50: float
    latency_p95: float
    simulated_p50: float | None = None
    simulated_p95: float | None = None
    harness_p50: float
    harness_p95: float
    no_operation_calls_mean: float | None = None
    """Model calls per turn on turns that executed no operation (small talk, refusals); ``None`` if none."""
    accuracy_interval: Interval | None = None
    """Wilson 95% interval of ``accuracy``."""
    latency_mean: float = 0.0
    cached_input_tokens_mean: float | None = None
    """Input tokens per turn the provider served from its prompt cache; ``None`` when rows do not say."""
    cached_share: float | None = None
    """Share of input tokens served from cache (``None`` when rows do not say)."""
    first_answer_p50: float | None = None
    """Measured time from a turn's start to its first answer token reaching the reader, p50 in ms, over the
    turns that streamed some answer text (``None``: no such turn, e.g. a file that predates streaming)."""
    first_answer_p95: float | None = None
    """p95 of the same."""
    simulated_first_answer_p50: float | None = None
    """Model time to the first answer token under the latency profile, p50 in ms (harness not included)."""
    simulated_first_answer_p95: float | None = None
    """p95 of the same."""
    intervals: dict[str, Interval] = Field(default_factory=dict)
    """Bootstrap 95% intervals when the run has repetitions: ``latency_mean``, ``latency_p50``,
    ``simulated_p50``, ``first_answer_p50``, ``simulated_first_answer_p50``, ``input_tokens_mean``,
    ``output_tokens_mean``."""
    plans_valid: int = 0
    """Turns whose request for operations was valid as written (``TurnRow.plan_valid`` true)."""
    plans_checked: int = 0
    """Turns that say whether it was (``plan_valid`` not ``None``)."""
    usage_unreported: int = 0
    """Turns that called a model whose provider did not report token usage (``TurnRow.usage_reported``
    false): left out of the token means, which cover the other turns."""
    usage_reported_turns: int = 0
    """Turns that called a model and whose token usage was reported."""
    recovered_tool_calls: int = 0
    """Tool calls written as text that tool calling recovered into real tool calls, over all turns."""
    ungrounded_turns: int | None = None
    """Turns whose answer stated a figure no ERP source supported (``TurnRow.ungrounded_figures``); ``None``
    when no row recorded the check (files that predate it)."""
    claimed_action_turns: int | None = None
    """Turns whose answer claimed an action the ERP did not do (``TurnRow.claimed_actions``); ``None`` when no
    row recorded the check (files that predate it)."""
    connection_retries: int = 0
    """Requests resent once because their connection failed before the server answered."""

    @property
    def tokens_reported(self) -> bool:
        """Whether the token figures mean anything: some turn reported usage, or none lacked it."""
        return self.usage_reported_turns > 0 or self.usage_unreported == 0

    @property
    def valid_plan_rate(self) -> float | None:
        """``plans_valid / plans_checked``; ``None`` when no turn says (the engines did not record it)."""
        return self.plans_valid / self.plans_checked if self.plans_checked else None


NOT_REPORTED = "not reported"
"""What a report prints for token figures when the provider reported no usage."""


def tokens_text(mode: ModeSummary, value: float | None, spec: str = ".0f") -> str:
    """A token figure of ``mode`` formatted with ``spec``, or :data:`NOT_REPORTED`."""
    if not mode.tokens_reported:
        return NOT_REPORTED
    return "–" if value is None else format(value, spec)


class CategorySummary(BaseModel):
    """Accuracy of one mode on one category."""

    category: str
    mode: str
    turns: int
    accuracy: float
    calls_mean: float
    passed: int = 0
    accuracy_interval: Interval | None = None
    """Wilson 95% interval of ``accuracy``."""


class PairedComparison(BaseModel):
    """Two modes on the turns both ran (same scenario, turn and repetition).

    ``base_only`` and ``other_only`` are McNemar's discordant pairs. ``interval`` bounds ``difference``
    (base accuracy minus other's, on the paired turns) by a bootstrap over conversations. A difference is
    *established* when the interval excludes zero and the exact McNemar test agrees (p < ``ALPHA``).
    """

    base: str
    other: str
    pairs: int
    both: int
    base_only: int
    other_only: int
    neither: int
    base_accuracy: float
    other_accuracy: float
    difference: float
    interval: Interval | None = None
    p_value: float

    ALPHA: ClassVar[float] = 0.05

    @property
    def established(self) -> bool:
        """Whether the run shows an accuracy difference (interval excludes 0 and McNemar p < ALPHA)."""
        return self.interval is not None and self.interval.excludes_zero() and self.p_value < self.ALPHA


class GrowthCurve(BaseModel):
    """Input tokens per turn on the long conversation, one series per mode (mean over repetitions)."""

    scenario: str
    series: dict[str, list[float]]

    def ratio(self, mode: str) -> float | None:
        """Last turn's input tokens over the first turn's."""
        values = self.series.get(mode) or []
        if len(values) < 2 or values[0] <= 0:
            return None
        return values[-1] / values[0]


class TargetSummary(BaseModel):
    """The figures of one target of a matrix run: a whole :class:`Summary` of its turns."""

    target: BenchTarget
    summary: Summary


class Summary(BaseModel):
    """Everything the reports show.

    For a run with more than one target, ``targets`` holds one summary per target and the per-mode fields
    (``modes``, ``categories``, ``paired``, ``growth``) are empty: figures of different models are never
    pooled.
    """

    modes: list[ModeSummary]
    categories: list[CategorySummary]
    growth: GrowthCurve | None = None
    repetitions: int = 1
    paired: list[PairedComparison] = Field(default_factory=list)
    """The base mode (planner, else the first) against each other mode."""
    warmup_turns: int = 0
    """Warm-up rows left out of every figure."""
    prompt_cache: bool | None = None
    """Whether the offline model modelled a prefix cache in this run (``None``: not recorded, or no offline
    model); the latency targets' findings say which."""
    targets: list[TargetSummary] = Field(default_factory=list)
    """One summary per target when the run has more than one (see the class docstring)."""

    @property
    def matrix(self) -> bool:
        """Whether this summarises several targets."""
        return bool(self.targets)

    def mode(self, name: str) -> ModeSummary | None:
        return next((m for m in self.modes if m.mode == name), None)

    def comparison(self, base: str, other: str) -> PairedComparison | None:
        return next((p for p in self.paired if p.base == base and p.other == other), None)

    def cells(self) -> list[tuple[str | None, ModeSummary]]:
        """Every (target name, mode summary); the name is ``None`` in a one-target summary."""
        if self.targets:
            return [(t.target.name, m) for t in self.targets for m in t.summary.modes]
        return [(None, m) for m in self.modes]


TargetSummary.model_rebuild()
