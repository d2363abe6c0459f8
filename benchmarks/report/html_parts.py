"""The pieces ``report.html`` is made of: the page's opening (with its inlined style sheet), a mode's label,
a figures table, and the turn-by-turn table (repetition 1, every turn in a row and every (target, mode) in a
column, failures in red with the reason, the plan or tool calls folded into ``<details>``)."""

from __future__ import annotations

import json
import re
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from html import escape
from importlib.resources import files
from typing import Any

from benchmarks.report.summary import Summary
from benchmarks.report.svg import grouped
from benchmarks.results import RunResults, TurnRow
from benchmarks.targets import DEFAULT_TARGET, BenchTarget
from benchmarks.transcripts import CallTranscript, Said, TurnKey

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


def mode_label(mode: str, colours: dict[str, str]) -> str:
    return f'<span class="swatch" style="background:{colours.get(mode, "#999")}"></span>' + escape(mode)


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
    return scroll_table(css_class, head, body)


def scroll_table(css_class: str, head: str, rows: Iterable[str], ident: str = "") -> str:
    """A table that scrolls sideways when too wide: ``head`` is the header row's cells, ``rows`` each row in
    full; ``ident`` its id."""
    ident = f' id="{ident}"' if ident else ""
    return (
        f'<div class="scroll"><table class="{css_class}"{ident}><thead><tr>{head}</tr></thead>'
        f"<tbody>{''.join(rows)}</tbody></table></div>"
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


def _call_line(name: str, params: object) -> str:
    return f"{name}({json.dumps(params, ensure_ascii=False)})"


def _plan_lines(plan: dict[str, Any]) -> list[str]:
    """A plan one line per operation (``op1 · ventas_anuales({"anio": 2025})``), then its other keys."""
    lines = []
    operations = plan.get("operaciones")
    for i, op in enumerate(operations if isinstance(operations, list) else []):
        if isinstance(op, dict):
            ident = op.get("id") or f"op{i + 1}"
            lines.append(f"{ident} · {_call_line(str(op.get('funcion')), op.get('parametros', {}))}")
        else:
            lines.append(json.dumps(op, ensure_ascii=False))
    lines += [
        f"{key}: {json.dumps(value, ensure_ascii=False)}"
        for key, value in plan.items()
        if key != "operaciones" and value not in (None, "", [], {})
    ]
    return lines


def _calls_block(row: TurnRow) -> str:
    """The plan (planner) or the tool calls (tool calling), folded; refused or failed calls say why."""
    if row.plan is not None:
        label, lines = "plan", _plan_lines(row.plan)
        refused = [op for op in row.operations if op.error]
        lines += [f"✗ {_call_line(op.funcion, op.parametros)} → {op.error}" for op in refused]
    else:
        label = "tool calls"
        lines = [
            _call_line(op.funcion, op.parametros) + (f" → {op.error}" if op.error else "")
            for op in row.operations
        ]
    executed = ", ".join(op.funcion for op in row.operations) or "no operations"
    return (
        f"<details><summary>{escape(label)}: {escape(executed)}</summary>"
        f"<pre>{escape(chr(10).join(lines) or '(none)')}</pre></details>"
    )


SENT_SHOWN_CHARS = 1_500
"""Characters shown of the last message a call was sent (the rest of the prompt is the same every turn)."""
WROTE_SHOWN_CHARS = 4_000
"""Characters shown of what a call wrote, or of its error."""


def _clipped(text: str, limit: int) -> str:
    return text if len(text) <= limit else f"{text[:limit]}… ({len(text) - limit:,} more characters)"


def _said(said: Said) -> str:
    calls = "".join(f"\n→ {_call_line(str(c.get('name')), c.get('args', {}))}" for c in said.tool_calls)
    return (said.text or "") + calls


def _transcript_block(calls: Sequence[CallTranscript]) -> str:
    """A failed turn's model calls, folded: per call the last message it was sent and what it wrote (or its
    error), as ``transcripts.jsonl`` recorded them."""
    parts = []
    for call in calls:
        last = call.messages[-1] if call.messages else None
        sent = f"{last.role}: {_said(last)}" if last is not None else "(no message)"
        if call.error is not None:
            wrote = f"error: {call.error}"
        elif call.output is not None:
            stop = f" (stopped: {call.output.finish_reason})" if call.output.finish_reason else ""
            wrote = f"{_said(call.output) or '(nothing)'}{stop}"
        else:
            wrote = "(no output recorded)"
        parts.append(
            f"<p>call {call.call + 1}, sent {len(call.messages)} messages; the last:</p>"
            f"<pre>{escape(_clipped(sent, SENT_SHOWN_CHARS))}</pre>"
            f"<p>wrote:</p><pre>{escape(_clipped(wrote, WROTE_SHOWN_CHARS))}</pre>"
        )
    cut = " (some texts were cut when recorded)" if any(call.cut for call in calls) else ""
    return (
        f'<details class="transcript"><summary>model calls: {len(calls)}{escape(cut)}</summary>'
        + "".join(parts)
        + "</details>"
    )


def _turn_cell(row: TurnRow | None, ident: str, calls: Sequence[CallTranscript] = ()) -> str:
    if row is None:
        return "<td>–</td>"
    verdict = "✓" if row.passed else "✗"
    why = "; ".join(row.score.details or [])
    errors = "; ".join(row.errors)
    cost = (
        f"{row.model_calls} call{'s' if row.model_calls != 1 else ''} · {grouped(row.input_tokens)} in / "
        f"{grouped(row.output_tokens)} out tokens · {row.harness_ms:.1f} ms harness"
    )
    notes = ""
    if row.failure is not None:
        notes += f'<div class="why">failure: {escape(row.failure)}</div>'
    if not row.passed and (why or errors):
        notes += f'<div class="why">{escape(why or errors)}</div>'
    if errors and why:
        notes += f'<div class="why">{escape(errors)}</div>'
    return (
        f'<td id="{ident}" class="answer {"pass" if row.passed else "fail"}" data-mode="{escape(row.mode)}">'
        f'<span class="verdict" title="{"passed" if row.passed else "failed"}">{verdict}</span>'
        f"{escape(row.answer or '(no answer)')}{notes}"
        f'<div class="cost">{escape(cost)}</div>'
        + _calls_block(row)
        + (_transcript_block(calls) if calls else "")
        + "</td>"
    )


def slug(text: str) -> str:
    """``text`` safe inside an HTML id."""
    return re.sub(r"[^A-Za-z0-9_-]+", "-", text)


def turn_anchor(scenario: str, turn: int, prefix: str = "") -> str:
    """The id of a turn's row in the turn-by-turn table."""
    return f"{prefix}turn-{slug(scenario)}-{turn}"


def cell_anchor(scenario: str, turn: int, column: int, prefix: str = "") -> str:
    """The id of one (target, mode) cell of a turn's row: column ``column`` of the table."""
    return f"{turn_anchor(scenario, turn, prefix)}-c{column}"


def category_anchor(category: str, prefix: str = "") -> str:
    """The id of the first scenario of ``category`` in the turn-by-turn table."""
    return f"{prefix}category-{slug(category)}"


def filter_anchor(name: str, prefix: str = "") -> str:
    """The id that, as the page's target, filters the turn-by-turn table: ``failed`` (turns some column
    failed), ``disagree`` (turns the columns disagree on) or ``fail-c<i>`` (turns column ``i`` failed)."""
    return f"{prefix}turns-{name}"


Column = tuple[str, str]
"""A turn-by-turn column: (target, mode)."""


def turn_columns(results: RunResults, summary: Summary) -> list[Column]:
    """The columns of a run's turn-by-turn table: every (target, mode), in the summary's order."""
    modes = list(dict.fromkeys(m.mode for _, m in summary.cells()))
    if summary.matrix:
        return [(t.target.name, mode) for t in summary.targets for mode in modes]
    targets = list(dict.fromkeys(row.target for row in results.scored_rows)) or [DEFAULT_TARGET]
    return [(targets[0], mode) for mode in modes]


def failed_turn_keys(results: RunResults) -> set[TurnKey]:
    """The turns of repetition 1 that did not pass: those whose model calls the turn table shows."""
    return {
        (row.target, row.mode, row.scenario, row.turn, row.repetition)
        for row in results.scored_rows
        if row.repetition == 1 and not row.passed
    }


def turn_table(
    results: RunResults,
    columns: list[Column],
    colours: dict[str, str],
    prefix: str = "",
    transcripts: Mapping[TurnKey, Sequence[CallTranscript]] | None = None,
) -> str:
    """Repetition 1, every turn in a row and every (target, mode) in a column (the target named only in a
    matrix). ``prefix`` starts every id, so several runs' tables can share a page. A failed turn's cell
    folds its model calls when ``transcripts`` has them (:func:`failed_turn_keys`).

    Links to :func:`filter_anchor` ids show only some rows (pure CSS, ``:target``): the turns some column
    failed, the turns the columns disagree on, or the turns one column failed."""
    matrix = len({target for target, _ in columns}) > 1
    cells: dict[tuple[str, int], dict[Column, TurnRow]] = defaultdict(dict)
    users: dict[tuple[str, int], str] = {}
    categories: dict[str, str] = {}
    scenario_order: dict[str, int] = {}
    for row in results.scored_rows:
        if row.repetition != 1:
            continue
        scenario_order.setdefault(row.scenario, len(scenario_order))
        categories.setdefault(row.scenario, row.category)
        users.setdefault((row.scenario, row.turn), row.user)
        cells[(row.scenario, row.turn)][(row.target, row.mode)] = row

    def name(column: Column) -> str:
        return f"{column[0]} · {column[1]}" if matrix else column[1]

    order = sorted(users, key=lambda key: (scenario_order[key[0]], key[1]))
    failing = [key for key in order if any(not r.passed for r in cells[key].values())]
    links = []
    for s, t in failing:
        failed = [name(c) for c in columns if (r := cells[(s, t)].get(c)) is not None and not r.passed]
        which = "" if len(failed) == len(cells[(s, t)]) else " (" + ", ".join(failed) + ")"
        links.append(
            f'<a href="#{turn_anchor(s, t, prefix)}" title="failed in {escape(", ".join(failed))}">'
            f"{escape(s)} · {t}{escape(which)}</a>"
        )
    side = "targets and modes" if matrix else "modes"
    intro = (
        f'<p class="caption">Repetition 1 of {max(1, results.meta.repeat)}, {side} side by side: ✓ passed, '
        "✗ failed (red, with the reason). Open a cell's ▸ line for the plan or the tool calls.</p>"
        f'<p class="caption failing" id="{prefix}failing-turns"><b>{len(failing)} of {len(order)} turns</b> '
        f"failed in at least one {'target and mode' if matrix else 'mode'}{':' if failing else '.'} "
        f"{''.join(links)}</p>"
    )
    cols = '<col class="turn"><col class="user">' + "".join("<col>" for _ in columns)
    head = "<th>turn</th><th>question</th>" + "".join(
        f"<th>{escape(target + ' · ') if matrix else ''}{mode_label(mode, colours)}</th>"
        for target, mode in columns
    )
    body = []
    seen: set[str] = set()  # categories whose first scenario carries their anchor
    for i, (scenario, turn) in enumerate(order):
        if i == 0 or order[i - 1][0] != scenario:
            category = categories[scenario]
            ident = "" if category in seen else f' id="{category_anchor(category, prefix)}"'
            seen.add(category)
            body.append(
                f'<tr class="scenario"{ident}><th colspan="{2 + len(columns)}">{escape(scenario)}'
                f'<span class="category">{escape(category)}</span></th></tr>'
            )
        row_cells = cells[(scenario, turn)]
        body.append(
            f'<tr id="{turn_anchor(scenario, turn, prefix)}" class="{_row_classes(row_cells, columns)}">'
            f'<td class="num">{turn}</td><td class="user"><span class="scn">{escape(scenario)} · </span>'
            f"{escape(users[(scenario, turn)])}</td>"
            + "".join(
                _turn_cell(
                    row_cells.get(column),
                    cell_anchor(scenario, turn, i, prefix),
                    _calls_of(row_cells.get(column), transcripts),
                )
                for i, column in enumerate(columns)
            )
            + "</tr>"
        )
    return (
        intro
        + _filters(columns, prefix, name)
        + '<div class="turn-view">'
        + "".join(
            f'<span class="filter-anchor {kind}" id="{filter_anchor(kind, prefix)}"></span>'
            for kind in ("failed", "disagree", *(f"fail-c{i}" for i in range(len(columns))))
        )
        + f'<table class="turns"><colgroup>{cols}</colgroup><thead><tr>{head}</tr></thead>'
        f"<tbody>{''.join(body)}</tbody></table></div>"
    )


def _calls_of(
    row: TurnRow | None, transcripts: Mapping[TurnKey, Sequence[CallTranscript]] | None
) -> Sequence[CallTranscript]:
    if row is None or row.passed or not transcripts:
        return ()
    return transcripts.get((row.target, row.mode, row.scenario, row.turn, row.repetition), ())


def _row_classes(row_cells: dict[Column, TurnRow], columns: list[Column]) -> str:
    """``all-pass`` when no column failed, ``agree`` when every column has the same verdict, ``ok-c<i>``
    for each column that did not fail: what the filters hide."""
    verdicts = [row.passed for row in row_cells.values()]
    classes = ["all-pass"] if all(verdicts) else []
    classes += ["agree"] if len(set(verdicts)) <= 1 else []
    classes += [
        f"ok-c{i}" for i, column in enumerate(columns) if (r := row_cells.get(column)) is None or r.passed
    ]
    return " ".join(classes)


def _filters(columns: list[Column], prefix: str, name: Callable[[Column], str]) -> str:
    """The links that filter the table (no script: each targets a :func:`filter_anchor`)."""
    links = [
        (f"{prefix}turn-by-turn", "all turns"),
        (filter_anchor("failed", prefix), "turns some column failed"),
        (filter_anchor("disagree", prefix), "turns the columns disagree on"),
        *((filter_anchor(f"fail-c{i}", prefix), f"failed in {name(c)}") for i, c in enumerate(columns)),
    ]
    return (
        '<p class="filters">Show: '
        + " · ".join(f'<a href="#{ident}">{escape(text)}</a>' for ident, text in links)
        + "</p>"
    )
