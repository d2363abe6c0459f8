"""The first screen of ``report.html``: what each run measures (its regime), the verdict table with links to
the turns it counts, the verdict sentences, the scorer's agreement with the human-labeled set, what each
mode is, and the latency distributions. One run or several side by side, with the same markup."""

from __future__ import annotations

from collections.abc import Sequence
from html import escape

from benchmarks.report.about import mode_description
from benchmarks.report.calibration import agreement_line
from benchmarks.report.html_parts import mode_label
from benchmarks.report.html_turns import filter_anchor, turn_columns
from benchmarks.report.paired_figures import first_answer, latency
from benchmarks.report.regime import first_line
from benchmarks.report.runs import ReportRun, regimes_rows
from benchmarks.report.svg_distribution import DISTRIBUTION_CAPTION, distribution_chart
from benchmarks.report.verdict import (
    VERDICT_CAPTION,
    VerdictLine,
    verdict_cells,
    verdict_header,
    verdict_lines,
    verdict_title,
)
from benchmarks.report.verdict_text import run_verdict


def regime_banner(run: ReportRun, *, labeled: bool = False, anchored: bool = True) -> str:
    """The run's first line, set apart (amber for a structure run, blue for a real model); ``anchored``
    gives it the id ``<prefix>regime`` (once per run on a page)."""
    kind = "structure" if run.regime.structure_only else "real"
    label = f'<span class="run">{escape(run.label)}</span>' if labeled else ""
    ident = f' id="{run.anchor}regime"' if anchored else ""
    return (
        f'<p class="regime {kind}"{ident} data-regime="{escape(run.regime.kind)}">'
        f"{label}{escape(first_line(run.results.meta))}</p>"
    )


def regimes_table(runs: Sequence[ReportRun]) -> str:
    """One row per run of a combined report: its label, regime, provider, model, clock, prefix cache, size."""
    header, rows = regimes_rows(runs)
    head = "".join(f"<th>{escape(h)}</th>" for h in header)
    body = "".join("<tr>" + "".join(f"<td>{escape(c)}</td>" for c in row) + "</tr>" for row in rows)
    return (
        f'<div class="scroll"><table class="regimes"><thead><tr>{head}</tr></thead>'
        f"<tbody>{body}</tbody></table></div>"
    )


def _column(run: ReportRun, line: VerdictLine) -> int | None:
    """The index of ``line``'s (target, mode) in the run's turn-by-turn table."""
    columns = turn_columns(run.results, run.summary)
    for i, (target, mode) in enumerate(columns):
        if mode == line.mode.mode and (line.target is None or target == line.target):
            return i
    return None


def _verdict_cell(
    run: ReportRun, line: VerdictLine, name: str, text: str, column: int | None, colours: dict[str, str]
) -> str:
    """One cell of the verdict table: accuracy and failures as a figure over a small second line, linked to
    the turns they count."""
    mode = line.mode
    if name == "mode":
        return f'<td class="mode">{mode_label(text, colours)}</td>'
    if name == "run":
        return f'<td class="mode"><a href="#{run.anchor}run">{escape(text)}</a></td>'
    if name == "target":
        return f'<td class="mode">{escape(text)}</td>'
    main, _, rest = text.partition(" (")
    small = f'<span class="ci">{escape(rest.removesuffix(")"))}</span>' if rest else ""
    if name.startswith("accuracy") and not line.regime.structure_only:
        figure = escape(main)
        if column is not None and mode.turns > mode.passed:
            href = filter_anchor(f"fail-c{column}", run.anchor)
            figure = f'<a href="#{href}" title="the turns it did not pass">{figure}</a>'
        return f'<td class="num acc">{figure}{small}</td>'
    if name == "failed turns" and mode.failed_turns:
        return f'<td class="num"><a href="#{run.anchor}failures">{escape(main)}</a>{small}</td>'
    return f'<td class="num">{escape(text)}</td>'


