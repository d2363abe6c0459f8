"""The runs a report shows: each run's results, summary, cost estimate, regime and a short label, read from
its ``results.jsonl`` (or its folder). A report of several runs puts them side by side, each labeled.

The regime says what kind of run produced the figures, before any figure: a real model (its accuracy and
latency are that model's), the offline stand-in (structure, not accuracy), and whether model time was
simulated under a latency profile. Every report opens with :func:`first_line`."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from benchmarks.cost import CostEstimate, estimate_costs, load_pricing
from benchmarks.report.aggregate import summarize
from benchmarks.report.summary import CategorySummary, Summary
from benchmarks.report.tables import Table
from benchmarks.results import RESULTS_FILE, RunMeta, RunResults, TurnRow

STRUCTURE_ONLY = (
    "the offline stand-in answered, so it measures structure (model calls, tokens, harness overhead), "
    "not accuracy"
)
"""What a structure run's first line says about its figures."""


@dataclass(frozen=True)
class Regime:
    """The regime of one run: who answered, under which clock, with which prefix cache."""

    provider: str
    """The provider, or ``"N targets"`` for a model matrix."""
    model: str | None
    latency_profile: str | None
    prefix_cache: str
    """``"modelled"``, ``"not modelled"`` or ``"not recorded"`` for the offline stand-in; ``"the
    provider's own"`` for a real provider."""
    structure_only: bool
    """Whether the offline stand-in produced every figure (accuracy is then not measured)."""
    mixed: bool = False
    """A model matrix whose targets are partly the offline stand-in and partly real models."""

    @property
    def simulated(self) -> bool:
        """Whether model time is simulated under a latency profile (as well as measured)."""
        return self.latency_profile is not None

    @property
    def clock(self) -> str:
        """``"simulated (<profile>)"`` or ``"measured"``: the clock of the run's latency figures."""
        return f"simulated ({self.latency_profile})" if self.simulated else "measured"

    @property
    def kind(self) -> str:
        """``"real model"``, ``"offline structure"``, ``"offline, simulated <profile>"`` or ``"mixed"``."""
        if self.mixed:
            return "mixed (real and offline targets)"
        if not self.structure_only:
            return "real model"
        return f"offline, simulated {self.latency_profile}" if self.simulated else "offline structure"


def regime_of(meta: RunMeta) -> Regime:
    cache = {True: "modelled", False: "not modelled", None: "not recorded"}[meta.prompt_cache]
    matrix = meta.matrix
    return Regime(
        provider=f"{len(meta.targets)} targets" if matrix else meta.provider,
        model=", ".join(t.model_name for t in meta.targets) if matrix else meta.model,
        latency_profile=meta.latency_profile,
        prefix_cache=cache if meta.any_offline else "the provider's own",
        structure_only=meta.offline,
        mixed=meta.any_offline and not meta.offline,
    )


def _simulated_clause(regime: Regime) -> str:
    if not regime.simulated:
        return ""
    return (
        f"; its model time is simulated under the {regime.latency_profile} latency profile (computed from "
        "token counts, never slept), beside the time measured on this machine"
    )


def first_line(meta: RunMeta) -> str:
    """The sentence every report of the run opens with: what its figures measure."""
    regime = regime_of(meta)
    if regime.structure_only:
        return f"Structure run: {STRUCTURE_ONLY}{_simulated_clause(regime)}."
    if regime.mixed:
        offline = ", ".join(t.name for t in meta.targets if t.offline)
        return (
            f"Model matrix of real and offline targets: the offline targets ({offline}) measure structure "
            "(model calls, tokens, harness overhead), not accuracy; the others are real models"
            f"{_simulated_clause(regime)}."
        )
    model = meta.model or f"the {meta.provider} provider's default model"
    who = "real models" if meta.matrix else f"a real model, {model} ({meta.provider})"
    return (
        f"Real-model run: every turn was sent to {who}, so accuracy and latency are the model's, measured on "
        f"this machine{_simulated_clause(regime)}."
    )


def title(meta: RunMeta) -> str:
    """The report's title, which already says what the figures measure."""
    regime = regime_of(meta)
    if regime.structure_only:
        simulated = f"; model time simulated ({regime.latency_profile})" if regime.simulated else ""
        return (
            "erp-ai-harness benchmark: structure (calls, tokens, overhead), not accuracy — offline stand-in"
            + simulated
        )
    if meta.model and not meta.matrix:
        return f"erp-ai-harness benchmark: which architecture for {meta.model}"
    return "erp-ai-harness benchmark: which architecture for these models"


def combined_title(count: int) -> str:
    return f"erp-ai-harness benchmark: {count} runs side by side"


SIDE_BY_SIDE = (
    "Each run is compared within itself only: modes against modes on the turns both ran. Runs differ in "
    "model, clock and scenarios, so their figures sit side by side, never pooled or tested against each "
    "other."
)
"""What a report of several runs says under its regimes."""


