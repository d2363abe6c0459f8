"""Results per scenario category in ``report.html``: one row per category, one column per (run, target,
mode), each cell linking to that category's turns in its run's turn-by-turn table.

A real-model cell gives accuracy (tinted red to green) with its Wilson 95% interval; a structure run's cell
gives model calls per turn only, since the stand-in's pass rate is not a model's accuracy."""

from __future__ import annotations

from collections.abc import Sequence
from html import escape

from benchmarks.report.html_parts import heat, mode_label
from benchmarks.report.html_turns import category_anchor
from benchmarks.report.runs import ReportRun
from benchmarks.report.summary import CategorySummary
from benchmarks.report.tables import percent_interval

Cell = tuple[ReportRun, str | None, str]
"""A column of the table: (run, target name or ``None``, mode)."""


def _categories(run: ReportRun, target: str | None) -> list[CategorySummary]:
    if target is None:
        return run.summary.categories
    entry = next(t for t in run.summary.targets if t.target.name == target)
    return entry.summary.categories


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
    columns: list[Cell] = [(run, target, m.mode) for run in runs for target, m in run.summary.cells()]
    found = {
        (run.label, target, c.category, c.mode): c
        for run in runs
        for target in dict.fromkeys(t for t, _ in run.summary.cells())
        for c in _categories(run, target)
    }
    categories = sorted({key[2] for key in found})

    def name(column: Cell) -> str:
        run, target, mode = column
        lead = " · ".join(part for part in (run.label if labeled else "", target or "") if part)
        return (escape(lead) + "<br>" if lead else "") + mode_label(mode, colours)

    head = "<th>category</th>" + "".join(f'<th class="num">{name(c)}</th>' for c in columns)
    body = [
        f"<tr><td>{escape(category)}</td>"
        + "".join(_cell(run, found.get((run.label, target, category, mode))) for run, target, mode in columns)
        + "</tr>"
        for category in categories
    ]
    return (
        '<h2 id="categories">Results per category</h2>'
        '<p class="caption">Accuracy per scenario category (share of turns passed, Wilson 95% interval; red '
        "is low, green is high) and model calls per turn; a structure run (offline stand-in) shows calls "
        "only. Follow a figure to the category's turns.</p>"
        f'<div class="scroll"><table class="categories"><thead><tr>{head}</tr></thead>'
        f"<tbody>{''.join(body)}</tbody></table></div>"
    )
