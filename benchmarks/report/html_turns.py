"""The turn-by-turn table of ``report.html``: repetition 1, every turn in a row and every (target, mode) in a
column, failures in red with the reason, and the plan or tool calls folded into ``<details>``."""

from __future__ import annotations

import json
import re
from collections import defaultdict
from html import escape
from typing import Any

from benchmarks.report.html_parts import mode_label
from benchmarks.report.svg import grouped
from benchmarks.results import RunResults, TurnRow


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


def _turn_cell(row: TurnRow | None) -> str:
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
        f'<td class="answer {"pass" if row.passed else "fail"}" data-mode="{escape(row.mode)}">'
        f'<span class="verdict" title="{"passed" if row.passed else "failed"}">{verdict}</span>'
        f"{escape(row.answer or '(no answer)')}{notes}"
        f'<div class="cost">{escape(cost)}</div>' + _calls_block(row) + "</td>"
    )


def _anchor(scenario: str, turn: int) -> str:
    return "turn-" + re.sub(r"[^A-Za-z0-9_-]+", "-", scenario) + f"-{turn}"


Column = tuple[str, str]
"""A turn-by-turn column: (target, mode)."""


def turn_table(results: RunResults, columns: list[Column], colours: dict[str, str]) -> str:
    """Repetition 1, every turn in a row and every (target, mode) in a column (the target named only in a
    matrix)."""
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
            f'<a href="#{_anchor(s, t)}" title="failed in {escape(", ".join(failed))}">'
            f"{escape(s)} · {t}{escape(which)}</a>"
        )
    side = "targets and modes" if matrix else "modes"
    intro = (
        f'<p class="caption">Repetition 1 of {max(1, results.meta.repeat)}, {side} side by side: ✓ passed, '
        "✗ failed (red, with the reason). Open a cell's ▸ line for the plan or the tool calls.</p>"
        f'<p class="caption failing" id="failing-turns"><b>{len(failing)} of {len(order)} turns</b> '
        f"failed in at least one {'target and mode' if matrix else 'mode'}{':' if failing else '.'} "
        f"{''.join(links)}</p>"
    )
    cols = '<col class="turn"><col class="user">' + "".join("<col>" for _ in columns)
    head = "<th>turn</th><th>question</th>" + "".join(
        f"<th>{escape(target + ' · ') if matrix else ''}{mode_label(mode, colours)}</th>"
        for target, mode in columns
    )
    body = []
    previous = None
    for scenario, turn in order:
        if scenario != previous:
            previous = scenario
            body.append(
                f'<tr class="scenario"><th colspan="{2 + len(columns)}">{escape(scenario)}'
                f'<span class="category">{escape(categories[scenario])}</span></th></tr>'
            )
        body.append(
            f'<tr id="{_anchor(scenario, turn)}"><td class="num">{turn}</td>'
            f'<td class="user">{escape(users[(scenario, turn)])}</td>'
            + "".join(_turn_cell(cells[(scenario, turn)].get(column)) for column in columns)
            + "</tr>"
        )
    return (
        intro + f'<table class="turns"><colgroup>{cols}</colgroup><thead><tr>{head}</tr></thead>'
        f"<tbody>{''.join(body)}</tbody></table>"
    )
