"""The sections every ``report.html`` opens with, of one run or of several side by side: the regime, the
verdict (a table with a row per run, target and mode, then each run's sentences), the latency distributions,
results per category and the failures with one example of each kind, each figure linked to its turns."""

from __future__ import annotations

from collections.abc import Sequence
from html import escape

from benchmarks.report.calibration import agreement_line
from benchmarks.report.failure_groups import KIND_ORDER, FailureGroup, example_text, failure_groups
from benchmarks.report.html_parts import (
    category_anchor,
    cell_anchor,
    filter_anchor,
    heat,
    mode_label,
    scroll_table,
    slug,
    table,
    turn_columns,
)
from benchmarks.report.run_facts import mode_description
from benchmarks.report.runs import GridColumn, ReportRun, category_grid, first_line, regimes_rows
from benchmarks.report.splits import SPLITS_CAPTION, decision, split_table
from benchmarks.report.summary import CategorySummary
from benchmarks.report.svg import DISTRIBUTION_CAPTION, distribution_chart
from benchmarks.report.tables import percent_interval
from benchmarks.report.verdict import first_answer, latency
from benchmarks.report.verdict_table import (
    VERDICT_CAPTION,
    VerdictLine,
    verdict_cells,
    verdict_header,
    verdict_lines,
    verdict_title,
)


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
    return scroll_table(
        "regimes", head, ("<tr>" + "".join(f"<td>{escape(c)}</td>" for c in row) + "</tr>" for row in rows)
    )


def _column(run: ReportRun, line: VerdictLine) -> int | None:
    """The index of ``line``'s (target, mode) in the run's turn-by-turn table."""
    columns = enumerate(turn_columns(run.results, run.summary))
    return next((i for i, (t, m) in columns if m == line.mode.mode and line.target in (None, t)), None)


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
            column = _column(run, line)
            cells = zip(header, verdict_cells(line, header), strict=True)
            html = [_verdict_cell(run, line, name, text, column, colours) for name, text in cells]
            start = ' class="run-start"' if n == 0 and len(runs) > 1 else ""
            body.append(f'<tr{start} data-run="{escape(run.label)}">' + "".join(html) + "</tr>")
    return (
        scroll_table("decision", head, body, "verdict-table")
        + f'<p class="caption">{escape(VERDICT_CAPTION)} Follow an accuracy figure to the turns it did not '
        "pass, a failure count to its kinds and examples.</p>"
    )


def _statements(run: ReportRun, *, labeled: bool) -> str:
    meta = run.results.meta
    verdict = decision(run.results, run.summary, run.regime, meta.model)
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
    splits = split_table(run.results) if not run.regime.structure_only else None
    sets = ""
    if splits is not None:
        sets = table(*splits, "splits") + f'<p class="caption">{escape(SPLITS_CAPTION)}</p>'
    return f'{heading}<ul class="verdicts" data-run="{escape(run.label)}">{leads}</ul>{sets}{why}'


def _modes(runs: Sequence[ReportRun], colours: dict[str, str]) -> str:
    modes = dict.fromkeys(m.mode for run in runs for _, m in run.summary.cells())
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
    simulated, clock = run.regime.simulated, run.regime.clock
    prefix = f"{run.label}: " if labeled else ""
    return "".join(
        distribution_chart(
            f"{prefix}{title}, {clock}",
            [(label, colours.get(mode, "#7f7f7f"), values) for label, mode, values in run.per_cell(read)],
            x_label=f"time per turn, {clock}",
            chart_id=f"{run.anchor}chart-{name}-distribution",
        )
        for name, title, read in (
            ("latency", "Latency per turn", latency(simulated)),
            ("first-answer", "Time to the first answer token", first_answer(simulated)),
        )
    )


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


def _cell(run: ReportRun, found: CategorySummary | None) -> str:
    if found is None:
        return '<td class="num">–</td>'
    link = f'href="#{category_anchor(found.category, run.anchor)}"'
    calls = f"{found.calls_mean:.1f} calls/turn"
    if run.regime.structure_only:
        return f'<td class="num"><a {link}>{calls}</a><span class="ci">{found.turns} turns</span></td>'
    interval = percent_interval(found.accuracy_interval, 0)
    return (
        f'<td class="num"{heat(found.accuracy)}><a {link}>{found.accuracy:.0%}</a>'
        f'<span class="ci">[{escape(interval)}] · {found.turns} turns · {calls}</span></td>'
    )


