"""``report.md``: the findings, the summary with accuracy intervals, the paired comparison, per-category
accuracy, pass^k, intervals over repetitions, cost per 1,000 turns, the growth curve's ends, the run's
provenance and the failing turns.

A run with several targets (models) adds the model matrix (one grid per figure: targets as rows, modes as
columns) and gives every per-mode table a ``target`` column; each target's findings and paired comparisons
are its own (modes are compared within a target, never across)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from benchmarks.cost import CostEstimate, estimate_costs
from benchmarks.report.aggregate import ModeSummary, Summary, tokens_text
from benchmarks.report.findings import OFFLINE_NOTICE, findings, headline
from benchmarks.results import RunMeta, RunResults
from benchmarks.stats import Interval
from shared.failures import FAILURE_KINDS

Table = tuple[list[str], list[list[str]]]
"""A table's header and rows."""

CONVERSATION_STATE_POLICY = (
    "Conversation state: every mode stores the state the ERP derives from the operations it ran (year, "
    "customer, product, last operations); the planner's call 2 may add its own `estado`/`memoria`; tool "
    "calling adds them only with --structured."
)
"""What each mode keeps between turns, said in every report (issue 13: like for like)."""

MATRIX_CAPTION = (
    "Targets as rows, modes as columns. Every figure is computed from one target's turns; statistics that "
    "compare modes (the paired comparison) are computed within a target, never across targets."
)


def _ms(value: float | None) -> str:
    return "–" if value is None else f"{value:.1f}"


def cell(text: str) -> str:
    """Text safe inside a Markdown table cell: one line, pipes escaped."""
    return " ".join(text.split()).replace("|", "\\|")


