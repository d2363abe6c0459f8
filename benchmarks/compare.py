"""What changed between two benchmark runs, per mode and category, regressions first (``erp-ai compare A B``).

:func:`compare_runs` reads two ``results.jsonl`` files (or their directories) and compares, for every mode and
for every (mode, category): accuracy with its Wilson 95% interval, model calls per turn, input and output
tokens per turn, latency p50 (simulated when both runs were profiled, since measured milliseconds of two
runs on a shared machine are noisy), time to the first answer token p50 (simulated and measured) and the
valid-plan rate. Runs with several targets (models) are compared per (target, mode) and category: a group
of run A is set against the group of run B with the same target name. It also lists the turns that flipped
(same target, scenario, turn and repetition in both runs), newly failing first, with an exact McNemar test of
the flips per target and mode.

A group is a **regression** when, from A to B, accuracy dropped, or calls per turn rose by more than
:data:`CALLS_TOLERANCE`, or input or output tokens per turn rose by more than :data:`TOKENS_TOLERANCE`, or
latency p50 or time to the first answer p50 rose by more than :data:`LATENCY_TOLERANCE` (relative; simulated
figures in any group, measured ones only in a mode's overall figures, where there are enough turns for a p50
to mean something), or the valid-plan rate dropped (when both runs recorded it). Regressions come first, the
largest accuracy drop first. Warm-up turns are left out of both runs.

A group that only one run has (a mode one run did not run, a target or category only one run has: different
``--modes``, ``--target`` or ``--tag``) is **not compared**: listed as such, with the run that has it, and
never a regression, so ``--fail-on-regression`` fails only on what both runs measured. A run read from a
file whose last line was cut short, or that holds fewer turns than its settings plan, is named in the
comparison's warnings (:attr:`Comparison.warnings`).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path

from pydantic import BaseModel, Field

from benchmarks.report.markdown import render_table
from benchmarks.results import RESULTS_FILE, RunMeta, RunResults, TurnRow, read_results
from benchmarks.stats import Interval, mcnemar_exact, percentile, wilson_interval
from benchmarks.targets import DEFAULT_TARGET

__all__ = [
    "CALLS_TOLERANCE",
    "LATENCY_TOLERANCE",
    "TOKENS_TOLERANCE",
    "Comparison",
    "GroupChange",
    "GroupFigures",
    "RunLabel",
    "TurnFlip",
    "compare_results",
    "compare_runs",
    "render_comparison_markdown",
    "write_comparison",
]

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


def _figures(rows: Sequence[TurnRow]) -> GroupFigures:
    passed = sum(row.passed for row in rows)
    simulated = [v for row in rows if (v := row.simulated_latency_ms) is not None]
    latency = simulated if simulated and len(simulated) == len(rows) else [row.latency_ms for row in rows]
    n = len(rows)
    first = [v for row in rows if (v := row.first_answer_ms) is not None]
    simulated_first = [v for row in rows if (v := row.simulated_first_answer_ms) is not None]
    checked = [row.plan_valid for row in rows if row.plan_valid is not None]
    return GroupFigures(
        turns=n,
        passed=passed,
        accuracy=passed / n,
        accuracy_interval=wilson_interval(passed, n),
        calls_mean=sum(row.model_calls for row in rows) / n,
        input_tokens_mean=sum(row.input_tokens for row in rows) / n,
        output_tokens_mean=sum(row.output_tokens for row in rows) / n,
        latency_p50=percentile(latency, 50),
        simulated=latency is simulated,
        first_answer_p50=percentile(first, 50) if first else None,
        simulated_first_answer_p50=percentile(simulated_first, 50) if simulated_first else None,
        plans_valid=sum(checked),
        plans_checked=len(checked),
    )


GroupKey = tuple[str, str, str]
"""(target, mode, category)."""


def _groups(rows: Sequence[TurnRow]) -> dict[GroupKey, list[TurnRow]]:
    groups: dict[GroupKey, list[TurnRow]] = defaultdict(list)
    for row in rows:
        groups[(row.target, row.mode, ALL)].append(row)
        groups[(row.target, row.mode, row.category)].append(row)
    return groups


def _rose(before: float, after: float, tolerance: float) -> bool:
    return after > before * (1 + tolerance) if before > 0 else after > 0


def _judge(change: GroupChange) -> GroupChange:
    a, b = change.a, change.b
    if a is None or b is None:
        change.reasons.append("only in run A" if b is None else "only in run B")
        return change  # not compared, so never a regression
    if b.accuracy < a.accuracy:
        change.reasons.append(f"accuracy {a.accuracy:.1%} → {b.accuracy:.1%}")
    if b.calls_mean > a.calls_mean + CALLS_TOLERANCE:
        change.reasons.append(f"calls/turn {a.calls_mean:.2f} → {b.calls_mean:.2f}")
    if _rose(a.input_tokens_mean, b.input_tokens_mean, TOKENS_TOLERANCE):
        change.reasons.append(f"input tokens/turn {a.input_tokens_mean:.0f} → {b.input_tokens_mean:.0f}")
    if _rose(a.output_tokens_mean, b.output_tokens_mean, TOKENS_TOLERANCE):
        change.reasons.append(f"output tokens/turn {a.output_tokens_mean:.0f} → {b.output_tokens_mean:.0f}")
    comparable = (a.simulated and b.simulated) or (
        not a.simulated and not b.simulated and change.category == ALL
    )
    if comparable and _rose(a.latency_p50, b.latency_p50, LATENCY_TOLERANCE):
        kind = "simulated " if b.simulated else ""
        change.reasons.append(f"{kind}latency p50 {a.latency_p50:.1f} → {b.latency_p50:.1f} ms")
    first_pairs = [("simulated ", a.simulated_first_answer_p50, b.simulated_first_answer_p50)]
    if change.category == ALL:
        first_pairs.append(("", a.first_answer_p50, b.first_answer_p50))
    for kind, before, after in first_pairs:
        if before is not None and after is not None and _rose(before, after, LATENCY_TOLERANCE):
            change.reasons.append(f"{kind}first answer p50 {before:.1f} → {after:.1f} ms")
    rate_a, rate_b = a.valid_plan_rate, b.valid_plan_rate
    if rate_a is not None and rate_b is not None and rate_b < rate_a:
        change.reasons.append(f"valid plans {rate_a:.1%} → {rate_b:.1%}")
    change.regression = bool(change.reasons)
    return change


def _label(path: Path, meta: RunMeta) -> RunLabel:
    commit = meta.provenance.git_commit if meta.provenance is not None else None
    return RunLabel(
        path=str(path),
        started_at=meta.started_at,
        provider=meta.provider,
        model=meta.model,
        latency_profile=meta.latency_profile,
        commit=commit,
    )


_SETTINGS = (
    "modes",
    "provider",
    "model",
    "base_url",
    "latency_profile",
    "structured",
    "max_tokens",
    "repeat",
    "turns",
    "prompt_cache",
)


def _target_settings(a: RunMeta, b: RunMeta) -> list[str]:
    """What changed in the runs' targets: names only in one run, or a name that stands for another model."""
    if not a.targets and not b.targets:
        return []
    specs_a = [t.spec for t in a.run_targets]
    specs_b = [t.spec for t in b.run_targets]
    return [] if specs_a == specs_b else [f"targets {specs_a} → {specs_b}"]


