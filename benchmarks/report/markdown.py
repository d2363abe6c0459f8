"""``report.md``: the findings, the summary with accuracy intervals, the paired comparison, per-category
accuracy, pass^k, intervals over repetitions, cost per 1,000 turns, the growth curve's ends, the run's
provenance and the failing turns."""

from __future__ import annotations

from benchmarks.cost import CostEstimate, estimate_cost
from benchmarks.report.aggregate import ModeSummary, Summary
from benchmarks.report.findings import OFFLINE_NOTICE, findings, headline
from benchmarks.results import RunMeta, RunResults
from benchmarks.stats import Interval
from shared.failures import FAILURE_KINDS


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


def render_table(header: list[str], rows: list[list[str]], align: str = "") -> list[str]:
    """A Markdown table; ``align`` has one ``l``/``r`` per column (default: the first left, figures right)."""
    align = align or "l" + "r" * (len(header) - 1)
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
    cached = any(m.cached_share is not None for m in summary.modes)
    first = any(m.first_answer_p50 is not None for m in summary.modes)
    simulated_first = any(m.simulated_first_answer_p50 is not None for m in summary.modes)
    header = [
        "mode",
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
        "failed",
    ]
    rows = [
        [
            m.mode,
            str(m.turns),
            accuracy_cell(m),
            f"{m.calls_mean:.2f} / {m.calls_max}",
            f"{m.input_tokens_mean:.0f}",
            *([f"{m.cached_share:.0%}" if m.cached_share is not None else "–"] if cached else []),
            f"{m.output_tokens_mean:.0f}",
            _pair(m.latency_p50, m.latency_p95),
            *([_pair(m.first_answer_p50, m.first_answer_p95)] if first else []),
            _pair(m.simulated_p50, m.simulated_p95),
            *([_pair(m.simulated_first_answer_p50, m.simulated_first_answer_p95)] if simulated_first else []),
            f"{m.harness_p50:.2f} / {m.harness_p95:.2f}",
            str(m.failed_turns),
        ]
        for m in summary.modes
    ]
    return header, rows


def category_rows(summary: Summary) -> tuple[list[str], list[list[str]]]:
    """Accuracy per category (rows) and mode (columns): ``"92% [65–99] (12)"``."""
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
    """The base mode against each other mode on the turns both ran; ``None`` with a single mode."""
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
    """Bootstrap intervals of latency and tokens per mode; ``None`` without repetitions."""
    if not any(m.intervals for m in summary.modes):
        return None

    def cell(mode: ModeSummary, name: str, value: float | None, decimals: int) -> str:
        interval = mode.intervals.get(name)
        if value is None or interval is None:
            return "–"
        return f"{value:.{decimals}f} ({interval.low:.{decimals}f}–{interval.high:.{decimals}f})"

    first = any("first_answer_p50" in m.intervals for m in summary.modes)
    simulated_first = any("simulated_first_answer_p50" in m.intervals for m in summary.modes)
    header = [
        "mode",
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
            m.mode,
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
        for m in summary.modes
    ]
    return header, rows


def cost_rows(cost: CostEstimate) -> tuple[list[str], list[list[str]]]:
    """Token means and USD per 1,000 turns per mode."""
    references = [name for name in cost.reference if name != cost.priced_as]
    header = [
        "mode",
        "input tok/turn",
        "cached input tok/turn",
        "output tok/turn",
        "USD per 1,000 turns",
        *(f"at {name} prices" for name in references),
    ]
    rows = [
        [
            m.mode,
            f"{m.input_tokens_mean:.0f}",
            f"{m.cached_input_tokens_mean:.0f}",
            f"{m.output_tokens_mean:.0f}",
            "–" if m.usd_per_1000_turns is None else f"{m.usd_per_1000_turns:.2f}",
            *(f"{m.reference_usd[name]:.2f}" if name in m.reference_usd else "–" for name in references),
        ]
        for m in cost.modes
    ]
    return header, rows


def cost_caption(cost: CostEstimate) -> str:
    """The prices' source, and what the reference columns are."""
    text = f"Prices: {cost.note}."
    references = [name for name in cost.reference if name != cost.priced_as]
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
    if p.model is not None:
        identity = p.model
        model = f"{identity.provider} {identity.model or ''}".strip()
        if identity.base_url:
            model += f" at {identity.base_url}"
        if identity.digest:
            model += f", digest {identity.digest[:12]}"
        if identity.modified_at:
            model += f", modified {identity.modified_at}"
        details = ", ".join(f"{k} {v}" for k, v in identity.details.items() if not isinstance(v, dict))
        rows.append(("model", model + (f" ({details})" if details else "")))
    rows += [(f"prompt {name}", digest[:12]) for name, digest in p.prompt_hashes.items()]
    if p.catalog_hash:
        rows.append(("operations catalog", p.catalog_hash[:12]))
    if p.tool_schema_hash:
        rows.append(("tool schemas", p.tool_schema_hash[:12]))
    rows += [("note", note) for note in p.notes]
    return rows