def _verdict_table(runs: Sequence[ReportRun], colours: dict[str, str]) -> str:
    per_run = [(run, verdict_lines(run.label, run.summary, run.regime)) for run in runs]
    header = verdict_header([line for _, lines in per_run for line in lines])
    head = "".join(f'<th class="{"" if h in ("run", "target", "mode") else "num"}">{h}</th>' for h in header)
    body = []
    for run, lines in per_run:
        for n, line in enumerate(lines):
            cells = verdict_cells(line, header)
            column = _column(run, line)
            html = []
            for name, text in zip(header, cells, strict=True):
                html.append(_verdict_cell(run, line, name, text, column, colours))
            start = ' class="run-start"' if n == 0 and len(runs) > 1 else ""
            body.append(f'<tr{start} data-run="{escape(run.label)}">' + "".join(html) + "</tr>")
    return (
        f'<div class="scroll"><table class="decision" id="verdict-table"><thead><tr>{head}</tr></thead>'
        f"<tbody>{''.join(body)}</tbody></table></div>"
        f'<p class="caption">{escape(VERDICT_CAPTION)} Follow an accuracy figure to the turns it did not '
        "pass, a failure count to its kinds and examples.</p>"
    )


def _statements(run: ReportRun, *, labeled: bool) -> str:
    meta = run.results.meta
    verdict = run_verdict(run.summary, run.results.scored_rows, run.regime, meta.model)
    kind = f'<span class="caption">{escape(run.regime.kind)}</span>'
    heading = f'<h3 class="run-verdict">{escape(run.label)} {kind}</h3>' if labeled else ""
    leads = "".join(f'<li class="lead">{escape(s)}</li>' for s in verdict.leads)
    details = "".join(f"<li>{escape(s)}</li>" for s in verdict.details)
    why = (
        f'<details class="why-figures" open><summary>The figures behind it ({len(verdict.details)}): each '
        f"per-turn difference with its paired test</summary><ul>{details}</ul></details>"
        if details
        else ""
    )
    return f'{heading}<ul class="verdicts" data-run="{escape(run.label)}">{leads}</ul>{why}'


def _modes(runs: Sequence[ReportRun], colours: dict[str, str]) -> str:
    modes = list(dict.fromkeys(m.mode for run in runs for _, m in run.summary.cells()))
    items = "".join(f"<dt>{mode_label(m, colours)}</dt><dd>{escape(mode_description(m))}</dd>" for m in modes)
    return f'<dl class="modes" id="modes">{items}</dl>'


def verdict_section(runs: Sequence[ReportRun], colours: dict[str, str]) -> str:
    """The verdict: table, sentences per run, the scorer check and what each mode is."""
    labeled = len(runs) > 1
    return (
        f'<section class="decision" id="verdict"><h2>{escape(verdict_title(runs))}</h2>'
        + _verdict_table(runs, colours)
        + "".join(_statements(run, labeled=labeled) for run in runs)
        + f'<p class="calibration" id="scorer-check">{escape(agreement_line())}</p>'
        + _modes(runs, colours)
        + "</section>"
    )


def _distributions(run: ReportRun, colours: dict[str, str], *, labeled: bool) -> str:
    simulated = run.regime.simulated
    clock = f"simulated ({run.regime.latency_profile})" if simulated else "measured"
    rows = run.results.scored_rows
    matrix = run.summary.matrix
    charts = []
    for name, title, read in (
        ("latency", "Latency per turn", latency(simulated)),
        ("first-answer", "Time to the first answer token", first_answer(simulated)),
    ):
        series = []
        for target, mode in run.summary.cells():
            values = [
                v
                for row in rows
                if row.mode == mode.mode and (target is None or row.target == target)
                if (v := read(row)) is not None
            ]
            label = f"{target} · {mode.mode}" if matrix else mode.mode
            series.append((label, colours.get(mode.mode, "#7f7f7f"), values))
        prefix = f"{run.label}: " if labeled else ""
        charts.append(
            distribution_chart(
                f"{prefix}{title}, {clock}",
                series,
                x_label=f"milliseconds per turn, {clock}",
                chart_id=f"{run.anchor}chart-{name}-distribution",
            )
        )
    return "".join(charts)


def distribution_section(runs: Sequence[ReportRun], colours: dict[str, str]) -> str:
    """Every run's latency and first-answer distributions, per mode."""
    labeled = len(runs) > 1
    return (
        '<section id="latency-distribution"><h2>Latency distributions</h2>'
        f'<p class="caption">{escape(DISTRIBUTION_CAPTION)} Simulated times are the latency profile\'s model '
        "time (plus harness time for latency); measured ones are wall time on the run's machine.</p>"
        + "".join(_distributions(run, colours, labeled=labeled) for run in runs)
        + "</section>"
    )