def compare_results(
    a: RunResults, b: RunResults, *, path_a: Path | None = None, path_b: Path | None = None
) -> Comparison:
    """Compare two runs already read (see :func:`compare_runs`)."""
    rows_a, rows_b = a.scored_rows, b.scored_rows
    groups_a, groups_b = _groups(rows_a), _groups(rows_b)
    modes = list(
        dict.fromkeys([*a.meta.modes, *b.meta.modes, *(k[1] for k in groups_a), *(k[1] for k in groups_b)])
    )
    targets = list(
        dict.fromkeys(
            [
                *(t.name for t in a.meta.run_targets),
                *(t.name for t in b.meta.run_targets),
                *(k[0] for k in groups_a),
                *(k[0] for k in groups_b),
            ]
        )
    )
    keys = sorted(
        groups_a.keys() | groups_b.keys(),
        key=lambda k: (targets.index(k[0]), modes.index(k[1]), k[2] != ALL, k[2]),
    )
    changes = [
        _judge(
            GroupChange(
                target=target,
                mode=mode,
                category=category,
                a=_figures(groups_a[key]) if (key := (target, mode, category)) in groups_a else None,
                b=_figures(groups_b[key]) if key in groups_b else None,
            )
        )
        for target, mode, category in keys
    ]
    named = bool(a.meta.targets or b.meta.targets) or targets != [DEFAULT_TARGET]
    order = {id(change): i for i, change in enumerate(changes)}
    changes.sort(
        key=lambda c: (
            not c.regression,
            c.accuracy_delta if c.accuracy_delta is not None else 0.0,
            order[id(c)],
        )
    )
    before = {(r.target, r.mode, r.scenario, r.turn, r.repetition): r for r in rows_a}
    newly_failing: list[TurnFlip] = []
    newly_passing: list[TurnFlip] = []
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
        (newly_passing if row.passed else newly_failing).append(flip)
    flips = [*newly_passing, *newly_failing]
    p_values = {
        _group_name(named, target, mode): mcnemar_exact(
            sum((f.target, f.mode) == (target, mode) for f in newly_passing),
            sum((f.target, f.mode) == (target, mode) for f in newly_failing),
        )
        for target in targets
        for mode in modes
        if any((f.target, f.mode) == (target, mode) for f in flips)
    }
    changed = [
        f"{name} {getattr(a.meta, name)!r} → {getattr(b.meta, name)!r}"
        for name in _SETTINGS
        if getattr(a.meta, name) != getattr(b.meta, name)
    ] + _target_settings(a.meta, b.meta)
    warnings = [f"run {name}: {text}" for name, run in (("A", a), ("B", b)) for text in run.read_warnings]
    return Comparison(
        a=_label(path_a or Path("A"), a.meta),
        b=_label(path_b or Path("B"), b.meta),
        settings_changed=changed,
        warnings=warnings,
        groups=changes,
        newly_failing=newly_failing,
        newly_passing=newly_passing,
        flips_p_value=p_values,
        targets=named,
    )


