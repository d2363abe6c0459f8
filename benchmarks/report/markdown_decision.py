"""The first part of ``report.md``, one run or several side by side: the verdict table and sentences, the
scorer check, what each mode is, the latency distributions as percentiles, and one example of each kind of
failure (the same content as :mod:`benchmarks.report.html_decision`)."""

from __future__ import annotations

from collections.abc import Sequence

from benchmarks.report.about import mode_description
from benchmarks.report.calibration import agreement_line
from benchmarks.report.failure_examples import example_text, failure_groups
from benchmarks.report.goals import ms_text
from benchmarks.report.md_table import render_table
from benchmarks.report.paired_figures import first_answer, latency
from benchmarks.report.runs import ReportRun
from benchmarks.report.verdict import VERDICT_CAPTION, runs_verdict_lines, verdict_table
from benchmarks.report.verdict_text import run_verdict
from benchmarks.stats import percentile

PERCENTILES = (5, 25, 50, 75, 95)

DISTRIBUTION_MD_CAPTION = (
    "Percentiles of the per-turn times in ms (interpolated between the two closest turns). Simulated times "
    "are the latency profile's model time (plus harness time for latency); measured ones are wall time on "
    "the run's machine. report.html draws each distribution."
)


def verdict_block(runs: Sequence[ReportRun], title: str) -> list[str]:
    """``## <title>``: the verdict table, each run's sentences, the scorer check and the modes."""
    lines = [f"## {title}", ""]
    lines += render_table(*verdict_table(runs_verdict_lines(runs)))
    lines += ["", VERDICT_CAPTION, ""]
    for run in runs:
        verdict = run_verdict(run.summary, run.results.scored_rows, run.regime, run.results.meta.model)
        if len(runs) > 1:
            lines += [f"**{run.label}** ({run.regime.kind}):", ""]
        lines += [f"- **{sentence}**" for sentence in verdict.leads]
        lines += [f"- {sentence}" for sentence in verdict.details]
        lines.append("")
    lines += [agreement_line(), ""]
    modes = list(dict.fromkeys(m.mode for run in runs for _, m in run.summary.cells()))
    lines += [f"- `{mode}`: {mode_description(mode)}" for mode in modes]
    return [*lines, ""]


def distribution_block(runs: Sequence[ReportRun]) -> list[str]:
    """``## Latency distributions``: p5, p25, p50, p75 and p95 of latency and first answer per mode."""
    header = [
        *(["run"] if len(runs) > 1 else []),
        "mode",
        "figure",
        "clock",
        "turns",
        *(f"p{q} ms" for q in PERCENTILES),
    ]
    rows = []
    for run in runs:
        simulated = run.regime.simulated
        clock = f"simulated ({run.regime.latency_profile})" if simulated else "measured"
        for target, mode in run.summary.cells():
            name = f"{target} · {mode.mode}" if target is not None else mode.mode
            for figure, read in (("latency", latency(simulated)), ("first answer", first_answer(simulated))):
                values = [
                    v
                    for row in run.results.scored_rows
                    if row.mode == mode.mode and (target is None or row.target == target)
                    if (v := read(row)) is not None
                ]
                if not values:
                    continue
                figures = [ms_text(percentile(values, q)) for q in PERCENTILES]
                lead = [run.label] if len(runs) > 1 else []
                rows.append([*lead, name, figure, clock, str(len(values)), *figures])
    numbers = 1 + len(PERCENTILES)
    lines = ["## Latency distributions", ""]
    lines += render_table(header, rows, align="l" * (len(header) - numbers) + "r" * numbers)
    return [*lines, "", DISTRIBUTION_MD_CAPTION, ""]


def failure_examples_block(run: ReportRun, limit: int = 200) -> list[str]:
    """One example of each kind of failed turn, per mode (``[]`` when every turn passed)."""
    groups = failure_groups(run.results.scored_rows)
    matrix = run.summary.matrix
    lines = []
    for group in groups:
        who = f"{group.target} · {group.mode}" if matrix else group.mode
        count = len(group.turns)
        lines.append(
            f"- **{who} · {group.kind}** ({count} turn{'s' if count != 1 else ''}): "
            f"{example_text(group.example, limit)}"
        )
    return lines
