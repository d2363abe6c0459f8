"""The README block of a real-model run (``real-model``): what a reader needs to trust the comparison.

Per mode: accuracy with its Wilson 95% interval, model calls, tokens and the cached share, real latency and
time to the first answer (p50 / p95, measured), turns with ungrounded figures, tool calls recovered from
text, and failure kinds; then the verdict and the paired test between the modes, which scenario categories
the run covered and which it did not, the scorer's agreement with the human-labeled sets, and the exact
command that reproduces the run."""

from __future__ import annotations

from collections.abc import Sequence

from benchmarks.report.calibration import agreement_line
from benchmarks.report.coverage import coverage_text
from benchmarks.report.md_table import render_table
from benchmarks.report.regime import first_line, regime_of
from benchmarks.report.summary import ModeSummary, Summary, tokens_text
from benchmarks.report.tables import NOT_RECORDED, Table, accuracy_cell, per_target
from benchmarks.report.verdict import failures_cell, first_answer_cell, latency_cell, tokens_cell
from benchmarks.report.verdict_text import accuracy_edge, run_verdict
from benchmarks.results import RunResults
from benchmarks.scenario import Scenario, load_scenarios

REAL_MODEL_BLOCK = "real-model"
"""The README block every run with a real provider writes to."""

COLUMNS_CAPTION = (
    "Per turn, measured on the run's machine. Accuracy: share of turns passed (Wilson 95% interval). "
    "Cached: share of input tokens the provider's prompt cache served. First answer: time from the turn's "
    "start to the first answer token. Ungrounded: turns whose answer stated a figure no ERP result "
    "supported (n/a: the run predates the check). Recovered: tool calls the model wrote as text that tool "
    "calling turned into real calls."
)


def _row(mode: ModeSummary, results: RunResults) -> list[str]:
    regime = regime_of(results.meta)
    recovered = str(mode.recovered_tool_calls) if mode.mode.startswith("toolcalling") else "–"
    return [
        mode.mode,
        str(mode.turns),
        accuracy_cell(mode),
        f"{mode.calls_mean:.2f}",
        tokens_cell(mode),
        tokens_text(mode, mode.cached_share, ".0%") if mode.cached_share is not None else "–",
        latency_cell(mode, regime),
        first_answer_cell(mode, regime),
        NOT_RECORDED if mode.ungrounded_turns is None else str(mode.ungrounded_turns),
        recovered,
        failures_cell(mode),
    ]


def real_model_rows(results: RunResults, summary: Summary) -> Table:
    """The per-mode table of the block (a ``target`` column first for a matrix)."""

    def one(part: Summary) -> Table:
        header = [
            "mode",
            "turns",
            "accuracy (95% CI)",
            "calls/turn",
            "tokens in / out",
            "cached",
            "latency p50 / p95 ms",
            "first answer p50 / p95 ms",
            "ungrounded",
            "recovered",
            "failed (kinds)",
        ]
        return header, [_row(m, results) for m in part.modes]

    found = per_target(summary, one)
    return found if found is not None else one(summary)


def paired_lines(summary: Summary) -> list[str]:
    """The paired accuracy test of every mode against the base mode (per target for a matrix)."""
    entries = [(f"Target {t.target.name}: ", t.summary) for t in summary.targets] or [("", summary)]
    return [f"- {prefix}{accuracy_edge(p).detail}" for prefix, part in entries for p in part.paired]


def real_model_block(
    results: RunResults, summary: Summary, suite: Sequence[Scenario] | None = None
) -> list[str]:
    """The block's lines between its markers (``suite``: the packaged scenarios, for the coverage line)."""
    from benchmarks.report.reproduce import bench_command, reproduce_text

    meta = results.meta
    verdict = run_verdict(summary, results.scored_rows, regime_of(meta), meta.model)
    lines = [f"**{first_line(meta)}**", ""]
    lines += render_table(*real_model_rows(results, summary))
    lines += ["", COLUMNS_CAPTION, ""]
    lines += [f"- **{sentence}**" for sentence in verdict.leads]
    lines += paired_lines(summary)
    lines += [
        "",
        coverage_text(results.scored_rows, load_scenarios() if suite is None else suite),
        "",
        agreement_line(),
        "",
        f"Reproduce it. {reproduce_text(meta)}",
        "",
        "```bash",
        bench_command(meta),
        "```",
    ]
    return lines
