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

from collections.abc import Callable, Sequence
from html import escape

from benchmarks.cost import CostEstimate, estimate_costs
from benchmarks.report.calibration import agreement_line
from benchmarks.report.findings import OFFLINE_NOTICE, findings, headline
from benchmarks.report.html_parts import (
    PAGE_CLOSE,
    category_anchor,
    cell_anchor,
    filter_anchor,
    heat,
    mode_label,
    page_open,
    scroll_table,
    slug,
    table,
    target_heading,
    turn_columns,
    turn_table,
)
from benchmarks.report.markdown import header_text
from benchmarks.report.runs import (
    SIDE_BY_SIDE,
    GridColumn,
    ReportRun,
    category_grid,
    combined_title,
    first_line,
    regimes_rows,
)
from benchmarks.report.runs import title as report_title
from benchmarks.report.summary import NOT_REPORTED, CategorySummary, ModeSummary, Summary
from benchmarks.report.svg import (
    DISTRIBUTION_CAPTION,
    bar_chart,
    distribution_chart,
    grouped,
    line_chart,
    mode_colours,
)
from benchmarks.report.tables import (
    CONVERSATION_STATE_POLICY,
    INTERVALS_CAPTION,
    KIND_ORDER,
    LATENCY_CAPTION,
    MATRIX_CAPTION,
    PERCENTILE_CAPTION,
    VALID_PLAN_CAPTION,
    FailureGroup,
    cost_caption,
    cost_rows,
    costs_of,
    example_text,
    failure_groups,
    interval_rows,
    matrix_grids,
    mode_description,
    paired_caption,
    paired_rows,
    pass_k_rows,
    percent_interval,
    prefix_cache_text,
    provenance_rows,
    summary_rows,
    targets_table,
    valid_plan_cell,
)
from benchmarks.report.verdict import (
    VERDICT_CAPTION,
    VerdictLine,
    first_answer,
    latency,
    run_verdict,
    verdict_cells,
    verdict_header,
    verdict_lines,
    verdict_title,
)
from benchmarks.results import RunMeta, RunResults


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


def _charts(summary: Summary, colours: dict[str, str], suffix: str = "") -> str:
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


def regime_banner(run: ReportRun, *, labeled: bool = False, anchored: bool = True) -> str:
    """The run's first line, set apart (amber for a structure run, blue for a real model); ``anchored``
    gives it the id ``<prefix>regime`` (once per run on a page)."""
    kind = "structure" if run.regime.structure_only else "real"
    label = f'<span class="run">{escape(run.label)}</span>' if labeled else ""
    ident = f' id="{run.anchor}regime"' if anchored else ""
    return (
        f'<p class="regime {kind}"{ident} data-regime="{escape(run.regime.kind)}">'
        f"{label}{escape(first_line(run.results.meta))}</p>"
    )


def regimes_table(runs: Sequence[ReportRun]) -> str:
    """One row per run of a combined report: its label, regime, provider, model, clock, prefix cache, size."""
    header, rows = regimes_rows(runs)
    head = "".join(f"<th>{escape(h)}</th>" for h in header)
    return scroll_table(
        "regimes", head, ("<tr>" + "".join(f"<td>{escape(c)}</td>" for c in row) + "</tr>" for row in rows)
    )


def _column(run: ReportRun, line: VerdictLine) -> int | None:
    """The index of ``line``'s (target, mode) in the run's turn-by-turn table."""
    columns = turn_columns(run.results, run.summary)
    for i, (target, mode) in enumerate(columns):
        if mode == line.mode.mode and (line.target is None or target == line.target):
            return i
    return None


