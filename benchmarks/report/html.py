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

from collections.abc import Callable, Sequence
from html import escape

from benchmarks.cost import CostEstimate, estimate_costs
from benchmarks.report.about import (
    CONVERSATION_STATE_POLICY,
    prefix_cache_text,
    provenance_rows,
    targets_table,
)
from benchmarks.report.aggregate import NOT_REPORTED, ModeSummary, Summary
from benchmarks.report.findings import OFFLINE_NOTICE, findings, headline
from benchmarks.report.html_categories import categories_section
from benchmarks.report.html_charts import growth_section, per_mode_charts
from benchmarks.report.html_decision import distribution_section, regime_banner, verdict_section
from benchmarks.report.html_failures import failures_section
from benchmarks.report.html_parts import PAGE_CLOSE, heat, mode_label, page_open, table, target_heading
from benchmarks.report.html_turns import turn_columns, turn_table
from benchmarks.report.matrix import MATRIX_CAPTION, matrix_grids
from benchmarks.report.regime import title
from benchmarks.report.runs import ReportRun
from benchmarks.report.svg import grouped, mode_colours
from benchmarks.report.tables import (
    INTERVALS_CAPTION,
    LATENCY_CAPTION,
    PERCENTILE_CAPTION,
    VALID_PLAN_CAPTION,
    cost_caption,
    cost_rows,
    costs_of,
    interval_rows,
    paired_caption,
    paired_rows,
    pass_k_rows,
    percent_interval,
    summary_rows,
    valid_plan_cell,
)
from benchmarks.results import RunMeta, RunResults

_SECTIONS = (
    ("verdict", "Verdict"),
    ("latency-distribution", "Latency distributions"),
    ("categories", "Per category"),
    ("failures", "Failures"),
    ("findings-section", "Findings"),
    ("matrix", "Model matrix"),
    ("summary", "Summary"),
    ("paired", "Paired comparison"),
    ("per-mode", "Per mode"),
    ("growth", "Context growth"),
    ("pass-k", "pass^k"),
    ("intervals", "Intervals"),
    ("cost", "Cost"),
    ("provenance", "Provenance"),
    ("turn-by-turn", "Turn by turn"),
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
            f"<h3>{mode_label(m.mode, colours)}</h3>"
            f'<div class="big">{m.accuracy:.0%}</div><div class="meta">accuracy{escape(ci)} · {m.passed} of '
            f"{m.turns} turns passed</div><dl>{details}</dl></div>"
        )
    return '<div class="cards">' + "".join(cards) + "</div>"


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
        parts.append(target_heading(entry.target, f"target-{name}"))
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
        return heat(value) if value is not None else ""

    return style


def _matrix(meta: RunMeta, summary: Summary, costs: Sequence[CostEstimate]) -> str:
    """The model matrix: the targets, then one grid per figure (accuracy cells tinted red to green)."""
    accuracy = {(t.target.name, m.mode): m.accuracy for t in summary.targets for m in t.summary.modes}
    grids = "".join(
        f"<h3>{escape(title)}</h3>"
        + table(
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
        + table(*targets_table(meta), css_class="targets", labels=4)
        + f'<p class="caption">{escape(MATRIX_CAPTION)}</p>'
        + grids
    )


def render_html(
    results: RunResults, summary: Summary, cost: CostEstimate | Sequence[CostEstimate] | None = None
) -> str:
    """The whole HTML report as one string (``cost`` defaults to the packaged pricing table's estimate, one
    per target)."""
    meta = results.meta
    costs = (costs_of(cost) if cost is not None else None) or estimate_costs(results)
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
    run = ReportRun("", results, summary, costs)
    parts = [
        page_open(title(meta)),
        f"<header><h1>{escape(title(meta))}</h1>",
        regime_banner(run),
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
    parts.append(verdict_section([run], colours))
    parts.append(distribution_section([run], colours))
    parts.append(categories_section([run], colours))
    parts.append(failures_section([run], colours))
    parts += _findings_section(summary, colours)
    if summary.matrix:
        parts.append(_matrix(meta, summary, costs))
    parts.append(
        '<h2 id="summary">Summary</h2>'
        + table(*summary_rows(summary), css_class="summary", colours=colours)
        + f'<p class="caption">{escape(LATENCY_CAPTION)} Harness = everything but model time. '
        "Means and percentiles are per turn. "
        f"{escape(PERCENTILE_CAPTION)} Accuracy intervals are Wilson 95% intervals. "
        f"{escape(VALID_PLAN_CAPTION)}</p>"
    )
    if paired is not None:
        parts.append(
            '<h2 id="paired">Paired comparison</h2>'
            + table(*paired, css_class="paired")
            + f'<p class="caption">{escape(paired_caption(summary))}</p>'
        )
    parts.append(per_mode_charts(summary, modes, colours))
    parts.append(growth_section(summary, colours))
    parts.append(
        '<h2 id="pass-k">pass^k (tau-bench)</h2>'
        '<p class="caption">The chance that k repetitions of a turn all pass, averaged over turns.</p>'
        + table(*pass_k_rows(summary), css_class="pass-k", colours=colours)
    )
    if intervals is not None:
        parts.append(
            f'<h2 id="intervals">Intervals over {summary.repetitions} repetitions</h2>'
            f'<p class="caption">{escape(INTERVALS_CAPTION)}</p>'
            + table(*intervals, css_class="intervals", colours=colours)
        )
    parts.append(
        '<h2 id="cost">Cost per 1,000 turns</h2>'
        + table(*cost_rows(costs), css_class="cost", colours=colours)
        + f'<p class="caption">{escape(cost_caption(costs))}</p>'
    )
    parts.append(_provenance(results))
    columns = turn_columns(results, summary)
    parts.append('<h2 id="turn-by-turn">Turn by turn</h2>' + turn_table(results, columns, colours))
    parts.append(PAGE_CLOSE)
    return "\n".join(parts)