def _group_name(named: bool, target: str, mode: str) -> str:
    """``mode``, or ``target · mode`` when the runs have targets."""
    return f"{target} · {mode}" if named else mode


def _results_path(path: Path) -> Path:
    return path / RESULTS_FILE if path.is_dir() else path


def compare_runs(path_a: Path, path_b: Path) -> Comparison:
    """Compare run A (before) with run B (after); each path is a ``results.jsonl`` or its directory.

    Raises ``FileNotFoundError`` for a missing file and ``ValueError`` for one that is not a results file.
    """
    file_a, file_b = _results_path(Path(path_a)), _results_path(Path(path_b))
    for file in (file_a, file_b):
        if not file.exists():
            raise FileNotFoundError(f"{file} does not exist")
    run_a, run_b = read_results(file_a), read_results(file_b)
    for file, run in ((file_a, run_a), (file_b, run_b)):
        if run.empty:
            raise ValueError(f"{file} holds no complete record: nothing to compare")
    return compare_results(run_a, run_b, path_a=file_a, path_b=file_b)


def _pct(figures: GroupFigures | None) -> str:
    if figures is None:
        return "–"
    i = figures.accuracy_interval
    return f"{figures.accuracy:.1%} ({i.low * 100:.0f}–{i.high * 100:.0f})"


def _pair(a: float | None, b: float | None, decimals: int) -> str:
    if a is None or b is None:
        shown = a if a is not None else b
        return "–" if shown is None else f"{shown:.{decimals}f}"
    delta = b - a
    sign = "+" if delta > 0 else "−" if delta < 0 else "±"
    return f"{a:.{decimals}f} → {b:.{decimals}f} ({sign}{abs(delta):.{decimals}f})"


def _describe(label: RunLabel) -> str:
    text = f"`{label.path}`: {label.provider}" + (f" {label.model}" if label.model else "")
    text += f", latency profile {label.latency_profile}" if label.latency_profile else ""
    text += f", started {label.started_at}"
    return text + (f", commit {label.commit[:12]}" if label.commit else "")


