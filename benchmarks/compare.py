"""What changed between two benchmark runs, per mode and category, regressions first (``erp-ai report A B``
puts it in the combined report; its Markdown and HTML: :mod:`benchmarks.report.comparison`).

Per (target, mode) and per (target, mode, category): accuracy with its Wilson 95% interval, calls and tokens
per turn, latency p50 (simulated when both runs were profiled: measured milliseconds of two runs on a shared
machine are noisy), time to the first answer p50 and the valid-plan rate; then the turns that flipped, with
an exact McNemar test per target and mode. Warm-up turns are left out.

A group is a **regression** when its accuracy or valid-plan rate dropped by more than chance explains (an
exact McNemar test over the turns both runs ran, p below :data:`SIGNIFICANCE`; runs that share no turn need
their Wilson intervals apart), or calls, tokens, latency or first answer rose beyond the tolerances below
(measured latencies only for a mode overall, where a p50 means something). A drop chance explains is a
**note**, shown but never a regression: one turn of five is not a regression. A group only one run has is
**not compared** and never a regression, so ``--fail-on-regression`` fails only on what both runs measured.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Sequence
from pathlib import Path

from pydantic import BaseModel, Field

from benchmarks.results import RESULTS_FILE, RunMeta, RunResults, TurnRow, read_results
from benchmarks.stats import Interval, mcnemar_exact, mean, percentile, wilson_interval
from benchmarks.targets import DEFAULT_TARGET

__all__ = ["ALL", "Comparison", "compare_results", "compare_runs", "group_name"]

ALL = "(all)"
"""The category name of a mode's overall figures."""
CALLS_TOLERANCE = 0.01
"""Model calls per turn may rise this much (absolute) before it counts as a regression."""
TOKENS_TOLERANCE = 0.02
"""Input or output tokens per turn may rise this share before it counts as a regression."""
LATENCY_TOLERANCE = 0.10
"""Latency p50 may rise this share before it counts as a regression."""
SIGNIFICANCE = 0.05
"""A drop in accuracy or valid plans is a regression when a paired test gives a p-value below this."""


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
    plans_valid: int = 0
    plans_checked: int = 0
    """Turns whose request for operations was valid, out of those that recorded it."""

    @property
    def valid_plan_rate(self) -> float | None:
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
    notes: list[str] = Field(default_factory=list)
    """Drops chance explains (``"accuracy 100.0% → 80.0%, McNemar p = 1.000"``): shown, never a regression."""

    @property
    def compared(self) -> bool:
        return self.a is not None and self.b is not None

    @property
    def accuracy_delta(self) -> float | None:
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

    label: str
    """The run's name in the report (its label beside the other run), ``A`` or ``B`` when none is given."""
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
    groups: list[GroupChange]
    """Regressions first, then every other group in mode and category order."""
    newly_failing: list[TurnFlip] = Field(default_factory=list)
    newly_passing: list[TurnFlip] = Field(default_factory=list)
    warnings: list[str] = Field(default_factory=list)
    """What reading the runs left out (``"run B: results file ends in an incomplete line: 14 rows read"``)."""
    flips_p_value: dict[str, float] = Field(default_factory=dict)
    """Per mode (``"target · mode"`` when the runs have targets): exact McNemar p of the flips."""
    targets: bool = False
    """Whether either run named its targets (then every group and flip is shown with its target)."""

    @property
    def regressions(self) -> list[GroupChange]:
        return [g for g in self.groups if g.regression]

    @property
    def not_compared(self) -> list[GroupChange]:
        return [g for g in self.groups if not g.compared]


def group_name(named: bool, target: str, mode: str) -> str:
    return f"{target} · {mode}" if named else mode


def _figures(rows: Sequence[TurnRow]) -> GroupFigures:
    passed = sum(row.passed for row in rows)
    simulated = [v for row in rows if (v := row.simulated_latency_ms) is not None]
    latency = simulated if simulated and len(simulated) == len(rows) else [row.latency_ms for row in rows]
    first = [v for row in rows if (v := row.first_answer_ms) is not None]
    simulated_first = [v for row in rows if (v := row.simulated_first_answer_ms) is not None]
    checked = [row.plan_valid for row in rows if row.plan_valid is not None]
    return GroupFigures(
        turns=len(rows),
        passed=passed,
        accuracy=passed / len(rows),
        accuracy_interval=wilson_interval(passed, len(rows)),
        calls_mean=mean([row.model_calls for row in rows]),
        input_tokens_mean=mean([row.input_tokens for row in rows]),
        output_tokens_mean=mean([row.output_tokens for row in rows]),
        latency_p50=percentile(latency, 50),
        simulated=latency is simulated,
        first_answer_p50=percentile(first, 50) if first else None,
        simulated_first_answer_p50=percentile(simulated_first, 50) if simulated_first else None,
        plans_valid=sum(checked),
        plans_checked=len(checked),
    )