def _verdict_cell(
    run: ReportRun, line: VerdictLine, name: str, text: str, column: int | None, colours: dict[str, str]
) -> str:
    """One cell of the verdict table: accuracy and failures as a figure over a small second line, linked to
    the turns they count."""
    mode = line.mode
    if name == "mode":
        return f'<td class="mode">{mode_label(text, colours)}</td>'
    if name == "run":
        return f'<td class="mode"><a href="#{run.anchor}run">{escape(text)}</a></td>'
    if name == "target":
        return f'<td class="mode">{escape(text)}</td>'
    main, _, rest = text.partition(" (")
    small = f'<span class="ci">{escape(rest.removesuffix(")"))}</span>' if rest else ""
    if name.startswith("accuracy") and not line.regime.structure_only:
        figure = escape(main)
        if column is not None and mode.turns > mode.passed:
            href = filter_anchor(f"fail-c{column}", run.anchor)
            figure = f'<a href="#{href}" title="the turns it did not pass">{figure}</a>'
        return f'<td class="num acc">{figure}{small}</td>'
    if name == "failed turns" and mode.failed_turns:
        return f'<td class="num"><a href="#{run.anchor}failures">{escape(main)}</a>{small}</td>'
    return f'<td class="num">{escape(text)}</td>'


def _verdict_table(runs: Sequence[ReportRun], colours: dict[str, str]) -> str:
    per_run = [(run, verdict_lines(run.label, run.summary, run.regime)) for run in runs]
    header = verdict_header([line for _, lines in per_run for line in lines])
    head = "".join(f'<th class="{"" if h in ("run", "target", "mode") else "num"}">{h}</th>' for h in header)
    body = []
    for run, lines in per_run:
        for n, line in enumerate(lines):
            cells = verdict_cells(line, header)
            column = _column(run, line)
            html = []
            for name, text in zip(header, cells, strict=True):
                html.append(_verdict_cell(run, line, name, text, column, colours))
            start = ' class="run-start"' if n == 0 and len(runs) > 1 else ""
            body.append(f'<tr{start} data-run="{escape(run.label)}">' + "".join(html) + "</tr>")
    return (
        scroll_table("decision", head, body, "verdict-table")
        + f'<p class="caption">{escape(VERDICT_CAPTION)} Follow an accuracy figure to the turns it did not '
        "pass, a failure count to its kinds and examples.</p>"
    )


def _statements(run: ReportRun, *, labeled: bool) -> str:
    meta = run.results.meta
    verdict = run_verdict(run.summary, run.results.scored_rows, run.regime, meta.model)
    kind = f'<span class="caption">{escape(run.regime.kind)}</span>'
    heading = f'<h3 class="run-verdict">{escape(run.label)} {kind}</h3>' if labeled else ""
    leads = "".join(f'<li class="lead">{escape(s)}</li>' for s in verdict.leads)
    details = "".join(f"<li>{escape(s)}</li>" for s in verdict.details)
    why = (
        f'<details class="why-figures" open><summary>The figures behind it ({len(verdict.details)}): each '
        f"per-turn difference with its paired test</summary><ul>{details}</ul></details>"
        if details
        else ""
    )
    return f'{heading}<ul class="verdicts" data-run="{escape(run.label)}">{leads}</ul>{why}'


def _modes(runs: Sequence[ReportRun], colours: dict[str, str]) -> str:
    modes = list(dict.fromkeys(m.mode for run in runs for _, m in run.summary.cells()))
    items = "".join(f"<dt>{mode_label(m, colours)}</dt><dd>{escape(mode_description(m))}</dd>" for m in modes)
    return f'<dl class="modes" id="modes">{items}</dl>'


def verdict_section(runs: Sequence[ReportRun], colours: dict[str, str]) -> str:
    """The verdict: table, sentences per run, the scorer check and what each mode is."""
    labeled = len(runs) > 1
    return (
        f'<section class="decision" id="verdict"><h2>{escape(verdict_title(runs))}</h2>'
        + _verdict_table(runs, colours)
        + "".join(_statements(run, labeled=labeled) for run in runs)
        + f'<p class="calibration" id="scorer-check">{escape(agreement_line())}</p>'
        + _modes(runs, colours)
        + "</section>"
    )


def _distributions(run: ReportRun, colours: dict[str, str], *, labeled: bool) -> str:
    simulated, clock = run.regime.simulated, run.regime.clock
    prefix = f"{run.label}: " if labeled else ""
    return "".join(
        distribution_chart(
            f"{prefix}{title}, {clock}",
            [(label, colours.get(mode, "#7f7f7f"), values) for label, mode, values in run.per_cell(read)],
            x_label=f"milliseconds per turn, {clock}",
            chart_id=f"{run.anchor}chart-{name}-distribution",
        )
        for name, title, read in (
            ("latency", "Latency per turn", latency(simulated)),
            ("first-answer", "Time to the first answer token", first_answer(simulated)),
        )
    )


