"""What ``report.html``'s templates lay out, as records: a table (:class:`Grid` of :class:`Cell`), the ids
that link a figure to its turns, and the turn-by-turn table (repetition 1, every turn in a row and every
(target, mode) in a column, failures with the reason, the plan or tool calls and a failed turn's model calls
folded). Python builds these records only; ``templates/*.html.j2`` writes every tag."""

from __future__ import annotations

import json
import re
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from benchmarks.report.charts import grouped
from benchmarks.report.summary import Summary
from benchmarks.report.tables import Table
from benchmarks.results import RunResults, TurnRow
from benchmarks.targets import DEFAULT_TARGET
from benchmarks.transcripts import CallTranscript, Said, TurnKey

FILTERED_COLUMNS = 12
"""Turn-table columns whose "failed in" filter has a style rule (more (target, mode) columns than this are
shown unfiltered)."""


@dataclass(frozen=True)
class Cell:
    """One cell of a table: its text and what the template adds around it."""

    text: str
    figure: bool = True
    """A right-aligned figure; else a name of the row (or a plain header)."""
    swatch: str | None = None
    """The colour of the mode the text names, shown as a swatch before it."""
    lead: str = ""
    """A line above the text (a column's run and target)."""
    href: str = ""
    """The id on the page the text links to."""
    title: str = ""
    """The link's tooltip."""
    note: str = ""
    """A small line under the text (an interval, a count)."""
    tint: float | None = None
    """An accuracy in [0, 1] that tints the background from red to green."""
    strong: bool = False
    """The figure a row is about (the verdict's accuracy)."""


@dataclass(frozen=True)
class Row:
    cells: list[Cell]
    css: str = ""
    run: str | None = None
    """The run's label, as ``data-run``."""


@dataclass(frozen=True)
class Grid:
    """A table that scrolls sideways when too wide."""

    css: str
    head: list[Cell]
    rows: list[Row]
    ident: str = ""


def plain(
    table: Table,
    css: str,
    *,
    colours: Mapping[str, str] | None = None,
    labels: int | None = None,
    tints: Mapping[tuple[str, str], float] | None = None,
) -> Grid:
    """A table of :mod:`benchmarks.report.tables` whose leading ``labels`` columns name a row (a mode gets its
    swatch) and whose other columns are figures. ``labels`` defaults to 2 when the header starts with
    ``target`` (the next column names the row too), else 1; ``tints`` maps (first cell, header) to an
    accuracy that tints that cell."""
    header, rows = table
    if labels is None:
        labels = 2 if header[0] == "target" and len(header) > 2 else 1
    colours = colours or {}
    tints = tints or {}

    def cell(text: str, i: int, row: list[str]) -> Cell:
        if i < labels:
            return Cell(text, figure=False, swatch=colours.get(text))
        return Cell(text, tint=tints.get((row[0], header[i])))

    head = [Cell(name, figure=i >= labels) for i, name in enumerate(header)]
    return Grid(css, head, [Row([cell(text, i, row) for i, text in enumerate(row)]) for row in rows])


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


SENT_SHOWN_CHARS = 1_500
"""Characters shown of the last message a call was sent (the rest of the prompt is the same every turn)."""
WROTE_SHOWN_CHARS = 4_000
"""Characters shown of what a call wrote, or of its error."""


@dataclass(frozen=True)
class CallView:
    """One model call of a failed turn: the last message it was sent and what it wrote (or its error)."""

    number: int
    messages: int
    sent: str
    wrote: str


@dataclass(frozen=True)
class AnswerCell:
    """One (target, mode) cell of a turn's row."""

    ident: str
    mode: str
    passed: bool
    answer: str
    notes: list[str]
    """Why the turn failed: its failure kind, the scorer's reasons, its errors."""
    cost: str
    calls_label: str
    """``plan`` or ``tool calls``."""
    executed: str
    """The operations run, by name."""
    calls: str
    """The plan one operation per line, or the tool calls."""
    transcript: list[CallView] = field(default_factory=list)
    cut: bool = False
    """Some recorded text of the transcript was cut."""


