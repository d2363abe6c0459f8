"""``report.html``: one self-contained page (inline CSS and SVG, no script, no CDN)."""

from __future__ import annotations

import json
from collections import defaultdict
from html import escape

from benchmarks.report.aggregate import Summary
from benchmarks.report.findings import OFFLINE_NOTICE, findings
from benchmarks.report.markdown import category_rows, pass_k_rows, summary_rows
from benchmarks.report.svg import bar_chart, line_chart
from benchmarks.results import RunResults, TurnRow

_CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:2rem auto;max-width:1280px;
color:#1f2937;padding:0 1rem}
h1{margin-bottom:.2rem}h2{margin-top:2.2rem;border-bottom:1px solid #e5e7eb;padding-bottom:.3rem}
.meta{color:#6b7280}.notice{background:#fef3c7;border-left:4px solid #d97706;padding:.7rem 1rem}
.findings{background:#eff6ff;border-left:4px solid #2563eb;padding:.7rem 1rem}
table{border-collapse:collapse;font-size:.88rem;margin:.5rem 0}
th,td{border:1px solid #e5e7eb;padding:.3rem .5rem;vertical-align:top;text-align:left}
th{background:#f9fafb}td.num{text-align:right;font-variant-numeric:tabular-nums}
.charts{display:flex;flex-wrap:wrap;gap:1rem}
.chart{background:#fff;border:1px solid #e5e7eb;border-radius:6px}
.chart-title{font-size:13px;font-weight:600}.label,.legend{font-size:11px;fill:#4b5563}.value{font-size:11px}
td.fail{background:#fee2e2}td.pass{background:#f0fdf4}tr.scenario-start td{border-top:2px solid #9ca3af}
.verdict{font-weight:700}.why{color:#b91c1c;font-size:.8rem}.cost{color:#6b7280;font-size:.78rem}
details pre{white-space:pre-wrap;font-size:.75rem;background:#f3f4f6;padding:.4rem;max-width:420px}
td.user{max-width:240px}td.answer{max-width:360px}
"""


def _table(header: list[str], rows: list[list[str]], css_class: str) -> str:
    head = "".join(f"<th>{escape(h)}</th>" for h in header)
    body = "".join(
        "<tr>"
        + "".join(f'<td class="{"num" if i else ""}">{escape(cell)}</td>' for i, cell in enumerate(row))
        + "</tr>"
        for row in rows
    )
    return f'<table class="{css_class}"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'


def _charts(summary: Summary) -> str:
    modes = summary.modes
    simulated = all(m.simulated_p50 is not None for m in modes) and bool(modes)
    latency_title = "Latency p50, simulated (ms)" if simulated else "Latency p50, measured (ms)"
    charts = [
        bar_chart(
            "Model calls per turn (mean)", [(m.mode, m.calls_mean) for m in modes], chart_id="chart-calls"
        ),
        bar_chart(
            "Input tokens per turn (mean)",
            [(m.mode, m.input_tokens_mean) for m in modes],
            fmt=lambda v: f"{v:.0f}",
            chart_id="chart-input-tokens",
        ),
        bar_chart(
            "Output tokens per turn (mean)",
            [(m.mode, m.output_tokens_mean) for m in modes],
            fmt=lambda v: f"{v:.0f}",
            chart_id="chart-output-tokens",
        ),
        bar_chart(
            latency_title,
            [(m.mode, (m.simulated_p50 if simulated else m.latency_p50) or 0.0) for m in modes],
            chart_id="chart-latency",
        ),
        bar_chart(
            "Harness overhead p50 (ms)",
            [(m.mode, m.harness_p50) for m in modes],
            fmt=lambda v: f"{v:.2f}",
            chart_id="chart-harness",
        ),
        bar_chart(
            "Accuracy",
            [(m.mode, m.accuracy * 100) for m in modes],
            fmt=lambda v: f"{v:.0f}%",
            chart_id="chart-accuracy",
        ),
    ]
    return '<div class="charts">' + "".join(charts) + "</div>"


def _calls_block(row: TurnRow) -> str:
    if row.plan is not None:
        label, payload = "plan", json.dumps(row.plan, ensure_ascii=False, indent=1)
    else:
        label = "tool calls"
        payload = "\n".join(
            f"{op.funcion}({json.dumps(op.parametros, ensure_ascii=False)})"
            + (f" → {op.error}" if op.error else "")
            for op in row.operations
        )
    if not payload and not row.operations:
        payload = "(none)"
    executed = ", ".join(op.funcion for op in row.operations) or "no operations"
    return (
        f"<details><summary>{escape(label)}: {escape(executed)}</summary>"
        f"<pre>{escape(payload)}</pre></details>"
    )


def _turn_cell(row: TurnRow | None) -> str:
    if row is None:
        return "<td>–</td>"
    verdict = "✓" if row.passed else "✗"
    why = "; ".join(row.score.details or []) or "; ".join(row.errors)
    cost = (
        f"{row.model_calls} calls · {row.input_tokens}/{row.output_tokens} tok · "
        f"{row.harness_ms:.1f} ms harness"
    )
    return (
        f'<td class="answer {"pass" if row.passed else "fail"}"><span class="verdict">{verdict}</span> '
        f"{escape(row.answer or '(no answer)')}"
        + (f'<div class="why">{escape(why)}</div>' if not row.passed and why else "")
        + f'<div class="cost">{escape(cost)}</div>'
        + _calls_block(row)
        + "</td>"
    )


def _turn_table(results: RunResults, modes: list[str]) -> str:
    cells: dict[tuple[str, int], dict[str, TurnRow]] = defaultdict(dict)
    users: dict[tuple[str, int], str] = {}
    scenario_order: dict[str, int] = {}
    for row in results.rows:
        if row.repetition != 1:
            continue
        scenario_order.setdefault(row.scenario, len(scenario_order))
        users.setdefault((row.scenario, row.turn), row.user)
        cells[(row.scenario, row.turn)][row.mode] = row
    order = sorted(users, key=lambda key: (scenario_order[key[0]], key[1]))
    head = "<th>scenario · turn</th><th>user</th>" + "".join(f"<th>{escape(m)}</th>" for m in modes)
    body = []
    for scenario, turn in order:
        first = ' class="scenario-start"' if turn == 1 else ""
        body.append(
            f"<tr{first}><td>{escape(scenario)} · {turn}</td>"
            f'<td class="user">{escape(users[(scenario, turn)])}</td>'
            + "".join(_turn_cell(cells[(scenario, turn)].get(mode)) for mode in modes)
            + "</tr>"
        )
    return f'<table class="turns"><thead><tr>{head}</tr></thead><tbody>{"".join(body)}</tbody></table>'


def render_html(results: RunResults, summary: Summary) -> str:
    """The whole HTML report as one string."""
    meta = results.meta
    modes = [m.mode for m in summary.modes]
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        "<title>erp-ai-harness benchmark</title>",
        f"<style>{_CSS}</style></head><body>",
        "<h1>erp-ai-harness benchmark</h1>",
        f'<p class="meta">provider <b>{escape(meta.provider)}</b>'
        + (f", model <b>{escape(meta.model)}</b>" if meta.model else "")
        + (f", latency profile <b>{escape(meta.latency_profile)}</b>" if meta.latency_profile else "")
        + f" · {meta.scenarios} scenarios · {meta.turns} turns per mode · {meta.repeat} repetition(s)"
        + f" · started {escape(meta.started_at)}</p>",
    ]
    if meta.offline:
        parts.append(f'<p class="notice" id="offline-notice">{escape(OFFLINE_NOTICE)}</p>')
    parts.append('<h2>Findings</h2><p class="findings" id="findings">')
    parts.append(escape(" ".join(findings(summary, None))) + "</p>")
    parts.append("<h2>Summary</h2>" + _table(*summary_rows(summary), css_class="summary"))
    parts.append(
        '<p class="meta">Latency = measured model time + harness time; simulated adds the latency profile '
        "instead of measured model time. Harness = everything but model time.</p>"
    )
    parts.append("<h2>Per mode</h2>" + _charts(summary))
    if summary.growth is not None:
        parts.append(f"<h2>Context growth: {escape(summary.growth.scenario)}</h2>")
        parts.append(
            line_chart(
                "Input tokens per turn",
                summary.growth.series,
                x_label="turn index",
                y_label="input tokens",
                chart_id="chart-growth",
            )
        )
    parts.append("<h2>Accuracy per category</h2>" + _table(*category_rows(summary), css_class="categories"))
    parts.append("<h2>pass^k (tau-bench)</h2>" + _table(*pass_k_rows(summary), css_class="pass-k"))
    parts.append(
        '<h2>Turn by turn</h2><p class="meta">Repetition 1, modes side by side; failing turns are red. '
        "Open a cell's details for the plan or the tool calls.</p>"
    )
    parts.append(_turn_table(results, modes))
    parts.append("</body></html>")
    return "\n".join(parts)
