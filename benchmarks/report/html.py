"""``report.html``: one self-contained page (inline CSS and SVG, no script, no CDN) that prints on A4.

Reading order: the headline and one card per mode, the findings, the summary table, the paired comparison, the
per-mode charts (one colour per mode throughout), the context-growth curve, accuracy per category, pass^k,
intervals over repetitions, cost per 1,000 turns, the run's provenance, then every turn side by side with
failures in red and the plan or tool calls folded into ``<details>``.

A run with several targets (models) shows each target's findings and cards under its own heading, adds the
model matrix (one grid per figure, targets as rows and modes as columns) after the findings, groups the charts
and the category table by target, gives the other tables a target column, and puts every (target, mode) side
by side in the turn-by-turn table.
"""

from __future__ import annotations

import json
import re
from collections import defaultdict
from collections.abc import Callable, Sequence
from html import escape
from typing import Any

from benchmarks.cost import CostEstimate, estimate_costs
from benchmarks.report.aggregate import NOT_REPORTED, ModeSummary, Summary
from benchmarks.report.findings import OFFLINE_NOTICE, findings, headline
from benchmarks.report.markdown import (
    CONVERSATION_STATE_POLICY,
    LATENCY_CAPTION,
    MATRIX_CAPTION,
    PAIRED_CAPTION,
    VALID_PLAN_CAPTION,
    cost_caption,
    cost_rows,
    failure_rows,
    interval_rows,
    matrix_grids,
    paired_rows,
    pass_k_rows,
    percent_interval,
    prefix_cache_text,
    provenance_rows,
    summary_rows,
    targets_table,
    valid_plan_cell,
)
from benchmarks.report.svg import bar_chart, grouped, line_chart, mode_colours
from benchmarks.results import RunMeta, RunResults, TurnRow
from benchmarks.targets import DEFAULT_TARGET, BenchTarget