@dataclass(frozen=True)
class TurnLine:
    ident: str
    classes: str
    """What the filters hide: ``all-pass``, ``agree``, ``ok-c<i>``."""
    turn: int
    scenario: str
    user: str
    cells: list[AnswerCell | None]


@dataclass(frozen=True)
class ScenarioBlock:
    scenario: str
    category: str
    ident: str
    """The category's anchor on its first scenario, else empty."""
    turns: list[TurnLine]


@dataclass(frozen=True)
class Link:
    href: str
    text: str
    title: str = ""


@dataclass(frozen=True)
class TurnTable:
    """Repetition 1 of a run, every turn in a row and every (target, mode) in a column."""

    prefix: str
    repeat: int
    matrix: bool
    columns: list[tuple[str, str, str]]
    """(target, mode, colour) per column."""
    failing: list[Link]
    turns: int
    filters: list[Link]
    anchors: list[tuple[str, str]]
    """(kind, id) of each filter's anchor."""
    scenarios: list[ScenarioBlock]


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


def _calls_text(row: TurnRow) -> tuple[str, str]:
    """The label and the text of the plan (planner) or the tool calls (tool calling); refused or failed
    calls say why."""
    if row.plan is not None:
        lines = _plan_lines(row.plan)
        lines += [
            f"✗ {_call_line(op.funcion, op.parametros)} → {op.error}" for op in row.operations if op.error
        ]
        return "plan", "\n".join(lines) or "(none)"
    lines = [
        _call_line(op.funcion, op.parametros) + (f" → {op.error}" if op.error else "")
        for op in row.operations
    ]
    return "tool calls", "\n".join(lines) or "(none)"


def _clipped(text: str, limit: int) -> str:
    return text if len(text) <= limit else f"{text[:limit]}… ({len(text) - limit:,} more characters)"


def _said(said: Said) -> str:
    calls = "".join(f"\n→ {_call_line(str(c.get('name')), c.get('args', {}))}" for c in said.tool_calls)
    return (said.text or "") + calls


def _call_view(call: CallTranscript) -> CallView:
    last = call.messages[-1] if call.messages else None
    sent = f"{last.role}: {_said(last)}" if last is not None else "(no message)"
    if call.error is not None:
        wrote = f"error: {call.error}"
    elif call.output is not None:
        stop = f" (stopped: {call.output.finish_reason})" if call.output.finish_reason else ""
        wrote = f"{_said(call.output) or '(nothing)'}{stop}"
    else:
        wrote = "(no output recorded)"
    return CallView(
        call.call + 1,
        len(call.messages),
        _clipped(sent, SENT_SHOWN_CHARS),
        _clipped(wrote, WROTE_SHOWN_CHARS),
    )


def _answer_cell(row: TurnRow, ident: str, calls: Sequence[CallTranscript]) -> AnswerCell:
    why = "; ".join(row.score.details or [])
    errors = "; ".join(row.errors)
    notes = [f"failure: {row.failure}"] if row.failure is not None else []
    if not row.passed and (why or errors):
        notes.append(why or errors)
    if errors and why:
        notes.append(errors)
    cost = (
        f"{row.model_calls} call{'s' if row.model_calls != 1 else ''} · {grouped(row.input_tokens)} in / "
        f"{grouped(row.output_tokens)} out tokens · {row.harness_ms:.1f} ms harness"
    )
    label, text = _calls_text(row)
    return AnswerCell(
        ident=ident,
        mode=row.mode,
        passed=row.passed,
        answer=row.answer or "(no answer)",
        notes=notes,
        cost=cost,
        calls_label=label,
        executed=", ".join(op.funcion for op in row.operations) or "no operations",
        calls=text,
        transcript=[_call_view(call) for call in calls],
        cut=any(call.cut for call in calls),
    )


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


