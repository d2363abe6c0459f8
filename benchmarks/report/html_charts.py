"""The charts of ``report.html``: the per-mode bar charts (one colour per mode throughout) and the
context-growth line chart, per target for a matrix."""

from __future__ import annotations

from collections.abc import Sequence
from html import escape

from benchmarks.report.aggregate import ModeSummary, Summary
from benchmarks.report.html_parts import mode_label, target_heading
from benchmarks.report.svg import bar_chart, grouped, line_chart


def _legend(modes: Sequence[str], colours: dict[str, str]) -> str:
    items = "".join(f'<li data-mode="{escape(m)}">{mode_label(m, colours)}</li>' for m in modes)
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


def per_mode_charts(summary: Summary, modes: list[str], colours: dict[str, str]) -> str:
    """The per-mode charts, grouped by target (a heading and a row of charts each) for a matrix."""
    if not summary.matrix:
        return '<h2 id="per-mode">Per mode</h2>' + _legend(modes, colours) + _charts(summary, colours)
    groups = "".join(
        target_heading(t.target) + _charts(t.summary, colours, f"-{t.target.name}") for t in summary.targets
    )
    return '<h2 id="per-mode">Per target and mode</h2>' + _legend(modes, colours) + groups
