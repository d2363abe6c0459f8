"""``report.html``: one self-contained page (inline CSS and SVG, no script, no CDN) that prints on A4, of one
run or of several side by side.

One run: the regime, the verdict, the latency distributions, results per category, the failures, the
findings with one card per mode, the summary, the paired comparison, the per-mode charts (one colour per
mode throughout), the context-growth curve, pass^k, intervals over repetitions, cost per 1,000 turns, the
provenance, then every turn side by side. A run with several targets (models) groups the findings, cards and
charts by target, adds the model matrix and gives the other tables a target column.

Several runs: every run's regime and a table of them, the same first sections with a row (or a column) per
run, then per run its findings, summary, paired comparison and turns. Figures of different runs are never
pooled or tested against each other."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from html import escape

from benchmarks.cost import CostEstimate, estimate_costs
from benchmarks.report.cost_table import cost_caption, cost_rows, costs_of
from benchmarks.report.findings import OFFLINE_NOTICE, findings, pipeline_check
from benchmarks.report.html_decision import opening_sections, regime_banner, regimes_table
from benchmarks.report.html_figures import findings_section, growth_section, matrix_section, per_mode_charts
from benchmarks.report.html_parts import (
    PAGE_CLOSE,
    failed_turn_keys,
    page_open,
    table,
    turn_columns,
    turn_table,
)
from benchmarks.report.markdown import header_text
from benchmarks.report.run_facts import CONVERSATION_STATE_POLICY, prefix_cache_text, provenance_rows
from benchmarks.report.runs import SIDE_BY_SIDE, ReportRun, combined_title
from benchmarks.report.runs import title as report_title
from benchmarks.report.summary import Summary
from benchmarks.report.svg import mode_colours
from benchmarks.report.tables import (
    INTERVALS_CAPTION,
    LATENCY_CAPTION,
    PERCENTILE_CAPTION,
    VALID_PLAN_CAPTION,
    interval_rows,
    paired_caption,
    paired_rows,
    pass_k_rows,
    summary_rows,
    without_accuracy,
)
from benchmarks.report.time_breakdown import BREAKDOWN_CAPTION, CALLS_CAPTION, breakdown_table, calls_table
from benchmarks.results import RunMeta, RunResults
from benchmarks.transcripts import TRANSCRIPTS_FILE, CallTranscript, TurnKey, read_transcripts

_SECTIONS = (
    ("verdict", "Verdict"),
    ("latency-distribution", "Latency distributions"),
    ("categories", "Per category"),
    ("failures", "Failures"),
    ("findings-section", "Findings"),
    ("matrix", "Model matrix"),
    ("summary", "Summary"),
    ("paired", "Paired comparison"),
    ("time", "Where the time goes"),
    ("per-mode", "Per mode"),
    ("growth", "Context growth"),
    ("pass-k", "pass^k"),
    ("intervals", "Intervals"),
    ("cost", "Cost"),
    ("provenance", "Provenance"),
    ("turn-by-turn", "Turn by turn"),
)


def _warnings(results: RunResults) -> list[str]:
    return [f'<p class="notice read-warning"><b>Warning:</b> {escape(w)}.</p>' for w in results.read_warnings]


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


def render_html(
    results: RunResults,
    summary: Summary,
    cost: CostEstimate | Sequence[CostEstimate] | None = None,
    *,
    transcripts: Mapping[TurnKey, Sequence[CallTranscript]] | None = None,
) -> str:
    """The whole HTML report as one string (``cost`` defaults to the packaged pricing table's estimate, one
    per target); ``transcripts`` holds the model calls of failed turns, folded into their cells."""
    meta = results.meta
    costs = (costs_of(cost) if cost is not None else None) or estimate_costs(results)
    cells = summary.cells()
    modes = list(dict.fromkeys(m.mode for _, m in cells))
    colours = mode_colours(modes)
    structure_only = meta.offline and not summary.matrix  # a stand-in's verdicts check the pipeline only
    paired = None if structure_only else paired_rows(summary)
    intervals = None if structure_only else interval_rows(summary)
    breakdown, calls = breakdown_table(results.rows), calls_table(results.rows)
    growth = summary.growth is not None or any(t.summary.growth is not None for t in summary.targets)
    present = {
        "matrix": summary.matrix,
        "growth": growth,
        "paired": paired is not None,
        "time": breakdown is not None,
        "intervals": intervals is not None,
        "pass-k": not structure_only,
        "provenance": meta.provenance is not None,
    }
    toc = " ".join(
        f'<a href="#{anchor}">{escape(title)}</a>' for anchor, title in _SECTIONS if present.get(anchor, True)
    )
    run = ReportRun("", results, summary, costs)
    parts = [
        page_open(report_title(meta)),
        f"<header><h1>{escape(report_title(meta))}</h1>",
        regime_banner(run),
        _header_meta(meta, summary),
        *_warnings(results),
    ]
    if meta.offline:
        parts.append(
            '<p class="notice" id="offline-notice"><b>Offline stand-in model.</b> '
            f"{escape(OFFLINE_NOTICE)} {escape(pipeline_check(summary).capitalize())}.</p>"
        )
    parts.append(f'<p class="meta" id="state-policy">{escape(CONVERSATION_STATE_POLICY)}</p>')
    parts.append(f'<nav class="toc">{toc}</nav></header>')
    parts += opening_sections([run], colours)
    parts += findings_section(summary, colours, accuracy=not structure_only)
    if summary.matrix:
        parts.append(matrix_section(meta, summary, costs))
    summary_table = without_accuracy(summary_rows(summary)) if structure_only else summary_rows(summary)
    parts.append(
        '<h2 id="summary">Summary</h2>'
        + table(*summary_table, css_class="summary", colours=colours)
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
    if breakdown is not None and calls is not None:
        parts.append(
            '<h2 id="time">Where the time goes</h2>'
            + table(*breakdown, css_class="time-breakdown")
            + f'<p class="caption">{escape(BREAKDOWN_CAPTION)}</p>'
            + table(*calls, css_class="model-calls")
            + f'<p class="caption">{escape(CALLS_CAPTION)}</p>'
        )
    parts.append(per_mode_charts(summary, modes, colours, accuracy=not structure_only))
    parts.append(growth_section(summary, colours))
    if not structure_only:
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
    turns = turn_table(results, columns, colours, transcripts=transcripts)
    parts.append('<h2 id="turn-by-turn">Turn by turn</h2>' + turns)
    parts.append(PAGE_CLOSE)
    return "\n".join(parts)


def _run_section(run: ReportRun, colours: dict[str, str]) -> str:
    """One run's details: its first line, settings, findings, summary, paired comparison and turns."""
    results, summary = run.results, run.summary
    accuracy = not run.regime.structure_only  # a stand-in's verdicts check the pipeline only
    sentences = findings(summary, None, accuracy=accuracy)
    rows = summary_rows(summary) if accuracy else without_accuracy(summary_rows(summary))
    parts = [
        f'<section class="run" id="{run.anchor}run"><h2>Run {escape(run.label)}</h2>',
        regime_banner(run, anchored=False),
        f'<p class="meta">{escape(header_text(results.meta, summary).replace("`", ""))}'
        + (f" Results: <code>{escape(str(run.path))}</code>." if run.path is not None else "")
        + "</p>",
        *_warnings(results),
        '<ul class="findings">' + "".join(f"<li>{escape(s)}</li>" for s in sentences) + "</ul>",
        f"<h3>Summary of {escape(run.label)}</h3>",
        table(*rows, css_class="summary", colours=colours),
    ]
    paired = paired_rows(summary) if accuracy else None
    if paired is not None:
        parts += [
            f"<h3>Paired comparison of {escape(run.label)}</h3>",
            table(*paired, css_class="paired"),
            f'<p class="caption">{escape(paired_caption(summary))}</p>',
        ]
    parts.append(
        f'<h3 id="{run.anchor}turn-by-turn">Turns of {escape(run.label)}</h3>'
        + turn_table(results, turn_columns(results, summary), colours, run.anchor, _transcripts_of(run))
        + "</section>"
    )
    return "".join(parts)