def failure_rows(summary: Summary) -> tuple[list[str], list[list[str]]] | None:
    """Failed turns per failure kind (rows) and mode (columns); ``None`` when no turn failed."""
    kinds = [kind for kind in FAILURE_KINDS if any(kind in m.failures for m in summary.modes)]
    if not kinds:
        return None
    header = ["failure kind", *(m.mode for m in summary.modes)]
    rows = [[kind, *(str(m.failures.get(kind, 0)) for m in summary.modes)] for kind in kinds]
    return header, rows


def pass_k_rows(summary: Summary) -> tuple[list[str], list[list[str]]]:
    """pass^1 … pass^k per mode."""
    ks = list(range(1, summary.repetitions + 1))
    header = ["mode", *(f"pass^{k}" for k in ks)]
    rows = [[m.mode, *(f"{m.pass_k[k]:.1%}" if k in m.pass_k else "–" for k in ks)] for m in summary.modes]
    return header, rows


def _failing_turns(results: RunResults, limit: int = 50) -> list[str]:
    """Failing turns, one row per (scenario, turn, repetition, reason) naming every mode that failed so."""
    groups: dict[tuple[str, int, int, str], list[str]] = {}
    scenario_order: dict[str, int] = {}
    for r in results.scored_rows:
        scenario_order.setdefault(r.scenario, len(scenario_order))
        if not r.passed:
            why = "; ".join(r.score.details or r.errors) or "failed"
            if r.failure is not None:
                why = f"[{r.failure}] {why}"
            groups.setdefault((r.scenario, r.turn, r.repetition, why), []).append(r.mode)
    if not groups:
        return []
    ordered = sorted(groups.items(), key=lambda kv: (scenario_order[kv[0][0]], kv[0][2], kv[0][1]))
    shown = ordered[:limit]
    every = set(results.meta.modes or {r.mode for r in results.rows})

    def who(modes: list[str]) -> str:
        return "all modes" if len(every) > 1 and set(modes) >= every else ", ".join(modes)

    lines = ["", "## Failing turns", ""]
    lines += render_table(
        ["mode", "scenario", "turn", "rep", "why"],
        [[who(modes), s, str(t), str(rep), clip(why, 200)] for (s, t, rep, why), modes in shown],
        align="llrrl",
    )
    if len(groups) > len(shown):
        lines += ["", f"… and {len(groups) - len(shown)} more (see report.html)."]
    return lines


def render_markdown(results: RunResults, summary: Summary, cost: CostEstimate | None = None) -> str:
    """The whole Markdown report (``cost`` defaults to the packaged pricing table's estimate)."""
    meta = results.meta
    cost = cost or estimate_cost(results)
    warmup = f", {meta.warmup} warm-up turn(s) left out" if summary.warmup_turns else ""
    lines = [
        "# erp-ai-harness benchmark",
        "",
        f"Provider `{meta.provider}`"
        + (f", model `{meta.model}`" if meta.model else "")
        + (f", latency profile `{meta.latency_profile}`" if meta.latency_profile else "")
        + f"; {meta.scenarios} scenarios, {meta.turns} turns per mode, {meta.repeat} repetition(s){warmup}; "
        f"started {meta.started_at}.",
        "",
    ]
    if meta.offline:
        lines += [f"> **Note.** {OFFLINE_NOTICE}", ""]
    lines += ["## Findings", ""]
    top = headline(summary)
    if top:
        lines += [f"**{top}**", ""]
    lines += [f"- {sentence}" for sentence in findings(summary, None)]
    lines += ["", "## Summary", ""]
    lines += render_table(*summary_rows(summary))
    lines += [
        "",
        f"{LATENCY_CAPTION} Accuracy intervals are Wilson 95% intervals, counting turns as independent "
        "trials.",
        "",
    ]
    paired = paired_rows(summary)
    if paired is not None:
        lines += ["## Paired comparison", ""]
        lines += render_table(*paired)
        lines += ["", PAIRED_CAPTION, ""]
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
    lines += render_table(*cost_rows(cost))
    lines += ["", cost_caption(cost)]
    if summary.growth is not None:
        lines += ["", f"## Context growth on `{summary.growth.scenario}`", ""]
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
        lines += render_table(header, rows)
    provenance = provenance_rows(meta)
    if provenance:
        lines += ["", "## Provenance", ""]
        lines += render_table(["what", "value"], [[k, v] for k, v in provenance], align="ll")
    lines += _failing_turns(results)
    return "\n".join(lines) + "\n"