def _groups(rows: Sequence[TurnRow]) -> dict[tuple[str, str, str], list[TurnRow]]:
    """The rows by (target, mode, category), each mode also under :data:`ALL`."""
    groups: dict[tuple[str, str, str], list[TurnRow]] = defaultdict(list)
    for row in rows:
        groups[(row.target, row.mode, ALL)].append(row)
        groups[(row.target, row.mode, row.category)].append(row)
    return groups


def _rose(before: float, after: float, tolerance: float) -> bool:
    return after > before * (1 + tolerance) if before > 0 else after > 0


_Outcome = Callable[[TurnRow], bool | None]
"""What a paired test compares per turn: passed, or its plan valid (``None``: not recorded)."""


def _turn_key(row: TurnRow) -> tuple[str, int, int]:
    return row.scenario, row.turn, row.repetition


def _drop_evidence(
    rows_a: Sequence[TurnRow],
    rows_b: Sequence[TurnRow],
    outcome: _Outcome,
    intervals: tuple[Interval, Interval],
) -> tuple[bool, str]:
    """Whether a drop in ``outcome`` between the runs is more than chance, and the test that says so: exact
    McNemar over the turns both ran (with the outcome recorded), else whether the Wilson intervals are
    apart."""
    before = {_turn_key(row): value for row in rows_a if (value := outcome(row)) is not None}
    pairs = [
        (before[key], value)
        for row in rows_b
        if (key := _turn_key(row)) in before
        if (value := outcome(row)) is not None
    ]
    if pairs:
        lost = sum(old and not new for old, new in pairs)
        gained = sum(new and not old for old, new in pairs)
        p = mcnemar_exact(gained, lost)
        return p < SIGNIFICANCE and lost > gained, f"McNemar p = {p:.3f}"
    interval_a, interval_b = intervals
    apart = interval_b.high < interval_a.low
    return apart, "Wilson 95% intervals apart" if apart else "Wilson 95% intervals overlap"


def _judge(change: GroupChange, rows_a: Sequence[TurnRow], rows_b: Sequence[TurnRow]) -> GroupChange:
    a, b = change.a, change.b
    if a is None or b is None:
        change.reasons.append("only in run A" if b is None else "only in run B")
        return change  # not compared, so never a regression
    reasons = change.reasons
    if b.accuracy < a.accuracy:
        intervals = (a.accuracy_interval, b.accuracy_interval)
        established, evidence = _drop_evidence(rows_a, rows_b, lambda row: row.passed, intervals)
        text = f"accuracy {a.accuracy:.1%} → {b.accuracy:.1%}, {evidence}"
        (reasons if established else change.notes).append(text)
    if b.calls_mean > a.calls_mean + CALLS_TOLERANCE:
        reasons.append(f"calls/turn {a.calls_mean:.2f} → {b.calls_mean:.2f}")
    if _rose(a.input_tokens_mean, b.input_tokens_mean, TOKENS_TOLERANCE):
        reasons.append(f"input tokens/turn {a.input_tokens_mean:.0f} → {b.input_tokens_mean:.0f}")
    if _rose(a.output_tokens_mean, b.output_tokens_mean, TOKENS_TOLERANCE):
        reasons.append(f"output tokens/turn {a.output_tokens_mean:.0f} → {b.output_tokens_mean:.0f}")
    overall = change.category == ALL
    comparable = (a.simulated and b.simulated) or (not a.simulated and not b.simulated and overall)
    if comparable and _rose(a.latency_p50, b.latency_p50, LATENCY_TOLERANCE):
        kind = "simulated " if b.simulated else ""
        reasons.append(f"{kind}latency p50 {a.latency_p50:.1f} → {b.latency_p50:.1f} ms")
    first_pairs = [("simulated ", a.simulated_first_answer_p50, b.simulated_first_answer_p50)]
    if overall:
        first_pairs.append(("", a.first_answer_p50, b.first_answer_p50))
    for kind, before, after in first_pairs:
        if before is not None and after is not None and _rose(before, after, LATENCY_TOLERANCE):
            reasons.append(f"{kind}first answer p50 {before:.1f} → {after:.1f} ms")
    rate_a, rate_b = a.valid_plan_rate, b.valid_plan_rate
    if rate_a is not None and rate_b is not None and rate_b < rate_a:
        intervals = (
            wilson_interval(a.plans_valid, a.plans_checked),
            wilson_interval(b.plans_valid, b.plans_checked),
        )
        established, evidence = _drop_evidence(rows_a, rows_b, lambda row: row.plan_valid, intervals)
        text = f"valid plans {rate_a:.1%} → {rate_b:.1%}, {evidence}"
        (reasons if established else change.notes).append(text)
    change.regression = bool(reasons)
    return change


def _label(label: str, path: Path, meta: RunMeta) -> RunLabel:
    return RunLabel(
        label=label,
        path=str(path),
        started_at=meta.started_at,
        provider=meta.provider,
        model=meta.model,
        latency_profile=meta.latency_profile,
        commit=meta.provenance.git_commit if meta.provenance is not None else None,
    )