def turn_table(
    results: RunResults,
    columns: list[Column],
    colours: Mapping[str, str],
    prefix: str = "",
    transcripts: Mapping[TurnKey, Sequence[CallTranscript]] | None = None,
) -> TurnTable:
    """Repetition 1, every turn in a row and every (target, mode) in a column (the target named only in a
    matrix). ``prefix`` starts every id, so several runs' tables can share a page. A failed turn's cell
    folds its model calls when ``transcripts`` has them (:func:`failed_turn_keys`).

    Links to :func:`filter_anchor` ids show only some rows (pure CSS, ``:target``): the turns some column
    failed, the turns the columns disagree on, or the turns one column failed."""
    matrix = len({target for target, _ in columns}) > 1
    cells: dict[tuple[str, int], dict[Column, TurnRow]] = defaultdict(dict)
    users: dict[tuple[str, int], str] = {}
    categories: dict[str, str] = {}
    for row in results.scored_rows:
        if row.repetition == 1:
            categories.setdefault(row.scenario, row.category)
            users.setdefault((row.scenario, row.turn), row.user)
            cells[(row.scenario, row.turn)][(row.target, row.mode)] = row
    scenario_order = {scenario: i for i, scenario in enumerate(categories)}

    def name(column: Column) -> str:
        return f"{column[0]} · {column[1]}" if matrix else column[1]

    order = sorted(users, key=lambda key: (scenario_order[key[0]], key[1]))
    failing = []
    for s, t in order:
        failed = [name(c) for c in columns if (r := cells[(s, t)].get(c)) is not None and not r.passed]
        if failed:
            which = "" if len(failed) == len(cells[(s, t)]) else " (" + ", ".join(failed) + ")"
            failing.append(
                Link(turn_anchor(s, t, prefix), f"{s} · {t}{which}", f"failed in {', '.join(failed)}")
            )

    def calls_of(row: TurnRow) -> Sequence[CallTranscript]:
        if row.passed or not transcripts:
            return ()
        return transcripts.get((row.target, row.mode, row.scenario, row.turn, row.repetition), ())

    blocks: list[ScenarioBlock] = []
    seen: set[str] = set()  # categories whose first scenario carries their anchor
    for scenario, turn in order:
        if not blocks or blocks[-1].scenario != scenario:
            category = categories[scenario]
            ident = "" if category in seen else category_anchor(category, prefix)
            seen.add(category)
            blocks.append(ScenarioBlock(scenario, category, ident, []))
        row_cells = cells[(scenario, turn)]
        line = [
            None
            if (r := row_cells.get(c)) is None
            else _answer_cell(r, cell_anchor(scenario, turn, i, prefix), calls_of(r))
            for i, c in enumerate(columns)
        ]
        blocks[-1].turns.append(
            TurnLine(
                turn_anchor(scenario, turn, prefix),
                _row_classes(row_cells, columns),
                turn,
                scenario,
                users[(scenario, turn)],
                line,
            )
        )
    kinds = ["failed", "disagree", *(f"fail-c{i}" for i in range(len(columns)))]
    filters = [
        Link(f"{prefix}turn-by-turn", "all turns"),
        Link(filter_anchor("failed", prefix), "turns some column failed"),
        Link(filter_anchor("disagree", prefix), "turns the columns disagree on"),
        *(Link(filter_anchor(f"fail-c{i}", prefix), f"failed in {name(c)}") for i, c in enumerate(columns)),
    ]
    return TurnTable(
        prefix=prefix,
        repeat=max(1, results.meta.repeat),
        matrix=matrix,
        columns=[(target, mode, colours.get(mode, "#999")) for target, mode in columns],
        failing=failing,
        turns=len(order),
        filters=filters,
        anchors=[(kind, filter_anchor(kind, prefix)) for kind in kinds],
        scenarios=blocks,
    )
