"""The verdict table that opens every report: one row per run, target and mode, with accuracy and its 95%
interval, model calls, tokens, latency and time to the first answer as p50 / p95, and failed turns. A
structure run shows "not measured" for accuracy; a run under a latency profile shows its simulated times,
marked."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from benchmarks.report.findings import ms_text
from benchmarks.report.runs import Regime, ReportRun
from benchmarks.report.summary import ModeSummary, Summary
from benchmarks.report.tables import Table, accuracy_cell

NOT_MEASURED = "not measured (stand-in)"
"""The accuracy cell of a structure run."""

SIMULATED_MARK = " (sim.)"
"""After a time that was simulated under a latency profile."""

VERDICT_CAPTION = (
    "Per turn. Accuracy: share of turns passed, Wilson 95% interval. Latency: a turn's model plus harness "
    "time; first answer: from the turn's start to the first answer token. (sim.) marks model time simulated "
    "under the run's latency profile; other times were measured on the run's machine. A failed turn never "
    "passes; its failure kinds follow the count."
)


@dataclass(frozen=True)
class VerdictLine:
    """One row of the verdict table: a mode of one target of one run."""

    run: str
    """The run's label (empty in a one-run report)."""
    target: str | None
    """The target's name in a model matrix, else ``None``."""
    mode: ModeSummary
    regime: Regime


def verdict_lines(run: str, summary: Summary, regime: Regime) -> list[VerdictLine]:
    """The rows of one run, in its targets' and modes' order."""
    return [VerdictLine(run, target, mode, regime) for target, mode in summary.cells()]


def runs_verdict_lines(runs: Sequence[ReportRun]) -> list[VerdictLine]:
    return [line for run in runs for line in verdict_lines(run.label, run.summary, run.regime)]


def _pair(p50: float | None, p95: float | None, mark: str) -> str:
    if p50 is None or p95 is None:
        return "–"
    return f"{ms_text(p50)} / {ms_text(p95)}{mark}"


def latency_cell(mode: ModeSummary, regime: Regime) -> str:
    """Latency p50 / p95 in ms: simulated under a profile (marked), else measured."""
    if regime.simulated and mode.simulated_p50 is not None:
        return _pair(mode.simulated_p50, mode.simulated_p95, SIMULATED_MARK)
    return _pair(mode.latency_p50, mode.latency_p95, "")


def first_answer_cell(mode: ModeSummary, regime: Regime) -> str:
    """Time to the first answer token p50 / p95 in ms: simulated under a profile (marked), else measured."""
    if regime.simulated and mode.simulated_first_answer_p50 is not None:
        return _pair(mode.simulated_first_answer_p50, mode.simulated_first_answer_p95, SIMULATED_MARK)
    return _pair(mode.first_answer_p50, mode.first_answer_p95, "")


def failure_kinds_text(mode: ModeSummary) -> str:
    """``"13 model_output, 5 limit, 1 timeout"``: failed turns per kind, largest first."""
    kinds = sorted(mode.failures.items(), key=lambda item: -item[1])
    return ", ".join(f"{count} {kind}" for kind, count in kinds)


def failures_cell(mode: ModeSummary) -> str:
    """``"19 (13 model_output, 5 limit, 1 timeout)"``; ``"0"`` without failures."""
    return f"{mode.failed_turns} ({failure_kinds_text(mode)})" if mode.failed_turns else "0"


def tokens_cell(mode: ModeSummary) -> str:
    """Input / output tokens per turn (mean), or "not reported"."""
    if not mode.tokens_reported:
        return "not reported"
    return f"{mode.input_tokens_mean:,.0f} / {mode.output_tokens_mean:,.0f}"


def verdict_header(lines: Sequence[VerdictLine]) -> list[str]:
    """The columns: ``run`` when several runs, ``target`` when some run is a matrix, then the figures."""
    runs = len({line.run for line in lines}) > 1
    targets = any(line.target is not None for line in lines)
    return [
        *(["run"] if runs else []),
        *(["target"] if targets else []),
        "mode",
        "turns",
        "accuracy (95% CI)",
        "calls/turn (max)",
        "tokens in / out per turn",
        "latency p50 / p95 ms",
        "first answer p50 / p95 ms",
        "failed turns",
    ]


def verdict_cells(line: VerdictLine, header: Sequence[str]) -> list[str]:
    m = line.mode
    lead = {"run": line.run, "target": line.target or "–", "mode": m.mode}
    figures = [
        str(m.turns),
        NOT_MEASURED if line.regime.structure_only else accuracy_cell(m),
        f"{m.calls_mean:.2f} ({m.calls_max})",
        tokens_cell(m),
        latency_cell(m, line.regime),
        first_answer_cell(m, line.regime),
        failures_cell(m),
    ]
    return [lead[name] for name in header if name in lead] + figures


def verdict_table(lines: Sequence[VerdictLine]) -> Table:
    header = verdict_header(lines)
    return header, [verdict_cells(line, header) for line in lines]


def verdict_title(runs: Sequence[ReportRun]) -> str:
    """``Which architecture for <model>, and why`` (or for every run, side by side)."""
    if len(runs) > 1:
        return f"Which architecture, and why: {len(runs)} runs side by side"
    meta = runs[0].results.meta
    if runs[0].regime.structure_only:
        return "Which architecture, and why: structure only (offline stand-in)"
    return f"Which architecture for {meta.model or meta.provider}, and why"