def clip(text: str, limit: int) -> str:
    """``text`` cut to at most ``limit`` characters at a word boundary, with an ellipsis when cut."""
    if len(text) <= limit:
        return text
    cut = text[: limit - 1]
    head = cut.rsplit(" ", 1)[0] if " " in cut[limit // 2 :] else cut
    return head.rstrip(" ;,") + "…"


_LABELS = frozenset({"mode", "category", "failure kind", "base vs other"})
"""Columns that name a row when they follow a ``target`` column."""


def render_table(header: list[str], rows: list[list[str]], align: str = "") -> list[str]:
    """A Markdown table; ``align`` has one ``l``/``r`` per column (default: the columns that name a row, such
    as ``target`` then ``mode``, left; figures right)."""
    if not align:
        labels = 1
        while labels < len(header) - 1 and header[labels - 1] == "target" and header[labels] in _LABELS:
            labels += 1
        align = "l" * labels + "r" * (len(header) - labels)
    rule = "|" + "|".join("--:" if a == "r" else "---" for a in align) + "|"
    lines = ["| " + " | ".join(cell(h) for h in header) + " |", rule]
    lines += ["| " + " | ".join(cell(c) for c in row) + " |" for row in rows]
    return lines


def percent_interval(interval: Interval | None, decimals: int = 1) -> str:
    """``"95.8–99.9"``: an interval of a proportion in percent (no sign), or ``""``."""
    if interval is None:
        return ""
    return f"{interval.low * 100:.{decimals}f}–{interval.high * 100:.{decimals}f}"


def accuracy_cell(mode: ModeSummary) -> str:
    """``"99.2% (95.8–99.9)"``: accuracy and its Wilson 95% interval."""
    interval = percent_interval(mode.accuracy_interval)
    return f"{mode.accuracy:.1%}" + (f" ({interval})" if interval else "")


NOT_RECORDED = "n/a"
"""What a figure the rows do not carry shows (e.g. the valid-plan rate before the engines record it)."""


def valid_plan_cell(mode: ModeSummary) -> str:
    """``"98.5% (130/132)"``: the share of turns whose request for operations was valid, with its count;
    :data:`NOT_RECORDED` when no turn says."""
    rate = mode.valid_plan_rate
    if rate is None:
        return NOT_RECORDED
    return f"{rate:.1%} ({mode.plans_valid}/{mode.plans_checked})"


VALID_PLAN_CAPTION = (
    "Valid plans: turns whose request for operations was valid as written (planner: the plan parsed and "
    "passed validation; tool calling: every tool call named a known operation with valid arguments), out "
    f"of the turns whose engine recorded it ({NOT_RECORDED}: not recorded)."
)


def prefix_cache_text(meta: RunMeta) -> str | None:
    """``"prefix cache modelled: yes"`` (or ``no``, ``not recorded``) when an offline model ran."""
    if not meta.any_offline:
        return None
    value = {True: "yes", False: "no", None: "not recorded"}[meta.prompt_cache]
    return f"prefix cache modelled: {value}"


def targets_text(meta: RunMeta) -> str:
    """``"`a` (offline offline-sales), `b` (ollama llama3.1:8b at http://…)"``."""
    return ", ".join(f"`{t.name}` ({t.label})" for t in meta.targets)


def lead_header(summary: Summary) -> list[str]:
    """The columns naming a row of a per-mode table: ``mode``, or ``target`` and ``mode`` for a matrix."""
    return ["target", "mode"] if summary.matrix else ["mode"]


def _lead(target: str | None, mode: ModeSummary) -> list[str]:
    return [mode.mode] if target is None else [target, mode.mode]


def per_target(summary: Summary, table: Callable[[Summary], Table | None]) -> Table | None:
    """``table`` of a one-target summary; for a matrix, each target's table stacked with a ``target``
    column first (the header of the widest). ``None`` when no target has the table."""
    if not summary.matrix:
        return table(summary)
    header: list[str] = []
    rows: list[list[str]] = []
    for entry in summary.targets:
        found = table(entry.summary)
        if found is None:
            continue
        if len(found[0]) + 1 > len(header):
            header = ["target", *found[0]]
        rows += [[entry.target.name, *row] for row in found[1]]
    return (header, rows) if header else None


LATENCY_CAPTION = (
    "Latency is a turn's measured model time plus harness time; simulated replaces the measured model time "
    "with the latency profile's. First answer is the time from a turn's start until the first token of the "
    "answer reaches the reader (the benchmark streams every turn), measured on this machine; simulated first "
    "answer is the profile's model time to that token (the calls before the answering one plus that call's "
    "first tokens), harness time not included. First-answer figures count the turns that streamed answer "
    "text (failed turns without one are left out)."
)
"""What the summary table's latency columns are, measured and simulated (reports and README block)."""


def _pair(p50: float | None, p95: float | None) -> str:
    return f"{_ms(p50)} / {_ms(p95)}"


def summary_rows(summary: Summary) -> tuple[list[str], list[list[str]]]:
    """The per-mode summary table, shared by the Markdown and HTML reports and the README block.

    Time to the first answer token sits beside total latency, measured then simulated; the cached-input and
    first-answer columns appear only when some mode has the figure.
    """
    cells = summary.cells()
    modes = [m for _, m in cells]
    cached = any(m.cached_share is not None for m in modes)
    first = any(m.first_answer_p50 is not None for m in modes)
    simulated_first = any(m.simulated_first_answer_p50 is not None for m in modes)
    header = [
        *lead_header(summary),
        "turns",
        "accuracy (95% CI)",
        "calls/turn (mean / max)",
        "input tok/turn",
        *(["cached input"] if cached else []),
        "output tok/turn",
        "latency p50 / p95 ms",
        *(["first answer p50 / p95 ms"] if first else []),
        "simulated p50 / p95 ms",
        *(["simulated first answer p50 / p95 ms"] if simulated_first else []),
        "harness p50 / p95 ms",
        "valid plans",
        "failed",
    ]
    rows = [
        [
            *_lead(target, m),
            str(m.turns),
            accuracy_cell(m),
            f"{m.calls_mean:.2f} / {m.calls_max}",
            tokens_text(m, m.input_tokens_mean),
            *([tokens_text(m, m.cached_share, ".0%")] if cached else []),
            tokens_text(m, m.output_tokens_mean),
            _pair(m.latency_p50, m.latency_p95),
            *([_pair(m.first_answer_p50, m.first_answer_p95)] if first else []),
            _pair(m.simulated_p50, m.simulated_p95),
            *([_pair(m.simulated_first_answer_p50, m.simulated_first_answer_p95)] if simulated_first else []),
            f"{m.harness_p50:.2f} / {m.harness_p95:.2f}",
            valid_plan_cell(m),
            str(m.failed_turns),
        ]
        for target, m in cells
    ]
    return header, rows


def category_rows(summary: Summary) -> tuple[list[str], list[list[str]]]:
    """Accuracy per category (rows) and mode (columns): ``"92% [65–99] (12)"``; per target for a matrix."""
    if summary.matrix:
        return per_target(summary, category_rows) or (["target", "category"], [])
    modes = [m.mode for m in summary.modes]
    cells: dict[str, dict[str, str]] = {}
    for c in summary.categories:
        interval = percent_interval(c.accuracy_interval, 0)
        cells.setdefault(c.category, {})[c.mode] = f"{c.accuracy:.0%}" + (
            f" [{interval}] ({c.turns})" if interval else f" ({c.turns})"
        )
    header = ["category", *modes]
    rows = [[category, *(per.get(mode, "–") for mode in modes)] for category, per in sorted(cells.items())]
    return header, rows


def _signed_points(value: float) -> str:
    return f"{value * 100:+.1f}".replace("-", "−")


def paired_rows(summary: Summary) -> tuple[list[str], list[list[str]]] | None:
    """The base mode against each other mode on the turns both ran (within each target of a matrix);
    ``None`` with a single mode."""
    if summary.matrix:
        return per_target(summary, paired_rows)
    if not summary.paired:
        return None
    header = [
        "base vs other",
        "paired turns",
        "both passed",
        "only base",
        "only other",
        "neither",
        "accuracy base / other",
        "difference (points)",
        "95% interval",
        "McNemar p",
        "verdict",
    ]
    rows = []
    for p in summary.paired:
        interval = (
            f"{_signed_points(p.interval.low)} to {_signed_points(p.interval.high)}" if p.interval else "–"
        )
        if p.established:
            verdict = f"{p.base if p.difference > 0 else p.other} more accurate"
        elif p.base_only == p.other_only == 0:
            verdict = "same turns passed"
        else:
            verdict = "no difference established"
        rows.append(
            [
                f"{p.base} vs {p.other}",
                str(p.pairs),
                str(p.both),
                str(p.base_only),
                str(p.other_only),
                str(p.neither),
                f"{p.base_accuracy:.1%} / {p.other_accuracy:.1%}",
                _signed_points(p.difference),
                interval,
                f"{p.p_value:.3f}",
                verdict,
            ]
        )
    return header, rows


PAIRED_CAPTION = (
    "Both modes on the same turns (scenario, turn, repetition). McNemar's exact test counts the turns only "
    "one mode passed; the interval of the accuracy difference is a bootstrap that resamples whole "
    "conversations (2,000 draws, fixed seed). A difference is stated only when the interval excludes 0 "
    "and p < 0.05."
)


def interval_rows(summary: Summary) -> tuple[list[str], list[list[str]]] | None:
    """Bootstrap intervals of latency and tokens per mode (and target); ``None`` without repetitions."""
    cells = summary.cells()
    modes = [m for _, m in cells]
    if not any(m.intervals for m in modes):
        return None

    def cell(mode: ModeSummary, name: str, value: float | None, decimals: int) -> str:
        interval = mode.intervals.get(name)
        if value is None or interval is None:
            return "–"
        return f"{value:.{decimals}f} ({interval.low:.{decimals}f}–{interval.high:.{decimals}f})"

    first = any("first_answer_p50" in m.intervals for m in modes)
    simulated_first = any("simulated_first_answer_p50" in m.intervals for m in modes)
    header = [
        *lead_header(summary),
        "latency mean ms",
        "latency p50 ms",
        *(["first answer p50 ms"] if first else []),
        "simulated p50 ms",
        *(["simulated first answer p50 ms"] if simulated_first else []),
        "input tok/turn",
        "output tok/turn",
    ]
    rows = [
        [
            *_lead(target, m),
            cell(m, "latency_mean", m.latency_mean, 1),
            cell(m, "latency_p50", m.latency_p50, 1),
            *([cell(m, "first_answer_p50", m.first_answer_p50, 1)] if first else []),
            cell(m, "simulated_p50", m.simulated_p50, 0),
            *(
                [cell(m, "simulated_first_answer_p50", m.simulated_first_answer_p50, 0)]
                if simulated_first
                else []
            ),
            cell(m, "input_tokens_mean", m.input_tokens_mean, 0),
            cell(m, "output_tokens_mean", m.output_tokens_mean, 0),
        ]
        for target, m in cells
    ]
    return header, rows


def _costs(cost: CostEstimate | Sequence[CostEstimate]) -> list[CostEstimate]:
    return [cost] if isinstance(cost, CostEstimate) else list(cost)


def usd_cell(value: float | None) -> str:
    """USD per 1,000 turns, or ``–`` for a model without a price."""
    return "–" if value is None else f"{value:.2f}"


def cost_rows(cost: CostEstimate | Sequence[CostEstimate]) -> tuple[list[str], list[list[str]]]:
    """Token means and USD per 1,000 turns per mode (and target, when given one estimate per target)."""
    costs = _costs(cost)
    matrix = any(c.target is not None for c in costs)
    priced = {c.priced_as for c in costs}
    references = [name for name in costs[0].reference if name not in priced] if costs else []
    header = [
        *(["target", "mode"] if matrix else ["mode"]),
        "input tok/turn",
        "cached input tok/turn",
        "output tok/turn",
        "USD per 1,000 turns",
        *(f"at {name} prices" for name in references),
    ]
    rows = [
        [
            *([c.target or ""] if matrix else []),
            m.mode,
            *(
                [
                    f"{m.input_tokens_mean:.0f}",
                    f"{m.cached_input_tokens_mean:.0f}",
                    f"{m.output_tokens_mean:.0f}",
                ]
                if m.tokens_reported
                else ["not reported"] * 3
            ),
            usd_cell(m.usd_per_1000_turns) if m.tokens_reported else "not reported",
            *(f"{m.reference_usd[name]:.2f}" if name in m.reference_usd else "–" for name in references),
        ]
        for c in costs
        for m in c.modes
    ]
    return header, rows


def cost_caption(cost: CostEstimate | Sequence[CostEstimate]) -> str:
    """The prices' source (per target in a matrix), and what the reference columns are."""
    costs = _costs(cost)
    if any(c.target is not None for c in costs) and len({c.note for c in costs}) > 1:
        text = "Prices: " + "; ".join(f"{c.target}: {c.note}" for c in costs) + "."
    elif len(costs) > 1:
        text = f"Prices (every target): {costs[0].note}."
    else:
        text = f"Prices: {costs[0].note}." if costs else "Prices: none."
    priced = {c.priced_as for c in costs}
    references = [name for name in costs[0].reference if name not in priced] if costs else []
    if references:
        text += (
            f" The {', '.join(references)} columns price the same tokens at those hosted models' prices "
            "(benchmarks/pricing.yaml), for a sense of scale."
        )
    return text


def provenance_rows(meta: RunMeta) -> list[tuple[str, str]]:
    """``(what, value)`` pairs of the run's provenance (empty for files that predate it)."""
    p = meta.provenance
    if p is None:
        return []
    commit = "unknown" if p.git_commit is None else p.git_commit[:12] + (" (dirty)" if p.git_dirty else "")
    rows = [
        ("code", f"git {commit}"),
        ("python", f"{p.python} on {p.platform}"),
        ("host", p.host),
        ("packages", ", ".join(f"{name} {version}" for name, version in p.packages.items())),
    ]
    identities = (
        [(f"model {name}", identity) for name, identity in p.models.items()]
        if meta.matrix and p.models
        else [("model", p.model)]
        if p.model is not None
        else []
    )
    for what, identity in identities:
        model = f"{identity.provider} {identity.model or ''}".strip()
        if identity.base_url:
            model += f" at {identity.base_url}"
        if identity.digest:
            model += f", digest {identity.digest[:12]}"
        if identity.modified_at:
            model += f", modified {identity.modified_at}"
        details = ", ".join(f"{k} {v}" for k, v in identity.details.items() if not isinstance(v, dict))
        rows.append((what, model + (f" ({details})" if details else "")))
    rows += [(f"prompt {name}", digest[:12]) for name, digest in p.prompt_hashes.items()]
    if p.catalog_hash:
        rows.append(("operations catalog", p.catalog_hash[:12]))
    if p.tool_schema_hash:
        rows.append(("tool schemas", p.tool_schema_hash[:12]))
    rows += [("note", note) for note in p.notes]
    return rows


def failure_rows(summary: Summary) -> tuple[list[str], list[list[str]]] | None:
    """Failed turns per failure kind (rows) and mode (columns), per target for a matrix; ``None`` when no
    turn failed."""
    if summary.matrix:
        return per_target(summary, failure_rows)
    kinds = [kind for kind in FAILURE_KINDS if any(kind in m.failures for m in summary.modes)]
    if not kinds:
        return None
    header = ["failure kind", *(m.mode for m in summary.modes)]
    rows = [[kind, *(str(m.failures.get(kind, 0)) for m in summary.modes)] for kind in kinds]
    return header, rows


def pass_k_rows(summary: Summary) -> tuple[list[str], list[list[str]]]:
    """pass^1 … pass^k per mode (and target)."""
    ks = list(range(1, summary.repetitions + 1))
    header = [*lead_header(summary), *(f"pass^{k}" for k in ks)]
    rows = [
        [*_lead(target, m), *(f"{m.pass_k[k]:.1%}" if k in m.pass_k else "–" for k in ks)]
        for target, m in summary.cells()
    ]
    return header, rows


def matrix_grids(
    summary: Summary, cost: CostEstimate | Sequence[CostEstimate]
) -> list[tuple[str, list[str], list[list[str]]]]:
    """The model matrix: ``(title, header, rows)`` per figure, targets as rows and modes as columns; a figure
    no cell has (cached share, simulated latency, first answer) is left out. Empty for one target."""
    if not summary.matrix:
        return []
    modes = list(dict.fromkeys(m.mode for _, m in summary.cells()))
    costs = {c.target: c for c in _costs(cost)}

    def ms(value: float | None) -> str:
        return "–" if value is None else f"{value:,.0f}" if value >= 100 else f"{value:.1f}"

    def usd(target: str, mode: str) -> str:
        found = costs.get(target)
        cell = found.mode(mode) if found is not None else None
        return usd_cell(cell.usd_per_1000_turns) if cell is not None else "–"

    figures: list[tuple[str, Callable[[ModeSummary], str | None]]] = [
        ("Accuracy (95% CI)", accuracy_cell),
        ("Model calls per turn (mean)", lambda m: f"{m.calls_mean:.2f}"),
        ("Input tokens per turn (mean)", lambda m: tokens_text(m, m.input_tokens_mean, ",.0f")),
        ("Output tokens per turn (mean)", lambda m: tokens_text(m, m.output_tokens_mean, ",.0f")),
        (
            "Cached share of input",
            lambda m: None if m.cached_share is None else tokens_text(m, m.cached_share, ".0%"),
        ),
        ("Latency p50 ms, simulated", lambda m: None if m.simulated_p50 is None else ms(m.simulated_p50)),
        ("Latency p50 ms, measured", lambda m: ms(m.latency_p50)),
        (
            "First answer p50 ms, simulated",
            lambda m: None if m.simulated_first_answer_p50 is None else ms(m.simulated_first_answer_p50),
        ),
        (
            "First answer p50 ms, measured",
            lambda m: None if m.first_answer_p50 is None else ms(m.first_answer_p50),
        ),
        ("Valid plans", valid_plan_cell),
    ]
    grids = []
    for title, read in figures:
        rows = []
        for entry in summary.targets:
            row = [entry.target.name]
            for mode in modes:
                found = entry.summary.mode(mode)
                value = read(found) if found is not None else None
                row.append("–" if value is None else value)
            rows.append(row)
        if any(cell != "–" for row in rows for cell in row[1:]):
            grids.append((title, ["target", *modes], rows))
    grids.append(
        (
            "USD per 1,000 turns",
            ["target", *modes],
            [[t.target.name, *(usd(t.target.name, mode) for mode in modes)] for t in summary.targets],
        )
    )
    return grids


def targets_table(meta: RunMeta) -> Table:
    """One row per target: name, provider, model (the provider's default when none was given), base URL."""
    return (
        ["target", "provider", "model", "base URL"],
        [[t.name, t.provider, t.model_name, t.base_url or "–"] for t in meta.targets],
    )


def _failing_turns(results: RunResults, limit: int = 50) -> list[str]:
    """Failing turns, one row per (target, scenario, turn, repetition, reason) naming every mode that failed
    so (the target column only in a matrix)."""
    matrix = results.meta.matrix
    groups: dict[tuple[str, str, int, int, str], list[str]] = {}
    scenario_order: dict[str, int] = {}
    for r in results.scored_rows:
        scenario_order.setdefault(r.scenario, len(scenario_order))
        if not r.passed:
            why = "; ".join(r.score.details or r.errors) or "failed"
            if r.failure is not None:
                why = f"[{r.failure}] {why}"
            groups.setdefault((r.target, r.scenario, r.turn, r.repetition, why), []).append(r.mode)
    if not groups:
        return []
    targets = {t.name: i for i, t in enumerate(results.meta.run_targets)}
    ordered = sorted(
        groups.items(),
        key=lambda kv: (scenario_order[kv[0][1]], kv[0][3], kv[0][2], targets.get(kv[0][0], len(targets))),
    )
    shown = ordered[:limit]
    every = set(results.meta.modes or {r.mode for r in results.rows})

    def who(modes: list[str]) -> str:
        return "all modes" if len(every) > 1 and set(modes) >= every else ", ".join(modes)

    lines = ["", "## Failing turns", ""]
    lines += render_table(
        [*(["target"] if matrix else []), "mode", "scenario", "turn", "rep", "why"],
        [
            [*([target] if matrix else []), who(modes), s, str(t), str(rep), clip(why, 200)]
            for (target, s, t, rep, why), modes in shown
        ],
        align=("l" if matrix else "") + "llrrl",
    )
    if len(groups) > len(shown):
        lines += ["", f"… and {len(groups) - len(shown)} more (see report.html)."]
    return lines


def header_text(meta: RunMeta, summary: Summary) -> str:
    """The line under the title: who ran (provider, or the targets), latency profile, prefix cache, size."""
    warmup = f", {meta.warmup} warm-up turn(s) left out" if summary.warmup_turns else ""
    cache = prefix_cache_text(meta)
    if meta.matrix:
        who, per = f"Targets {targets_text(meta)}", "turns per target and mode"
    else:
        who = f"Provider `{meta.provider}`" + (f", model `{meta.model}`" if meta.model else "")
        per = "turns per mode"
    return (
        who
        + (f", latency profile `{meta.latency_profile}`" if meta.latency_profile else "")
        + (f", {cache}" if cache else "")
        + f"; {meta.scenarios} scenarios, {meta.turns} {per}, {meta.repeat} repetition(s){warmup}; "
        f"started {meta.started_at}."
    )


def growth_rows(summary: Summary) -> Table | None:
    """Input tokens at the first and last turn of the long conversation per mode (and target)."""
    if summary.matrix:
        return per_target(summary, growth_rows)
    if summary.growth is None:
        return None
    header = ["mode", "input tokens turn 1", "input tokens last turn", "ratio"]
    rows = []
    series = summary.growth.series
    order = [m.mode for m in summary.modes if m.mode in series]
    for mode in order + [m for m in series if m not in order]:
        values = series[mode]
        ratio = summary.growth.ratio(mode)
        rows.append(
            [mode, f"{values[0]:.0f}", f"{values[-1]:.0f}", "–" if ratio is None else f"×{ratio:.2f}"]
        )
    return header, rows


def growth_scenarios(summary: Summary) -> list[str]:
    """The long conversation(s) the growth figures come from."""
    growths = [t.summary.growth for t in summary.targets] if summary.matrix else [summary.growth]
    return list(dict.fromkeys(g.scenario for g in growths if g is not None))


def _findings_lines(summary: Summary) -> list[str]:
    """The headline in bold and the findings as a list; per target (a subsection each) for a matrix."""
    lines: list[str] = []
    top = headline(summary)
    if top:
        lines += [f"**{top}**", ""]
    if not summary.matrix:
        return lines + [f"- {sentence}" for sentence in findings(summary, None)]
    for entry in summary.targets:
        lines += [f"### Target `{entry.target.name}` ({entry.target.label})", ""]
        own = headline(entry.summary)
        if own:
            lines += [f"**{own}**", ""]
        lines += [f"- {sentence}" for sentence in findings(entry.summary, None)]
        lines.append("")
    return lines[:-1]


def render_markdown(
    results: RunResults, summary: Summary, cost: CostEstimate | Sequence[CostEstimate] | None = None
) -> str:
    """The whole Markdown report (``cost`` defaults to the packaged pricing table's estimate, one per
    target)."""
    meta = results.meta
    costs = _costs(cost) if cost is not None else estimate_costs(results)
    lines = ["# erp-ai-harness benchmark", "", header_text(meta, summary), ""]
    lines += [line for warning in results.read_warnings for line in (f"> **Warning:** {warning}.", "")]
    if meta.offline:
        lines += [f"> **Note.** {OFFLINE_NOTICE}", ""]
    lines += [CONVERSATION_STATE_POLICY, ""]
    lines += ["## Findings", ""]
    lines += _findings_lines(summary)
    if summary.matrix:
        lines += ["", "## Model matrix", ""]
        lines += render_table(*targets_table(meta), align="llll")
        lines += ["", MATRIX_CAPTION]
        for title, header, rows in matrix_grids(summary, costs):
            lines += ["", f"### {title}", ""]
            lines += render_table(header, rows)
    lines += ["", "## Summary", ""]
    lines += render_table(*summary_rows(summary))
    lines += [
        "",
        f"{LATENCY_CAPTION} Accuracy intervals are Wilson 95% intervals, counting turns as independent "
        f"trials. {VALID_PLAN_CAPTION}",
        "",
    ]
    paired = paired_rows(summary)
    if paired is not None:
        lines += ["## Paired comparison", ""]
        lines += render_table(*paired)
        within = " Each target's modes are paired within that target." if summary.matrix else ""
        lines += ["", PAIRED_CAPTION + within, ""]
    failures = failure_rows(summary)
    if failures is not None:
        lines += ["## Failures per kind", ""]
        lines += render_table(*failures)
        lines += ["", "Kinds as defined in `docs/failures.md`; a failed turn never passes.", ""]
    lines += ["## Accuracy per category", ""]
    lines += render_table(*category_rows(summary))
    lines += ["", "Share of turns passed, Wilson 95% interval in brackets, turns in parentheses.", ""]
    lines += ["## pass^k (tau-bench)", ""]
    lines += render_table(*pass_k_rows(summary))
    intervals = interval_rows(summary)
    if intervals is not None:
        lines += ["", f"## Intervals over {summary.repetitions} repetitions", ""]
        lines += render_table(*intervals)
        lines += [
            "",
            "Bootstrap 95% intervals (2,000 draws, fixed seed) resampling turns with all their repetitions.",
        ]
    lines += ["", "## Cost per 1,000 turns", ""]
    lines += render_table(*cost_rows(costs))
    lines += ["", cost_caption(costs)]
    growth = growth_rows(summary)
    if growth is not None:
        names = ", ".join(f"`{name}`" for name in growth_scenarios(summary))
        lines += ["", f"## Context growth on {names}", ""]
        lines += render_table(*growth)
    provenance = provenance_rows(meta)
    if provenance:
        lines += ["", "## Provenance", ""]
        lines += render_table(["what", "value"], [[k, v] for k, v in provenance], align="ll")
    lines += _failing_turns(results)
    return "\n".join(lines) + "\n"
