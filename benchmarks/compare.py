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

from benchmarks.compare_models import (
    ALL,
    CALLS_TOLERANCE,
    LATENCY_TOLERANCE,
    TOKENS_TOLERANCE,
    Comparison,
    GroupChange,
    GroupFigures,
    GroupKey,
    RunLabel,
    TurnFlip,
    group_name,
)
from benchmarks.compare_report import render_comparison_markdown, write_comparison
from benchmarks.results import RESULTS_FILE, RunMeta, RunResults, TurnRow, read_results
from benchmarks.stats import mcnemar_exact, mean, percentile, wilson_interval
from benchmarks.targets import DEFAULT_TARGET

__all__ = [
    "ALL",
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
        group_name(named, target, mode): mcnemar_exact(
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