def summarize_run(results: RunResults) -> Summary:
    """The summary of a run as its reports show it: per target when it has several, with the run's
    prefix-cache setting (when an offline model ran)."""
    meta = results.meta
    return summarize(
        results.rows,
        meta.modes,
        targets=meta.run_targets,
        prompt_cache=meta.prompt_cache if meta.any_offline else None,
    )


@dataclass(frozen=True)
class ReportRun:
    label: str
    """A short name, unique within the report: the results file's stem, or its folder's name."""
    results: RunResults
    summary: Summary
    costs: list[CostEstimate]
    """One cost estimate per target."""
    path: Path | None = None

    anchor: str = ""
    """A prefix for the run's HTML ids, unique within the report (empty for a report of one run)."""

    @property
    def regime(self) -> Regime:
        return regime_of(self.results.meta)

    def per_cell(self, read: Callable[[TurnRow], float | None]) -> list[tuple[str, str, list[float]]]:
        """``(label, mode, values)`` per (target, mode): ``read`` of each of its rows that has the figure."""
        rows = self.results.scored_rows
        return [
            (
                mode.mode if target is None else f"{target} · {mode.mode}",
                mode.mode,
                [
                    v
                    for row in rows
                    if row.mode == mode.mode and target in (None, row.target)
                    if (v := read(row)) is not None
                ],
            )
            for target, mode in self.summary.cells()
        ]


def results_path(path: Path) -> Path:
    """``path`` itself, or the results file inside a run folder."""
    return path / RESULTS_FILE if path.is_dir() else path


def run_label(path: Path) -> str:
    """``full-real`` for ``…/full-real.jsonl``; the folder's name for ``…/<folder>/results.jsonl``."""
    return path.parent.name if path.name == RESULTS_FILE and path.parent.name else path.stem


def unique_labels(labels: Sequence[str]) -> list[str]:
    """``labels`` with a ``-2``, ``-3`` … suffix on repeats."""
    seen: dict[str, int] = {}
    out = []
    for label in labels:
        seen[label] = seen.get(label, 0) + 1
        out.append(label if seen[label] == 1 else f"{label}-{seen[label]}")
    return out


def report_run(
    results: RunResults, label: str = "", *, path: Path | None = None, pricing: Path | None = None
) -> ReportRun:
    """A single run's :class:`ReportRun` (``pricing``: a pricing file that replaces packaged entries)."""
    return ReportRun(
        label, results, summarize_run(results), estimate_costs(results, load_pricing(pricing)), path
    )


def combined_runs(runs: Sequence[tuple[Path, RunResults]], *, pricing: Path | None = None) -> list[ReportRun]:
    """The runs of a combined report, labeled from their paths, in the order given."""
    labels = unique_labels([run_label(path) for path, _ in runs])
    return [
        replace(report_run(results, label, path=path, pricing=pricing), anchor=f"run-{i + 1}-")
        for i, (label, (path, results)) in enumerate(zip(labels, runs, strict=True))
    ]


def regimes_rows(runs: Sequence[ReportRun]) -> Table:
    """One row per run: label, regime, provider, model, latency profile, prefix cache, size, start, commit."""
    header = [
        "run",
        "regime",
        "provider",
        "model",
        "latency profile",
        "prefix cache",
        "size",
        "started · commit",
    ]
    rows = []
    for run in runs:
        meta, regime = run.results.meta, run.regime
        commit = meta.provenance.git_commit if meta.provenance is not None else None
        size = f"{meta.scenarios} scenarios · {meta.turns} turns/mode · {meta.repeat} rep."
        started = meta.started_at[:16].replace("T", " ") + (f" · {commit[:12]}" if commit else "")
        model, profile = regime.model or "default", regime.latency_profile or "none (measured time)"
        rows.append(
            [run.label, regime.kind, regime.provider, model, profile, regime.prefix_cache, size, started]
        )
    return header, rows


GridColumn = tuple[ReportRun, str | None, str]
"""A column of the per-category grid: (run, target name or ``None``, mode)."""


def category_grid(
    runs: Sequence[ReportRun],
) -> tuple[list[GridColumn], list[str], dict[tuple[int, str], CategorySummary]]:
    """The per-category grid of every (run, target, mode): its columns, its categories (rows, in name order)
    and each (column index, category) cell's figures."""
    columns = [(run, target, m.mode) for run in runs for target, m in run.summary.cells()]
    cells: dict[tuple[int, str], CategorySummary] = {}
    for i, (run, target, mode) in enumerate(columns):
        summary = next((t.summary for t in run.summary.targets if t.target.name == target), run.summary)
        cells |= {(i, c.category): c for c in summary.categories if c.mode == mode}
    return columns, sorted({category for _, category in cells}), cells
