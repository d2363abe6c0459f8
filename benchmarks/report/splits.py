"""The tuning suite and the held-out questions side by side, and the verdict on the held-out questions.

Prompts and tool descriptions are tuned on the suite only (:mod:`benchmarks.scenario`), so its accuracy
overstates what a new user's questions get; a verdict a reader acts on rests on the held-out questions when a
run has them. These helpers split a run's rows by set; the rest of the report is unchanged.
"""

from __future__ import annotations

from collections.abc import Sequence

from benchmarks.report.aggregate import summarize
from benchmarks.report.runs import Regime
from benchmarks.report.summary import ModeSummary, Summary
from benchmarks.report.tables import Table, accuracy_cell
from benchmarks.report.verdict import Verdict, accuracy_edge, run_verdict
from benchmarks.results import RunResults, TurnRow
from benchmarks.scenario import Split

__all__ = [
    "HELDOUT_PREFIX",
    "SPLITS_CAPTION",
    "decision",
    "heldout_verdict",
    "split_lines",
    "split_rows",
    "split_summary",
    "split_table",
]

SPLITS_CAPTION = (
    "Suite: the packaged scenarios the prompts and tool descriptions were tuned on. Held-out: questions "
    "written the way ERP users type, which nothing was tuned on (`benchmarks/scenarios/heldout/`, hash in "
    "the run's provenance). Accuracy with its Wilson 95% interval; the last column is held-out minus suite."
)

SPLIT_LABELS: dict[Split, str] = {"suite": "tuning suite", "heldout": "held-out questions"}


def split_rows(rows: Sequence[TurnRow], split: Split) -> list[TurnRow]:
    """The rows of one set."""
    return [row for row in rows if row.split == split]


def has_both(rows: Sequence[TurnRow]) -> bool:
    """Whether the run measured both sets (outside warm-up)."""
    return {row.split for row in rows if not row.warmup} == {"suite", "heldout"}


def split_summary(results: RunResults, split: Split) -> Summary:
    """The summary of one set's rows, as :func:`benchmarks.report.runs.summarize_run` builds a run's."""
    meta = results.meta
    return summarize(
        split_rows(results.rows, split),
        meta.modes,
        targets=meta.run_targets,
        prompt_cache=meta.prompt_cache if meta.any_offline else None,
    )


def _cell(mode: ModeSummary | None) -> str:
    return "–" if mode is None else f"{accuracy_cell(mode)}, {mode.turns} turns"


def split_table(results: RunResults) -> Table | None:
    """Accuracy per (target,) mode on the suite and on the held-out questions; ``None`` unless the run has
    both."""
    if not has_both(results.rows):
        return None
    suite, heldout = split_summary(results, "suite"), split_summary(results, "heldout")
    held = {(target, m.mode): m for target, m in heldout.cells()}
    rows: list[list[str]] = []
    for target, mode in suite.cells():
        other = held.get((target, mode.mode))
        gap = "–" if other is None else f"{(other.accuracy - mode.accuracy) * 100:+.1f} points"
        rows.append([*([] if target is None else [target]), mode.mode, _cell(mode), _cell(other), gap])
    lead = ["target", "mode"] if suite.matrix else ["mode"]
    return [*lead, "suite accuracy", "held-out accuracy", "held-out − suite"], rows


def heldout_verdict(results: RunResults, regime: Regime, who: str | None) -> Verdict | None:
    """The verdict on the held-out questions alone; ``None`` unless the run has both sets."""
    if not has_both(results.rows):
        return None
    rows = [row for row in results.scored_rows if row.split == "heldout"]
    return run_verdict(split_summary(results, "heldout"), rows, regime, who)


def split_lines(results: RunResults, split: Split) -> list[str]:
    """The paired accuracy test of every mode against the base mode on one set, as list items."""
    summary = split_summary(results, split)
    entries = [(f"Target {t.target.name}, ", t.summary) for t in summary.targets] or [("", summary)]
    label = SPLIT_LABELS[split]
    return [
        f"- {prefix}{label}: {accuracy_edge(paired).detail}"
        for prefix, part in entries
        for paired in part.paired
    ]


HELDOUT_PREFIX = "On the held-out questions, which nothing was tuned on: "


def decision(results: RunResults, summary: Summary, regime: Regime, who: str | None) -> Verdict:
    """The run's verdict as a reader should act on it: on the held-out questions when the run has both sets
    (the suite's paired test among the details), else on every turn."""
    heldout = heldout_verdict(results, regime, who)
    if heldout is None:
        return run_verdict(summary, results.scored_rows, regime, who)
    # the suite's paired accuracy test among the details; a stand-in's accuracy is no result, so none then
    suite = (
        [] if regime.structure_only else [line.removeprefix("- ") for line in split_lines(results, "suite")]
    )
    return Verdict(
        [HELDOUT_PREFIX + _lower_first(lead) for lead in heldout.leads], [*heldout.details, *suite]
    )


def _lower_first(sentence: str) -> str:
    """``sentence`` to follow a prefix: its first letter lowered unless it starts a name (``For …`` is
    lowered, a mode name is kept)."""
    return sentence[0].lower() + sentence[1:] if sentence.startswith("For ") else sentence