_CSS = """
:root{--ink:#1f2937;--muted:#6b7280;--line:#e5e7eb;--soft:#f9fafb;--fail:#fde2e2;--fail-ink:#b91c1c;
--pass-ink:#15803d}
*{box-sizing:border-box}
body{font:15px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:1.5rem auto;max-width:1280px;
color:var(--ink);padding:0 1rem;overflow-wrap:break-word}
h1{margin:0 0 .2rem;font-size:1.7rem}
h2{margin:2.2rem 0 .6rem;border-bottom:1px solid var(--line);padding-bottom:.3rem;font-size:1.3rem}
a{color:#1d4ed8}
.meta,.caption{color:var(--muted);font-size:.9rem;margin:.3rem 0}
.notice{color:#57534e;font-size:.82rem;margin:.5rem 0 0;padding:.3rem .7rem;border-left:3px solid #d6a15b;
background:#fffbeb;max-width:60rem}
nav.toc{font-size:.85rem;margin:.6rem 0 0;display:flex;flex-wrap:wrap;gap:.3rem .9rem}
.headline{font-size:1.15rem;font-weight:600;margin:.4rem 0 1rem;max-width:62rem}
.cards{display:grid;grid-template-columns:repeat(auto-fit,minmax(240px,1fr));gap:.8rem;margin:0 0 1rem}
.card{border:1px solid var(--line);border-top:5px solid var(--mode);border-radius:6px;padding:.6rem .8rem}
.card h3{margin:0 0 .3rem;font-size:1rem}
.card .big{font-size:1.9rem;font-weight:700;line-height:1.1}
.card dl{display:grid;grid-template-columns:auto auto;gap:.1rem .8rem;margin:.4rem 0 0;font-size:.85rem}
.card dt{color:var(--muted)}.card dd{margin:0;text-align:right;font-variant-numeric:tabular-nums}
ul.findings{margin:.3rem 0;padding-left:1.2rem;max-width:62rem}ul.findings li{margin:.2rem 0}
.swatch{display:inline-block;width:.8em;height:.8em;border-radius:2px;margin-right:.35em;
vertical-align:-.05em}
ul.mode-legend{list-style:none;padding:0;margin:.2rem 0 .6rem;display:flex;gap:1.2rem;font-size:.9rem}
.scroll{overflow-x:auto;max-width:100%}
table{border-collapse:collapse;font-size:.88rem;margin:.4rem 0}
th,td{border:1px solid var(--line);padding:.3rem .5rem;vertical-align:top;text-align:left}
th{background:var(--soft);font-weight:600}
td.num,th.num{text-align:right;font-variant-numeric:tabular-nums}
td.mode{white-space:nowrap}
.ci{display:block;color:var(--muted);font-size:.74rem}
table.provenance td{text-align:left;font-variant-numeric:tabular-nums;overflow-wrap:anywhere}
.chart-grid{display:grid;grid-template-columns:repeat(auto-fill,minmax(320px,1fr));gap:.8rem}
svg.chart{display:block;width:100%;height:auto;background:#fff;border:1px solid var(--line);border-radius:6px}
svg.line-chart{max-width:1100px}
.chart-title{font-size:14px;font-weight:600;fill:#111827}
.tick{font-size:11px;fill:#4b5563}.axis-label{font-size:12px;fill:#374151;font-weight:500}
.value{font-size:12px;font-weight:600;fill:#111827}
.grid{stroke:#eef0f3}.axis-line{stroke:#9ca3af}
.legend-label{font-size:12px;fill:#111827}.legend-value{font-size:12px;fill:#374151;font-weight:600}
.legend-note{font-size:10px;fill:#6b7280}
table.turns{width:100%;table-layout:fixed;font-size:.84rem}
table.turns td{overflow-wrap:anywhere}
table.turns thead th{position:sticky;top:0;z-index:1;box-shadow:0 1px 0 var(--line)}
table.turns col.turn{width:3.2rem}table.turns col.user{width:17%}
tr.scenario th{background:#eef2f7;font-weight:600;border-top:2px solid #9ca3af}
tr.scenario .category{color:var(--muted);font-weight:400;margin-left:.6rem}
td.fail{background:var(--fail)}
.verdict{font-weight:700;margin-right:.25rem}
.pass .verdict{color:var(--pass-ink)}.fail .verdict{color:var(--fail-ink)}
.why{color:var(--fail-ink);font-size:.78rem;margin-top:.2rem}
.cost{color:var(--muted);font-size:.76rem;margin-top:.2rem;font-variant-numeric:tabular-nums}
h3.target{margin:1.4rem 0 .4rem;font-size:1.05rem}h3.target .caption{font-weight:400;margin-left:.4rem}
details{margin-top:.2rem;font-size:.78rem}summary{cursor:pointer;color:#374151}
details pre{white-space:pre-wrap;overflow-wrap:anywhere;font-size:.74rem;background:#f3f4f6;padding:.4rem;
margin:.2rem 0 0;border-radius:4px}
p.failing a{display:inline-block;margin:0 .3rem .2rem 0;padding:0 .35rem;border-radius:3px;
background:var(--fail);color:var(--fail-ink);text-decoration:none;font-size:.8rem}
:target{outline:2px solid #2563eb;outline-offset:-2px}
@media print{
@page{margin:12mm}
*{-webkit-print-color-adjust:exact;print-color-adjust:exact}
body{max-width:none;margin:0;padding:0;font-size:10pt}
nav.toc{display:none}
h2{break-after:avoid}
.card,svg.chart,tr,ul.findings li,section.growth{break-inside:avoid}
table.summary,table.categories,table.pass-k{break-inside:avoid}
tr.scenario{break-after:avoid}
.chart-grid{grid-template-columns:repeat(3,1fr)}
.scroll{overflow:visible}
table.turns thead th{position:static;box-shadow:none}
table.turns{font-size:8pt}
a{color:inherit;text-decoration:none}
}
"""

