"""The runs a report shows: each run's results, summary, cost estimate, regime and a short label, read from
its ``results.jsonl`` (or its folder). A report of several runs puts them side by side, each labeled."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from benchmarks.cost import CostEstimate, estimate_costs, load_pricing
from benchmarks.report.aggregate import Summary, summarize
from benchmarks.report.regime import Regime, regime_of
from benchmarks.results import RESULTS_FILE, RunResults, read_results

Table = tuple[list[str], list[list[str]]]

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
    """One run of a report."""

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
    return ReportRun(label, results, summarize_run(results), _costs(results, pricing), path)


def combined_runs(runs: Sequence[tuple[Path, RunResults]], *, pricing: Path | None = None) -> list[ReportRun]:
    """The runs of a combined report, labeled from their paths, in the order given."""
    labels = unique_labels([run_label(path) for path, _ in runs])
    return [
        ReportRun(label, results, summarize_run(results), _costs(results, pricing), path, f"run-{i + 1}-")
        for i, (label, (path, results)) in enumerate(zip(labels, runs, strict=True))
    ]


def read_run(path: Path) -> RunResults:
    """The results file at ``path`` (or in the folder ``path``)."""
    return read_results(results_path(path))


def _costs(results: RunResults, pricing: Path | None) -> list[CostEstimate]:
    return estimate_costs(results, load_pricing(pricing))


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
        rows.append(
            [
                run.label,
                regime.kind,
                regime.provider,
                regime.model or "default",
                regime.latency_profile or "none (measured time)",
                regime.prefix_cache,
                f"{meta.scenarios} scenarios · {meta.turns} turns/mode · {meta.repeat} rep.",
                meta.started_at[:16].replace("T", " ") + (f" · {commit[:12]}" if commit else ""),
            ]
        )
    return header, rows