_SETTINGS = (
    "modes", "provider", "model", "base_url", "latency_profile", "structured", "plan_schema", "max_tokens",
    "repeat", "turns", "prompt_cache",
)  # fmt: skip


def _settings_changed(a: RunMeta, b: RunMeta) -> list[str]:
    changed = [
        f"{name} {getattr(a, name)!r} → {getattr(b, name)!r}"
        for name in _SETTINGS
        if getattr(a, name) != getattr(b, name)
    ]
    specs_a, specs_b = [t.spec for t in a.run_targets], [t.spec for t in b.run_targets]
    if (a.targets or b.targets) and specs_a != specs_b:
        changed.append(f"targets {specs_a} → {specs_b}")
    return changed


def _flips(rows_a: Sequence[TurnRow], rows_b: Sequence[TurnRow]) -> tuple[list[TurnFlip], list[TurnFlip]]:
    """The turns of B whose outcome differs in A: newly passing, newly failing."""
    before = {(r.target, r.mode, r.scenario, r.turn, r.repetition): r for r in rows_a}
    passing: list[TurnFlip] = []
    failing: list[TurnFlip] = []
    for row in rows_b:
        old = before.get((row.target, row.mode, row.scenario, row.turn, row.repetition))
        if old is None or old.passed == row.passed:
            continue
        flip = TurnFlip(
            target=row.target,
            mode=row.mode,
            scenario=row.scenario,
            turn=row.turn,
            repetition=row.repetition,
            category=row.category,
            now_passes=row.passed,
            why="" if row.passed else "; ".join(row.score.details or row.errors) or "failed",
        )
        (passing if row.passed else failing).append(flip)
    return passing, failing


def compare_results(
    a: RunResults,
    b: RunResults,
    *,
    path_a: Path | None = None,
    path_b: Path | None = None,
    labels: tuple[str, str] = ("A", "B"),
) -> Comparison:
    """Compare two runs already read (see :func:`compare_runs`); ``labels`` name them in the report."""
    rows_a, rows_b = a.scored_rows, b.scored_rows
    groups_a, groups_b = _groups(rows_a), _groups(rows_b)
    keys = [*groups_a, *groups_b]
    modes = list(dict.fromkeys([*a.meta.modes, *b.meta.modes, *(k[1] for k in keys)]))
    targets = list(
        dict.fromkeys([*(t.name for t in [*a.meta.run_targets, *b.meta.run_targets]), *(k[0] for k in keys)])
    )
    ordered = sorted(set(keys), key=lambda k: (targets.index(k[0]), modes.index(k[1]), k[2] != ALL, k[2]))
    changes = [
        _judge(
            GroupChange(
                target=key[0],
                mode=key[1],
                category=key[2],
                a=_figures(groups_a[key]) if key in groups_a else None,
                b=_figures(groups_b[key]) if key in groups_b else None,
            ),
            groups_a.get(key, []),
            groups_b.get(key, []),
        )
        for key in ordered
    ]
    # stable: regressions first, the largest accuracy drop first, else in group order
    changes.sort(key=lambda c: (not c.regression, c.accuracy_delta or 0.0))
    named = bool(a.meta.targets or b.meta.targets) or targets != [DEFAULT_TARGET]
    newly_passing, newly_failing = _flips(rows_a, rows_b)

    def count(flips: list[TurnFlip], target: str, mode: str) -> int:
        return sum((f.target, f.mode) == (target, mode) for f in flips)

    p_values = {
        group_name(named, target, mode): mcnemar_exact(
            count(newly_passing, target, mode), count(newly_failing, target, mode)
        )
        for target in targets
        for mode in modes
        if count(newly_passing, target, mode) + count(newly_failing, target, mode)
    }
    return Comparison(
        a=_label(labels[0], path_a or Path("A"), a.meta),
        b=_label(labels[1], path_b or Path("B"), b.meta),
        settings_changed=_settings_changed(a.meta, b.meta),
        warnings=[f"run {name}: {text}" for name, run in (("A", a), ("B", b)) for text in run.read_warnings],
        groups=changes,
        newly_failing=newly_failing,
        newly_passing=newly_passing,
        flips_p_value=p_values,
        targets=named,
    )


def compare_runs(path_a: Path, path_b: Path) -> Comparison:
    """Compare run A (before) with run B (after); each path is a ``results.jsonl`` or its directory.

    Raises ``FileNotFoundError`` for a missing file and ``ValueError`` for one that is not a results file.
    """
    files = [path / RESULTS_FILE if path.is_dir() else path for path in (Path(path_a), Path(path_b))]
    for file in files:
        if not file.exists():
            raise FileNotFoundError(f"{file} does not exist")
    runs = [read_results(file) for file in files]
    for file, run in zip(files, runs, strict=True):
        if run.empty:
            raise ValueError(f"{file} holds no complete record: nothing to compare")
    return compare_results(runs[0], runs[1], path_a=files[0], path_b=files[1])
