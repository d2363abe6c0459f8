"""The failures of ``report.html``: per run, the turns it did not pass per kind and mode, then one example of
each kind with a link to it and to every other turn of that kind in the turn-by-turn table."""

from __future__ import annotations

from collections.abc import Sequence
from html import escape

from benchmarks.report.failure_examples import KIND_ORDER, FailureGroup, example_text, failure_groups
from benchmarks.report.html_parts import mode_label
from benchmarks.report.html_turns import cell_anchor, slug, turn_columns
from benchmarks.report.runs import ReportRun

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
    return (
        f'<div class="scroll"><table class="failures"><thead><tr>{head}</tr></thead>'
        f"<tbody>{''.join(body)}</tbody></table></div>"
    )


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
