"""The tables and captions every report shares (``report.md``, ``report.html``, the README block): each
builder returns a header and rows of plain text cells, and each renderer only lays them out.

A run with several targets (models) gets a ``target`` column in every per-mode table (:func:`per_target`) and
the model matrix (:func:`matrix_grids`: one grid per figure, targets as rows and modes as columns)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from benchmarks.cost import CostEstimate
from benchmarks.report.aggregate import ModeSummary, Summary, tokens_text
from benchmarks.stats import Interval
from shared.failures import FAILURE_KINDS

Table = tuple[list[str], list[list[str]]]
"""A table's header and rows."""


def _ms(value: float | None) -> str:
    return "–" if value is None else f"{value:.1f}"


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


PERCENTILE_CAPTION = "Percentiles interpolate linearly between the two closest turns."
"""How every p50 and p95 is computed (:func:`benchmarks.stats.percentile`), said under the summary table."""

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


INTERVALS_CAPTION = (
    "Bootstrap 95% intervals (2,000 draws, fixed seed) resampling turns with all their repetitions."
)
"""Under the intervals table of every report."""


def paired_caption(summary: Summary) -> str:
    """What the paired comparison is (and, for a matrix, that modes are paired within each target)."""
    return PAIRED_CAPTION + (" Each target's modes are paired within that target." if summary.matrix else "")


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


def costs_of(cost: CostEstimate | Sequence[CostEstimate]) -> list[CostEstimate]:
    """One estimate, or one per target, as a list."""
    return [cost] if isinstance(cost, CostEstimate) else list(cost)


def usd_cell(value: float | None) -> str:
    """USD per 1,000 turns, or ``–`` for a model without a price."""
    return "–" if value is None else f"{value:.2f}"


def cost_rows(cost: CostEstimate | Sequence[CostEstimate]) -> tuple[list[str], list[list[str]]]:
    """Token means and USD per 1,000 turns per mode (and target, when given one estimate per target)."""
    costs = costs_of(cost)
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
    costs = costs_of(cost)
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