def distribution_section(runs: Sequence[ReportRun], colours: dict[str, str]) -> str:
    """Every run's latency and first-answer distributions, per mode."""
    labeled = len(runs) > 1
    return (
        '<section id="latency-distribution"><h2>Latency distributions</h2>'
        f'<p class="caption">{escape(DISTRIBUTION_CAPTION)} Simulated times are the latency profile\'s model '
        "time (plus harness time for latency); measured ones are wall time on the run's machine.</p>"
        + "".join(_distributions(run, colours, labeled=labeled) for run in runs)
        + "</section>"
    )


def _cell(run: ReportRun, found: CategorySummary | None) -> str:
    if found is None:
        return '<td class="num">–</td>'
    link = f'href="#{category_anchor(found.category, run.anchor)}"'
    calls = f"{found.calls_mean:.1f} calls/turn"
    if run.regime.structure_only:
        return f'<td class="num"><a {link}>{calls}</a><span class="ci">{found.turns} turns</span></td>'
    interval = percent_interval(found.accuracy_interval, 0)
    return (
        f'<td class="num"{heat(found.accuracy)}><a {link}>{found.accuracy:.0%}</a>'
        f'<span class="ci">[{escape(interval)}] · {found.turns} turns · {calls}</span></td>'
    )


def categories_section(runs: Sequence[ReportRun], colours: dict[str, str]) -> str:
    """The section: a caption, then the table."""
    labeled = len(runs) > 1
    columns, categories, found = category_grid(runs)

    def name(column: GridColumn) -> str:
        run, target, mode = column
        lead = " · ".join(part for part in (run.label if labeled else "", target or "") if part)
        return (escape(lead) + "<br>" if lead else "") + mode_label(mode, colours)

    head = "<th>category</th>" + "".join(f'<th class="num">{name(c)}</th>' for c in columns)
    body = [
        f"<tr><td>{escape(category)}</td>"
        + "".join(_cell(run, found.get((i, category))) for i, (run, _, _) in enumerate(columns))
        + "</tr>"
        for category in categories
    ]
    return (
        '<h2 id="categories">Results per category</h2>'
        '<p class="caption">Accuracy per scenario category (share of turns passed, Wilson 95% interval; red '
        "is low, green is high) and model calls per turn; a structure run (offline stand-in) shows calls "
        "only. Follow a figure to the category's turns.</p>" + scroll_table("categories", head, body)
    )


LINKS_SHOWN = 30
"""Turn links listed per kind (the rest are counted)."""

FAILURES_CAPTION = (
    "Turns not passed, per kind: a failure kind of the contract (docs/failures.md) or an answer, operation "
    "or state that failed the scorer's checks. One example of each, then links to every turn of the kind "
    "(repetition 1). A failed turn never passes."
)


def _group_anchor(run: ReportRun, group: FailureGroup) -> str:
    return f"{run.anchor}failure-{slug(group.target)}-{slug(group.mode)}-{slug(group.kind)}"


def _table(run: ReportRun, groups: Sequence[FailureGroup], colours: dict[str, str]) -> str:
    matrix = run.summary.matrix
    columns = list(dict.fromkeys((g.target, g.mode) for g in groups))
    kinds = sorted({g.kind for g in groups}, key=KIND_ORDER.index)
    by_key = {(g.target, g.mode, g.kind): g for g in groups}

    def name(column: tuple[str, str]) -> str:
        return (escape(column[0]) + " · " if matrix else "") + mode_label(column[1], colours)

    head = "<th>kind</th>" + "".join(f'<th class="num">{name(c)}</th>' for c in columns)
    body = []
    for kind in kinds:
        cells = []
        for target, mode in columns:
            group = by_key.get((target, mode, kind))
            cells.append(
                f'<td class="num"><a href="#{_group_anchor(run, group)}">{len(group.turns)}</a></td>'
                if group is not None
                else '<td class="num">0</td>'
            )
        body.append(f"<tr><td>{escape(kind)}</td>{''.join(cells)}</tr>")
    return scroll_table("failures", head, body)