def categories_section(runs: Sequence[ReportRun], colours: dict[str, str]) -> str:
    """The section: a caption, then the table."""
    labeled = len(runs) > 1
    columns, categories, found = category_grid(runs)

    def name(column: GridColumn) -> str:
        run, target, mode = column
        lead = " · ".join(part for part in (run.label if labeled else "", target or "") if part)
        return (escape(lead) + "<br>" if lead else "") + mode_label(mode, colours)

    head = "<th>category</th>" + "".join(f'<th class="num">{name(c)}</th>' for c in columns)
    body = [
        f"<tr><td>{escape(category)}</td>"
        + "".join(_cell(run, found.get((i, category))) for i, (run, _, _) in enumerate(columns))
        + "</tr>"
        for category in categories
    ]
    return (
        '<h2 id="categories">Results per category</h2>'
        '<p class="caption">Accuracy per scenario category (share of turns passed, Wilson 95% interval; red '
        "is low, green is high) and model calls per turn; a structure run (offline stand-in) shows calls "
        "only. Follow a figure to the category's turns.</p>" + scroll_table("categories", head, body)
    )


LINKS_SHOWN = 30
"""Turn links listed per kind (the rest are counted)."""

FAILURES_CAPTION = (
    "Turns not passed, per kind: a failure kind of the contract (docs/failures.md) or an answer, operation "
    "or state that failed the scorer's checks. One example of each, then links to every turn of the kind "
    "(repetition 1). A failed turn never passes."
)


def _group_anchor(run: ReportRun, group: FailureGroup) -> str:
    return f"{run.anchor}failure-{slug(group.target)}-{slug(group.mode)}-{slug(group.kind)}"


def _table(run: ReportRun, groups: Sequence[FailureGroup], colours: dict[str, str]) -> str:
    matrix = run.summary.matrix
    columns = list(dict.fromkeys((g.target, g.mode) for g in groups))
    kinds = sorted({g.kind for g in groups}, key=KIND_ORDER.index)
    by_key = {(g.target, g.mode, g.kind): g for g in groups}

    def name(column: tuple[str, str]) -> str:
        return (escape(column[0]) + " · " if matrix else "") + mode_label(column[1], colours)

    head = "<th>kind</th>" + "".join(f'<th class="num">{name(c)}</th>' for c in columns)
    body = []
    for kind in kinds:
        cells = []
        for target, mode in columns:
            group = by_key.get((target, mode, kind))
            cells.append(
                f'<td class="num"><a href="#{_group_anchor(run, group)}">{len(group.turns)}</a></td>'
                if group is not None
                else '<td class="num">0</td>'
            )
        body.append(f"<tr><td>{escape(kind)}</td>{''.join(cells)}</tr>")
    return scroll_table("failures", head, body)


def _examples(run: ReportRun, groups: Sequence[FailureGroup], colours: dict[str, str]) -> str:
    columns = turn_columns(run.results, run.summary)
    matrix = run.summary.matrix
    items = []
    for group in groups:
        index = columns.index((group.target, group.mode)) if (group.target, group.mode) in columns else None
        shown = [row for row in group.turns if row.repetition == 1]
        links = (
            [
                f'<a href="#{cell_anchor(r.scenario, r.turn, index, run.anchor)}">{escape(r.scenario)} · '
                f"{r.turn}</a>"
                for r in shown[:LINKS_SHOWN]
            ]
            if index is not None
            else []
        )
        more = len(group.turns) - len(links)
        rest = f" and {more} more" if links and more else ""
        who = (escape(group.target) + " · " if matrix else "") + mode_label(group.mode, colours)
        items.append(
            f'<li id="{_group_anchor(run, group)}"><span class="kind">{who} · {escape(group.kind)}</span> '
            f"({len(group.turns)} turn{'s' if len(group.turns) != 1 else ''}). Example: "
            f"{escape(example_text(group.example))}"
            + (f"<br>Turns: {' '.join(links)}{rest}" if links else "")
            + "</li>"
        )
    return f'<ul class="failure-examples">{"".join(items)}</ul>'


def failures_section(runs: Sequence[ReportRun], colours: dict[str, str]) -> str:
    """The section: per run (under its own heading when there are several) the table and the examples."""
    labeled = len(runs) > 1
    parts = [
        '<section id="failures-section"><h2 id="failures">Failures, with one example of each kind</h2>'
        f'<p class="caption">{escape(FAILURES_CAPTION)}</p>'
    ]
    for run in runs:
        groups = failure_groups(run.results.scored_rows)
        anchor = f' id="{run.anchor}failures"' if labeled else ""
        if labeled:
            parts.append(f'<h3 class="target"{anchor}>{escape(run.label)}</h3>')
        if not groups:
            parts.append('<p class="caption">Every turn passed.</p>')
            continue
        parts.append(_table(run, groups, colours) + _examples(run, groups, colours))
    parts.append("</section>")
    return "".join(parts)


def opening_sections(runs: Sequence[ReportRun], colours: dict[str, str]) -> list[str]:
    """The sections a page opens with: the verdict, the distributions, results per category, the failures."""
    return [
        verdict_section(runs, colours),
        distribution_section(runs, colours),
        categories_section(runs, colours),
        failures_section(runs, colours),
    ]