_SECTIONS = (
    ("findings-section", "Findings"),
    ("matrix", "Model matrix"),
    ("summary", "Summary"),
    ("paired", "Paired comparison"),
    ("per-mode", "Per mode"),
    ("growth", "Context growth"),
    ("categories", "Accuracy per category"),
    ("pass-k", "pass^k"),
    ("intervals", "Intervals"),
    ("cost", "Cost"),
    ("provenance", "Provenance"),
    ("turn-by-turn", "Turn by turn"),
)


def _swatch(colour: str) -> str:
    return f'<span class="swatch" style="background:{colour}"></span>'


def _mode_label(mode: str, colours: dict[str, str]) -> str:
    return _swatch(colours.get(mode, "#999")) + escape(mode)


def _table(
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
                text = _mode_label(cell, colours) if colours and cell in colours else escape(cell)
                cells.append(f'<td class="mode">{text}</td>')
            else:
                style = cell_style(r, i) if cell_style else ""
                cells.append(f'<td class="num"{style}>{escape(cell)}</td>')
        body.append("<tr>" + "".join(cells) + "</tr>")
    return (
        f'<div class="scroll"><table class="{css_class}"><thead><tr>{head}</tr></thead>'
        f"<tbody>{''.join(body)}</tbody></table></div>"
    )


def _heat(accuracy: float) -> str:
    """A pale red-to-green background for an accuracy in [0, 1]."""
    return f' style="background:hsl({accuracy * 120:.0f} 65% 90%)"'


def _category_table(summary: Summary, colours: dict[str, str]) -> str:
    if summary.matrix:
        return "".join(
            _target_heading(t.target) + _category_table(t.summary, colours) for t in summary.targets
        )
    modes = [m.mode for m in summary.modes]
    by_category: dict[str, dict[str, tuple[float, int]]] = defaultdict(dict)
    for c in summary.categories:
        by_category[c.category][c.mode] = (c.accuracy, c.turns)
    head = '<th>category</th><th class="num">turns</th>' + "".join(
        f'<th class="num">{_mode_label(m, colours)}</th>' for m in modes
    )
    body = []
    intervals = {(c.category, c.mode): percent_interval(c.accuracy_interval, 0) for c in summary.categories}
    for category, per_mode in sorted(by_category.items()):
        turns = max(t for _, t in per_mode.values())
        cells = "".join(
            f'<td class="num"{_heat(per_mode[m][0])}>{per_mode[m][0]:.0%}'
            f'<span class="ci">{escape(intervals.get((category, m), ""))}</span></td>'
            if m in per_mode
            else '<td class="num">–</td>'
            for m in modes
        )
        body.append(f'<tr><td>{escape(category)}</td><td class="num">{turns}</td>{cells}</tr>')
    return (
        f'<div class="scroll"><table class="categories"><thead><tr>{head}</tr></thead>'
        f"<tbody>{''.join(body)}</tbody></table></div>"
    )


def _cards(modes: Sequence[ModeSummary], colours: dict[str, str]) -> str:
    cards = []
    for m in modes:
        rows = [
            ("model calls / turn", f"{m.calls_mean:.2f} (max {m.calls_max})"),
            ("input tokens / turn", grouped(m.input_tokens_mean) if m.tokens_reported else NOT_REPORTED),
            ("output tokens / turn", grouped(m.output_tokens_mean) if m.tokens_reported else NOT_REPORTED),
            ("harness p50", f"{m.harness_p50:.1f} ms"),
        ]
        if m.simulated_p50 is not None:
            rows.append(("simulated latency p50", f"{grouped(m.simulated_p50)} ms"))
        if m.failed_turns:
            rows.append(("turns that failed", str(m.failed_turns)))
        if m.cached_share is not None:
            rows.insert(3, ("input served from cache", f"{m.cached_share:.0%}"))
        if m.simulated_first_answer_p50 is not None:
            rows.append(("first answer token p50, simulated", f"{grouped(m.simulated_first_answer_p50)} ms"))
        if m.first_answer_p50 is not None:
            rows.append(("first answer token p50, measured", f"{m.first_answer_p50:.1f} ms"))
        rows.append(("valid plans", valid_plan_cell(m)))
        details = "".join(f"<dt>{escape(k)}</dt><dd>{escape(v)}</dd>" for k, v in rows)
        interval = percent_interval(m.accuracy_interval, 0)
        ci = f" (95% CI {interval}%)" if interval else ""
        cards.append(
            f'<div class="card" style="--mode:{colours[m.mode]}" data-mode="{escape(m.mode)}">'
            f"<h3>{_mode_label(m.mode, colours)}</h3>"
            f'<div class="big">{m.accuracy:.0%}</div><div class="meta">accuracy{escape(ci)} · {m.passed} of '
            f"{m.turns} turns passed</div><dl>{details}</dl></div>"
        )
    return '<div class="cards">' + "".join(cards) + "</div>"


def _legend(modes: Sequence[str], colours: dict[str, str]) -> str:
    items = "".join(f'<li data-mode="{escape(m)}">{_mode_label(m, colours)}</li>' for m in modes)
    return f'<ul class="mode-legend" id="mode-legend">{items}</ul>'


def _charts(summary: Summary, colours: dict[str, str], suffix: str = "") -> str:
    """The per-mode bar charts of one target (``suffix`` keeps chart ids unique when there are several)."""
    modes = summary.modes
    simulated = bool(modes) and all(m.simulated_p50 is not None for m in modes)
    latency_title = "Latency p50, simulated" if simulated else "Latency p50, measured"
    charts = [
        bar_chart(
            "Model calls per turn (mean)",
            [(m.mode, m.calls_mean) for m in modes],
            y_label="model calls / turn",
            fmt=lambda v: f"{v:.2f}",
            colours=colours,
            chart_id="chart-calls" + suffix,
        ),
        bar_chart(
            "Input tokens per turn (mean)",
            [(m.mode, m.input_tokens_mean) for m in modes],
            y_label="input tokens / turn",
            fmt=grouped,
            colours=colours,
            chart_id="chart-input-tokens" + suffix,
        ),
        bar_chart(
            "Output tokens per turn (mean)",
            [(m.mode, m.output_tokens_mean) for m in modes],
            y_label="output tokens / turn",
            fmt=grouped,
            colours=colours,
            chart_id="chart-output-tokens" + suffix,
        ),
        bar_chart(
            latency_title,
            [(m.mode, (m.simulated_p50 if simulated else m.latency_p50) or 0.0) for m in modes],
            y_label="milliseconds per turn",
            fmt=(lambda v: f"{grouped(v)} ms") if simulated else (lambda v: f"{v:.1f} ms"),
            colours=colours,
            chart_id="chart-latency" + suffix,
        ),
        *_first_answer_chart(modes, colours, suffix),
        bar_chart(
            "Harness overhead p50",
            [(m.mode, m.harness_p50) for m in modes],
            y_label="milliseconds per turn",
            fmt=lambda v: f"{v:.1f} ms",
            colours=colours,
            chart_id="chart-harness" + suffix,
        ),
        bar_chart(
            "Accuracy",
            [(m.mode, m.accuracy * 100) for m in modes],
            y_label="% of turns passed",
            fmt=lambda v: f"{v:.0f}%",
            y_max=100,
            colours=colours,
            chart_id="chart-accuracy" + suffix,
        ),
    ]
    return '<div class="chart-grid">' + "".join(charts) + "</div>"


def _first_answer_chart(modes: Sequence[ModeSummary], colours: dict[str, str], suffix: str = "") -> list[str]:
    """Time to the first answer token p50 beside the latency chart: simulated when every mode has it, else
    measured when every mode has it, else no chart."""
    simulated = [m.simulated_first_answer_p50 for m in modes]
    measured = [m.first_answer_p50 for m in modes]
    if modes and None not in simulated:
        title, values, decimals = "First answer token p50, simulated", simulated, 0
    elif modes and None not in measured:
        title, values, decimals = "First answer token p50, measured", measured, 1
    else:
        return []

    def fmt(value: float) -> str:
        return f"{grouped(value)} ms" if decimals == 0 else f"{value:.1f} ms"

    return [
        bar_chart(
            title,
            [(m.mode, value or 0.0) for m, value in zip(modes, values, strict=True)],
            y_label="milliseconds per turn",
            fmt=fmt,
            colours=colours,
            chart_id="chart-first-answer" + suffix,
        )
    ]


def _growth(summary: Summary, colours: dict[str, str]) -> str:
    """The context-growth section: one line chart, or one per target (under a heading each) for a matrix."""
    if summary.matrix:
        charts = [
            _growth_chart(t.summary, colours, f"Target {t.target.name}", f"-{t.target.name}")
            for t in summary.targets
        ]
        if not any(charts):
            return ""
        return '<h2 id="growth">Context growth</h2>' + "".join(charts)
    return _growth_chart(summary, colours)


def _growth_chart(summary: Summary, colours: dict[str, str], target: str = "", suffix: str = "") -> str:
    """One target's growth chart, under an ``h2`` (one target) or an ``h3`` named ``target`` (a matrix)."""
    growth = summary.growth
    if growth is None:
        return ""
    order = [m.mode for m in summary.modes if m.mode in growth.series]
    order += [m for m in growth.series if m not in order]
    series = {mode: growth.series[mode] for mode in order}
    turns = max((len(v) for v in series.values()), default=0)
    ratios = ", ".join(f"{mode} ×{ratio:.2f}" for mode in order if (ratio := growth.ratio(mode)) is not None)
    mean = " (mean over repetitions)" if summary.repetitions > 1 else ""
    title = f"Context growth over {turns} turns: {growth.scenario}"
    heading = (
        f'<h3 class="target">{escape(target)} · {escape(title)}</h3>'
        if target
        else f'<h2 id="growth">{escape(title)}</h2>'
    )
    return (
        '<section class="growth">'
        + heading
        + '<p class="caption">Input tokens the model was sent at each turn of the longest conversation'
        f"{mean}. Last turn vs first: {escape(ratios)}. Hover a point for its value.</p>"
        + line_chart(
            f"Input tokens per turn · {growth.scenario}",
            series,
            x_label="turn",
            y_label="input tokens per turn",
            colours=colours,
            chart_id="chart-growth" + suffix,
        )
        + "</section>"
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


def _turn_table(results: RunResults, columns: list[Column], colours: dict[str, str]) -> str:
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
        f"<th>{escape(target + ' · ') if matrix else ''}{_mode_label(mode, colours)}</th>"
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


def _provenance(results: RunResults) -> str:
    rows = provenance_rows(results.meta)
    if not rows:
        return ""
    body = "".join(f"<tr><th>{escape(k)}</th><td>{escape(v)}</td></tr>" for k, v in rows)
    return (
        '<h2 id="provenance">Provenance</h2><p class="caption">What produced these figures: code, packages, '
        "machine, model identity and the SHA-256 (first 12 hex digits) of every prompt template and tool "
        f'schema.</p><div class="scroll"><table class="provenance"><tbody>{body}</tbody></table></div>'
    )


def _header_meta(meta: RunMeta, summary: Summary) -> str:
    """The line under the title: provider (or targets), latency profile, prefix cache, size and start."""
    cache = prefix_cache_text(meta)
    if meta.matrix:
        who = "targets " + ", ".join(f"<b>{escape(t.name)}</b> ({escape(t.label)})" for t in meta.targets)
        per = "turns per target and mode"
    else:
        who = f"provider <b>{escape(meta.provider)}</b>" + (
            f", model <b>{escape(meta.model)}</b>" if meta.model else ""
        )
        per = "turns per mode"
    return (
        f'<p class="meta">{who}'
        + (f", latency profile <b>{escape(meta.latency_profile)}</b>" if meta.latency_profile else "")
        + (f', <span id="prefix-cache">{escape(cache)}</span>' if cache else "")
        + f" · {meta.scenarios} scenarios · {meta.turns} {per} · {meta.repeat} repetition(s)"
        + (f" · {summary.warmup_turns} warm-up turn(s) left out" if summary.warmup_turns else "")
        + f" · started {escape(meta.started_at)}</p>"
    )


def _findings_section(summary: Summary, colours: dict[str, str]) -> list[str]:
    """The headline, the cards and the findings; for a matrix, each target's under its own heading."""
    parts = ['<section id="findings-section"><h2>Findings</h2>']
    top = headline(summary)
    if top:
        parts.append(f'<p class="headline" id="headline">{escape(top)}</p>')
    if not summary.matrix:
        parts.append(_cards(summary.modes, colours))
        items = "".join(f"<li>{escape(s)}</li>" for s in findings(summary, None))
        parts.append(f'<ul class="findings" id="findings">{items}</ul></section>')
        return parts
    for entry in summary.targets:
        name = entry.target.name
        parts.append(_target_heading(entry.target, f"target-{name}"))
        own = headline(entry.summary)
        if own:
            parts.append(f'<p class="headline">{escape(own)}</p>')
        parts.append(_cards(entry.summary.modes, colours))
        items = "".join(f"<li>{escape(s)}</li>" for s in findings(entry.summary, None))
        parts.append(f'<ul class="findings" data-target="{escape(name)}">{items}</ul>')
    parts.append("</section>")
    return parts


def _accuracy_style(
    accuracy: dict[tuple[str, str], float], header: list[str], rows: list[list[str]]
) -> Callable[[int, int], str]:
    """Tint each cell of the accuracy grid (target row, mode column) from red to green."""

    def style(r: int, i: int) -> str:
        value = accuracy.get((rows[r][0], header[i]))
        return _heat(value) if value is not None else ""

    return style


def _matrix(meta: RunMeta, summary: Summary, costs: Sequence[CostEstimate]) -> str:
    """The model matrix: the targets, then one grid per figure (accuracy cells tinted red to green)."""
    accuracy = {(t.target.name, m.mode): m.accuracy for t in summary.targets for m in t.summary.modes}
    grids = "".join(
        f"<h3>{escape(title)}</h3>"
        + _table(
            header,
            rows,
            css_class="matrix",
            cell_style=_accuracy_style(accuracy, header, rows) if title.startswith("Accuracy") else None,
            labels=1,
        )
        for title, header, rows in matrix_grids(summary, costs)
    )
    return (
        '<h2 id="matrix">Model matrix</h2>'
        + _table(*targets_table(meta), css_class="targets", labels=4)
        + f'<p class="caption">{escape(MATRIX_CAPTION)}</p>'
        + grids
    )


def _target_heading(target: BenchTarget, anchor: str | None = None) -> str:
    """``Target a  offline offline-sales`` as an ``h3``."""
    ident = f' id="{escape(anchor)}"' if anchor else ""
    return (
        f'<h3 class="target"{ident}>Target {escape(target.name)} '
        f'<span class="caption">{escape(target.label)}</span></h3>'
    )


def _per_mode_charts(summary: Summary, modes: list[str], colours: dict[str, str]) -> str:
    """The per-mode charts, grouped by target (a heading and a row of charts each) for a matrix."""
    if not summary.matrix:
        return '<h2 id="per-mode">Per mode</h2>' + _legend(modes, colours) + _charts(summary, colours)
    groups = "".join(
        _target_heading(t.target) + _charts(t.summary, colours, f"-{t.target.name}") for t in summary.targets
    )
    return '<h2 id="per-mode">Per target and mode</h2>' + _legend(modes, colours) + groups


def render_html(
    results: RunResults, summary: Summary, cost: CostEstimate | Sequence[CostEstimate] | None = None
) -> str:
    """The whole HTML report as one string (``cost`` defaults to the packaged pricing table's estimate, one
    per target)."""
    meta = results.meta
    costs = ([cost] if isinstance(cost, CostEstimate) else list(cost)) if cost is not None else None
    costs = costs or estimate_costs(results)
    cells = summary.cells()
    modes = list(dict.fromkeys(m.mode for _, m in cells))
    colours = mode_colours(modes)
    paired = paired_rows(summary)
    intervals = interval_rows(summary)
    growth = summary.growth is not None or any(t.summary.growth is not None for t in summary.targets)
    present = {
        "matrix": summary.matrix,
        "growth": growth,
        "paired": paired is not None,
        "intervals": intervals is not None,
        "provenance": meta.provenance is not None,
    }
    toc = " ".join(
        f'<a href="#{anchor}">{escape(title)}</a>' for anchor, title in _SECTIONS if present.get(anchor, True)
    )
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        "<title>erp-ai-harness benchmark</title>",
        f"<style>{_CSS}</style></head><body>",
        "<header><h1>erp-ai-harness benchmark</h1>",
        _header_meta(meta, summary),
        *(f'<p class="notice read-warning"><b>Warning:</b> {escape(w)}.</p>' for w in results.read_warnings),
    ]
    if meta.offline:
        parts.append(
            '<p class="notice" id="offline-notice"><b>Offline stand-in model.</b> '
            f"{escape(OFFLINE_NOTICE)}</p>"
        )
    parts.append(f'<p class="meta" id="state-policy">{escape(CONVERSATION_STATE_POLICY)}</p>')
    parts.append(f'<nav class="toc">{toc}</nav></header>')
    parts += _findings_section(summary, colours)
    if summary.matrix:
        parts.append(_matrix(meta, summary, costs))
    parts.append(
        '<h2 id="summary">Summary</h2>'
        + _table(*summary_rows(summary), css_class="summary", colours=colours)
        + f'<p class="caption">{escape(LATENCY_CAPTION)} Harness = everything but model time. '
        "Means and percentiles are per turn. Accuracy intervals are Wilson 95% intervals. "
        f"{escape(VALID_PLAN_CAPTION)}</p>"
    )
    if paired is not None:
        within = " Each target's modes are paired within that target." if summary.matrix else ""
        parts.append(
            '<h2 id="paired">Paired comparison</h2>'
            + _table(*paired, css_class="paired")
            + f'<p class="caption">{escape(PAIRED_CAPTION + within)}</p>'
        )
    parts.append(_per_mode_charts(summary, modes, colours))
    parts.append(_growth(summary, colours))
    failures = failure_rows(summary)
    if failures is not None:
        parts.append(
            '<h2 id="failures">Failures per kind</h2>'
            '<p class="caption">Turns that ended in a failure kind (see docs/failures.md); a failed turn '
            "never passes.</p>" + _table(*failures, css_class="failures")
        )
    parts.append(
        '<h2 id="categories">Accuracy per category</h2>'
        '<p class="caption">Share of turns passed; red is low, green is high.</p>'
        + _category_table(summary, colours)
    )
    parts.append(
        '<h2 id="pass-k">pass^k (tau-bench)</h2>'
        '<p class="caption">The chance that k repetitions of a turn all pass, averaged over turns.</p>'
        + _table(*pass_k_rows(summary), css_class="pass-k", colours=colours)
    )
    if intervals is not None:
        parts.append(
            f'<h2 id="intervals">Intervals over {summary.repetitions} repetitions</h2>'
            '<p class="caption">Bootstrap 95% intervals (2,000 draws, fixed seed) resampling turns with all '
            "their repetitions.</p>" + _table(*intervals, css_class="intervals", colours=colours)
        )
    parts.append(
        '<h2 id="cost">Cost per 1,000 turns</h2>'
        + _table(*cost_rows(costs), css_class="cost", colours=colours)
        + f'<p class="caption">{escape(cost_caption(costs))}</p>'
    )
    parts.append(_provenance(results))
    if summary.matrix:
        columns = [(t.target.name, mode) for t in summary.targets for mode in modes]
    else:
        targets = list(dict.fromkeys(row.target for row in results.scored_rows)) or [DEFAULT_TARGET]
        columns = [(targets[0], mode) for mode in modes]
    parts.append('<h2 id="turn-by-turn">Turn by turn</h2>' + _turn_table(results, columns, colours))
    parts.append("</body></html>")
    return "\n".join(parts)