def _examples(run: ReportRun, groups: Sequence[FailureGroup], colours: dict[str, str]) -> str:
    columns = turn_columns(run.results, run.summary)
    matrix = run.summary.matrix
    items = []
    for group in groups:
        index = columns.index((group.target, group.mode)) if (group.target, group.mode) in columns else None
        shown = [row for row in group.turns if row.repetition == 1]
        links = (
            [
                f'<a href="#{cell_anchor(r.scenario, r.turn, index, run.anchor)}">{escape(r.scenario)} · '
                f"{r.turn}</a>"
                for r in shown[:LINKS_SHOWN]
            ]
            if index is not None
            else []
        )
        more = len(group.turns) - len(links)
        rest = f" and {more} more" if links and more else ""
        who = (escape(group.target) + " · " if matrix else "") + mode_label(group.mode, colours)
        items.append(
            f'<li id="{_group_anchor(run, group)}"><span class="kind">{who} · {escape(group.kind)}</span> '
            f"({len(group.turns)} turn{'s' if len(group.turns) != 1 else ''}). Example: "
            f"{escape(example_text(group.example))}"
            + (f"<br>Turns: {' '.join(links)}{rest}" if links else "")
            + "</li>"
        )
    return f'<ul class="failure-examples">{"".join(items)}</ul>'


def failures_section(runs: Sequence[ReportRun], colours: dict[str, str]) -> str:
    """The section: per run (under its own heading when there are several) the table and the examples."""
    labeled = len(runs) > 1
    parts = [
        '<section id="failures-section"><h2 id="failures">Failures, with one example of each kind</h2>'
        f'<p class="caption">{escape(FAILURES_CAPTION)}</p>'
    ]
    for run in runs:
        groups = failure_groups(run.results.scored_rows)
        anchor = f' id="{run.anchor}failures"' if labeled else ""
        if labeled:
            parts.append(f'<h3 class="target"{anchor}>{escape(run.label)}</h3>')
        if not groups:
            parts.append('<p class="caption">Every turn passed.</p>')
            continue
        parts.append(_table(run, groups, colours) + _examples(run, groups, colours))
    parts.append("</section>")
    return "".join(parts)


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
        page_open(report_title(meta)),
        f"<header><h1>{escape(report_title(meta))}</h1>",
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


def _run_section(run: ReportRun, colours: dict[str, str]) -> str:
    """One run's details: its first line, settings, findings, summary, paired comparison and turns."""
    results, summary = run.results, run.summary
    parts = [
        f'<section class="run" id="{run.anchor}run"><h2>Run {escape(run.label)}</h2>',
        regime_banner(run, anchored=False),
        f'<p class="meta">{escape(header_text(results.meta, summary).replace("`", ""))}'
        + (f" Results: <code>{escape(str(run.path))}</code>." if run.path is not None else "")
        + "</p>",
        *(f'<p class="notice read-warning"><b>Warning:</b> {escape(w)}.</p>' for w in results.read_warnings),
        '<ul class="findings">' + "".join(f"<li>{escape(s)}</li>" for s in findings(summary, None)) + "</ul>",
        f"<h3>Summary of {escape(run.label)}</h3>",
        table(*summary_rows(summary), css_class="summary", colours=colours),
    ]
    paired = paired_rows(summary)
    if paired is not None:
        parts += [
            f"<h3>Paired comparison of {escape(run.label)}</h3>",
            table(*paired, css_class="paired"),
            f'<p class="caption">{escape(paired_caption(summary))}</p>',
        ]
    parts.append(
        f'<h3 id="{run.anchor}turn-by-turn">Turns of {escape(run.label)}</h3>'
        + turn_table(results, turn_columns(results, summary), colours, run.anchor)
        + "</section>"
    )
    return "".join(parts)


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
        verdict_section(runs, colours),
        distribution_section(runs, colours),
        categories_section(runs, colours),
        failures_section(runs, colours),
        *(_run_section(run, colours) for run in runs),
        PAGE_CLOSE,
    ]
    return "\n".join(parts)
