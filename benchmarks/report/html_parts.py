"""The pieces every part of ``report.html`` is made of: the page's opening (with its inlined style sheet), a
mode's swatch and label, a figures table, a heat-tinted cell and a target's heading."""

from __future__ import annotations

from collections.abc import Callable
from html import escape
from importlib.resources import files

from benchmarks.targets import BenchTarget

FILTERED_COLUMNS = 12
"""Turn-table columns whose "failed in" filter has a rule (more (target, mode) columns than this are shown
unfiltered)."""

STYLE = (
    "\n"
    + files("benchmarks.report").joinpath("report.css").read_text(encoding="utf-8")
    + "".join(
        f".filter-anchor.fail-c{i}:target~table.turns tr.ok-c{i}{{display:none}}"
        for i in range(FILTERED_COLUMNS)
    )
)
"""The page's style sheet (``report.css`` and the turn filters' rules, one per column), inlined so the page
stands alone."""

PAGE_CLOSE = "</body></html>"


def page_open(title: str) -> str:
    """Everything up to the opening ``<body>``: no script, no external resource."""
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        f"<title>{escape(title)}</title>\n<style>{STYLE}</style></head><body>"
    )


def swatch(colour: str) -> str:
    return f'<span class="swatch" style="background:{colour}"></span>'


def mode_label(mode: str, colours: dict[str, str]) -> str:
    return swatch(colours.get(mode, "#999")) + escape(mode)


def table(
    header: list[str],
    rows: list[list[str]],
    css_class: str,
    *,
    colours: dict[str, str] | None = None,
    cell_style: Callable[[int, int], str] | None = None,
    labels: int | None = None,
) -> str:
    """A table whose first column names a row (a mode gets its swatch) and whose other columns are figures.

    ``labels`` is how many leading columns name the row (default: 2 when the header starts with ``target``,
    whose rows the next column names, else 1)."""
    if labels is None:
        labels = 2 if header[0] == "target" and len(header) > 2 else 1
    head = "".join(
        f'<th class="{"num" if i >= labels else ""}">{escape(h)}</th>' for i, h in enumerate(header)
    )
    body = []
    for r, row in enumerate(rows):
        cells = []
        for i, cell in enumerate(row):
            if i < labels:
                text = mode_label(cell, colours) if colours and cell in colours else escape(cell)
                cells.append(f'<td class="mode">{text}</td>')
            else:
                style = cell_style(r, i) if cell_style else ""
                cells.append(f'<td class="num"{style}>{escape(cell)}</td>')
        body.append("<tr>" + "".join(cells) + "</tr>")
    return (
        f'<div class="scroll"><table class="{css_class}"><thead><tr>{head}</tr></thead>'
        f"<tbody>{''.join(body)}</tbody></table></div>"
    )


def heat(accuracy: float) -> str:
    """A pale red-to-green background for an accuracy in [0, 1]."""
    return f' style="background:hsl({accuracy * 120:.0f} 65% 90%)"'


def target_heading(target: BenchTarget, anchor: str | None = None) -> str:
    """``Target a  offline offline-sales`` as an ``h3``."""
    ident = f' id="{escape(anchor)}"' if anchor else ""
    return (
        f'<h3 class="target"{ident}>Target {escape(target.name)} '
        f'<span class="caption">{escape(target.label)}</span></h3>'
    )