def render_comparison_markdown(comparison: Comparison) -> str:
    """The comparison as Markdown: what was compared, regressions first, then every group and the flips."""
    lines = [
        "# erp-ai-harness: comparison of two runs",
        "",
        f"- A (before): {_describe(comparison.a)}",
        f"- B (after): {_describe(comparison.b)}",
    ]
    if comparison.settings_changed:
        lines.append(f"- Settings that differ: {'; '.join(comparison.settings_changed)}.")
    lines += [f"- **Warning:** {warning}." for warning in comparison.warnings]
    regressions = comparison.regressions
    named = comparison.targets
    lines += ["", "## Regressions", ""]
    if regressions:
        lines += [
            f"- **{_group_name(named, g.target, g.mode)} · {g.category}**: {', '.join(g.reasons)}."
            for g in regressions
        ]
    else:
        lines.append(
            "None: no mode or category lost accuracy or got more expensive or slower beyond tolerance "
            "(of those both runs measured)."
        )
    lines += _not_compared_lines(comparison)
    lines += ["", "## Per target, mode and category" if named else "## Per mode and category", ""]
    header = [
        *(["target"] if named else []),
        "mode",
        "category",
        "turns A / B",
        "accuracy A (95% CI)",
        "accuracy B (95% CI)",
        "calls/turn",
        "input tok/turn",
        "output tok/turn",
        "latency p50 ms",
        "first answer p50 ms, simulated",
        "first answer p50 ms, measured",
        "valid plans",
        "regression",
    ]
    rows = []
    for g in comparison.groups:
        simulated = g.b.simulated if g.b is not None else g.a.simulated if g.a is not None else False
        rows.append(
            [
                *([g.target] if named else []),
                g.mode,
                g.category,
                f"{g.a.turns if g.a else 0} / {g.b.turns if g.b else 0}",
                _pct(g.a),
                _pct(g.b),
                _pair(g.a.calls_mean if g.a else None, g.b.calls_mean if g.b else None, 2),
                _pair(g.a.input_tokens_mean if g.a else None, g.b.input_tokens_mean if g.b else None, 0),
                _pair(g.a.output_tokens_mean if g.a else None, g.b.output_tokens_mean if g.b else None, 0),
                _pair(g.a.latency_p50 if g.a else None, g.b.latency_p50 if g.b else None, 1)
                + (" (sim.)" if simulated else ""),
                _pair(
                    g.a.simulated_first_answer_p50 if g.a else None,
                    g.b.simulated_first_answer_p50 if g.b else None,
                    1,
                ),
                _pair(g.a.first_answer_p50 if g.a else None, g.b.first_answer_p50 if g.b else None, 1),
                _rate_pair(g.a, g.b),
                "yes" if g.regression else "" if g.compared else "not compared",
            ]
        )
    lines += render_table(header, rows, align=("l" if named else "") + "llrrrrrrrrrrl")
    lines += [
        "",
        f"Tolerances: calls/turn +{CALLS_TOLERANCE}, tokens +{TOKENS_TOLERANCE:.0%}, latency and first "
        f"answer +{LATENCY_TOLERANCE:.0%} (measured figures only for a mode overall); any accuracy or "
        "valid-plan drop counts. Latency is simulated (sim.) when both runs were profiled. Valid plans: "
        "turns whose request for operations was valid as written, out of those that recorded it (n/a: none "
        "did)." + (" Groups are matched by target name." if named else ""),
    ]
    lines += ["", "## Turns that flipped", ""]
    if not comparison.newly_failing and not comparison.newly_passing:
        lines.append("None: every turn both runs ran has the same outcome.")
    else:
        tests = ", ".join(f"{mode} p = {p:.3f}" for mode, p in comparison.flips_p_value.items())
        lines.append(f"Exact McNemar test of newly passing vs newly failing turns per mode: {tests}.")
        lines.append("")
        flips = [*comparison.newly_failing, *comparison.newly_passing]
        lines += render_table(
            ["now", *(["target"] if named else []), "mode", "scenario", "turn", "rep", "why it fails now"],
            [
                [
                    "passes" if f.now_passes else "fails",
                    *([f.target] if named else []),
                    f.mode,
                    f.scenario,
                    str(f.turn),
                    str(f.repetition),
                    f.why,
                ]
                for f in flips
            ],
            align="lll" + ("l" if named else "") + "rrl",
        )
    return "\n".join(lines) + "\n"


def _not_compared_lines(comparison: Comparison) -> list[str]:
    """The ``Not compared`` section: each group only one run has; a mode's categories are folded into the
    mode when the whole mode is missing."""
    groups = comparison.not_compared
    if not groups:
        return []
    whole = {(g.target, g.mode) for g in groups if g.category == ALL}
    note = "Only one run has these, so they are not compared and never count as regressions:"
    lines = ["", "## Not compared", "", note, ""]
    for g in groups:
        name = _group_name(comparison.targets, g.target, g.mode)
        if g.category == ALL:
            lines.append(f"- **{name}** (every category): {', '.join(g.reasons)}.")
        elif (g.target, g.mode) not in whole:
            lines.append(f"- **{name} · {g.category}**: {', '.join(g.reasons)}.")
    return lines


def _rate_pair(a: GroupFigures | None, b: GroupFigures | None) -> str:
    """``"98.5% (130/132) → 100.0% (132/132)"``; ``n/a`` for a side that did not record it."""

    def one(figures: GroupFigures | None) -> str:
        rate = figures.valid_plan_rate if figures is not None else None
        if figures is None or rate is None:
            return "n/a"
        return f"{rate:.1%} ({figures.plans_valid}/{figures.plans_checked})"

    left, right = one(a), one(b)
    return left if left == right == "n/a" else f"{left} → {right}"


def write_comparison(comparison: Comparison, out_dir: Path) -> Path:
    """Write ``compare.md`` into ``out_dir`` and return its path."""
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / COMPARISON_FILE
    path.write_text(render_comparison_markdown(comparison), encoding="utf-8")
    return path