def _transcripts_of(run: ReportRun) -> dict[TurnKey, list[CallTranscript]] | None:
    """The model calls of the run's failed turns, from the transcripts file beside its results file."""
    if run.path is None:
        return None
    return read_transcripts(run.path.parent / TRANSCRIPTS_FILE, failed_turn_keys(run.results))


def render_combined_html(runs: Sequence[ReportRun]) -> str:
    """The page of several runs (each a :class:`ReportRun` with its own id prefix)."""
    modes = list(dict.fromkeys(m.mode for run in runs for _, m in run.summary.cells()))
    colours = mode_colours(modes)
    heading = combined_title(len(runs))
    toc = [f'<a href="#{anchor}">{escape(text)}</a>' for anchor, text in _SECTIONS[:4]]
    toc += [f'<a href="#{run.anchor}run">run {escape(run.label)}</a>' for run in runs]
    parts = [
        page_open(heading),
        f"<header><h1>{escape(heading)}</h1>",
        '<ul class="regimes" id="regimes">'
        + "".join(f"<li>{regime_banner(run, labeled=True)}</li>" for run in runs)
        + "</ul>",
        regimes_table(runs),
        f'<p class="meta">{escape(SIDE_BY_SIDE)}</p>',
        f'<nav class="toc">{" ".join(toc)}</nav></header>',
        *opening_sections(runs, colours),
        *(_run_section(run, colours) for run in runs),
        PAGE_CLOSE,
    ]
    return "\n".join(parts)
