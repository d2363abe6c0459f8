"""The sections of one run's per-mode figures in ``report.html``: the findings with a card per mode, the model
matrix, the per-mode bar charts (one colour per mode throughout) and the context-growth curve; a run with
several targets groups each by target."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from html import escape

from benchmarks.cost import CostEstimate
from benchmarks.report.findings import findings, headline
from benchmarks.report.html_parts import heat, mode_label, table, target_heading
from benchmarks.report.matrix_table import MATRIX_CAPTION, matrix_grids, targets_table
from benchmarks.report.summary import NOT_REPORTED, ModeSummary, Summary
from benchmarks.report.svg import bar_chart, grouped, line_chart
from benchmarks.report.tables import growth_order, percent_interval, valid_plan_cell
from benchmarks.results import RunMeta


def _legend(modes: Sequence[str], colours: dict[str, str]) -> str:
    items = "".join(f'<li data-mode="{escape(m)}">{mode_label(m, colours)}</li>' for m in modes)
    return f'<ul class="mode-legend" id="mode-legend">{items}</ul>'


def _ms(decimals: int) -> Callable[[float], str]:
    """Milliseconds grouped and whole (simulated figures) or with one decimal (measured ones)."""
    return (lambda v: f"{grouped(v)} ms") if decimals == 0 else (lambda v: f"{v:.1f} ms")


Figure = tuple[str, str, str, Callable[[ModeSummary], float | None], Callable[[float], str]]
"""A bar chart: (id, title, y-axis label, the figure of a mode, how a value is written)."""


def _latency_figures(modes: Sequence[ModeSummary]) -> list[Figure]:
    """Latency p50 (simulated when every mode has it), then time to the first answer token p50: simulated when
    every mode has it, else measured when every mode has it, else no chart."""
    simulated = bool(modes) and all(m.simulated_p50 is not None for m in modes)
    figures: list[Figure] = [
        ("latency", "Latency p50, simulated", "milliseconds per turn", lambda m: m.simulated_p50, _ms(0))
        if simulated
        else ("latency", "Latency p50, measured", "milliseconds per turn", lambda m: m.latency_p50, _ms(1))
    ]
    if modes and all(m.simulated_first_answer_p50 is not None for m in modes):
        read, kind, decimals = (lambda m: m.simulated_first_answer_p50), "simulated", 0
    elif modes and all(m.first_answer_p50 is not None for m in modes):
        read, kind, decimals = (lambda m: m.first_answer_p50), "measured", 1
    else:
        return figures
    title = f"First answer token p50, {kind}"
    return [*figures, ("first-answer", title, "milliseconds per turn", read, _ms(decimals))]


def _charts(summary: Summary, colours: dict[str, str], suffix: str = "", *, accuracy: bool = True) -> str:
    """The per-mode bar charts of one target (``suffix`` keeps chart ids unique when there are several)."""
    modes = summary.modes
    figures: list[Figure] = [
        (
            "calls",
            "Model calls per turn (mean)",
            "model calls / turn",
            lambda m: m.calls_mean,
            lambda v: f"{v:.2f}",
        ),
        (
            "input-tokens",
            "Input tokens per turn (mean)",
            "input tokens / turn",
            lambda m: m.input_tokens_mean,
            grouped,
        ),
        (
            "output-tokens",
            "Output tokens per turn (mean)",
            "output tokens / turn",
            lambda m: m.output_tokens_mean,
            grouped,
        ),
        *_latency_figures(modes),
        ("harness", "Harness overhead p50", "milliseconds per turn", lambda m: m.harness_p50, _ms(1)),
        ("accuracy", "Accuracy", "% of turns passed", lambda m: m.accuracy * 100, lambda v: f"{v:.0f}%"),
    ]
    if not accuracy:
        figures = [figure for figure in figures if figure[0] != "accuracy"]
    charts = [
        bar_chart(
            title,
            [(m.mode, read(m) or 0.0) for m in modes],
            y_label=y_label,
            fmt=fmt,
            y_max=100 if name == "accuracy" else None,
            colours=colours,
            chart_id=f"chart-{name}{suffix}",
        )
        for name, title, y_label, read, fmt in figures
    ]
    return '<div class="chart-grid">' + "".join(charts) + "</div>"


def growth_section(summary: Summary, colours: dict[str, str]) -> str:
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
    order = growth_order(summary)
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


def per_mode_charts(
    summary: Summary, modes: list[str], colours: dict[str, str], *, accuracy: bool = True
) -> str:
    """The per-mode charts, grouped by target (a heading and a row of charts each) for a matrix; no accuracy
    chart when ``accuracy`` is false (a stand-in's turns: no result)."""
    if not summary.matrix:
        charts = _charts(summary, colours, accuracy=accuracy)
        return '<h2 id="per-mode">Per mode</h2>' + _legend(modes, colours) + charts
    groups = "".join(
        target_heading(t.target) + _charts(t.summary, colours, f"-{t.target.name}") for t in summary.targets
    )
    return '<h2 id="per-mode">Per target and mode</h2>' + _legend(modes, colours) + groups


def _cards(modes: Sequence[ModeSummary], colours: dict[str, str], *, accuracy: bool = True) -> str:
    cards = []
    for m in modes:
        rows = [
            *([("model calls / turn", f"{m.calls_mean:.2f} (max {m.calls_max})")] if accuracy else []),
            ("input tokens / turn", grouped(m.input_tokens_mean) if m.tokens_reported else NOT_REPORTED),
            ("output tokens / turn", grouped(m.output_tokens_mean) if m.tokens_reported else NOT_REPORTED),
            ("harness p50", f"{m.harness_p50:.1f} ms"),
        ]
        if m.simulated_p50 is not None:
            rows.append(("simulated latency p50", f"{grouped(m.simulated_p50)} ms"))
        if m.failed_turns:
            rows.append(("turns that failed", str(m.failed_turns)))
        if m.cached_share is not None:
            harness = next(i for i, (name, _) in enumerate(rows) if name == "harness p50")
            rows.insert(harness, ("input served from cache", f"{m.cached_share:.0%}"))
        if m.simulated_first_answer_p50 is not None:
            rows.append(("first answer token p50, simulated", f"{grouped(m.simulated_first_answer_p50)} ms"))
        if m.first_answer_p50 is not None:
            rows.append(("first answer token p50, measured", f"{m.first_answer_p50:.1f} ms"))
        rows.append(("valid plans", valid_plan_cell(m)))
        details = "".join(f"<dt>{escape(k)}</dt><dd>{escape(v)}</dd>" for k, v in rows)
        interval = percent_interval(m.accuracy_interval, 0)
        ci = f" (95% CI {interval}%)" if interval else ""
        lead = (
            f'<div class="big">{m.accuracy:.0%}</div><div class="meta">accuracy{escape(ci)} · {m.passed} of '
            f"{m.turns} turns passed</div>"
            if accuracy
            else f'<div class="big">{m.calls_mean:.2f}</div><div class="meta">model calls per turn (max '
            f"{m.calls_max}) · {m.turns} turns</div>"
        )
        cards.append(
            f'<div class="card" style="--mode:{colours[m.mode]}" data-mode="{escape(m.mode)}">'
            f"<h3>{mode_label(m.mode, colours)}</h3>{lead}<dl>{details}</dl></div>"
        )
    return '<div class="cards">' + "".join(cards) + "</div>"


def findings_section(summary: Summary, colours: dict[str, str], *, accuracy: bool = True) -> list[str]:
    """The headline, the cards and the findings; for a matrix, each target's under its own heading. Without
    accuracy when ``accuracy`` is false (a stand-in's turns: no result)."""
    parts = ['<section id="findings-section"><h2>Findings</h2>']
    top = headline(summary, accuracy=accuracy)
    if top:
        parts.append(f'<p class="headline" id="headline">{escape(top)}</p>')
    if not summary.matrix:
        parts.append(_cards(summary.modes, colours, accuracy=accuracy))
        items = "".join(f"<li>{escape(s)}</li>" for s in findings(summary, None, accuracy=accuracy))
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
    return lambda r, i: heat(value) if (value := accuracy.get((rows[r][0], header[i]))) is not None else ""


def matrix_section(meta: RunMeta, summary: Summary, costs: Sequence[CostEstimate]) -> str:
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
