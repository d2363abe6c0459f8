"""The per-mode tables and captions every report shares (``report.md``, ``report.html``, the README block):
each builder returns a header and rows of plain text cells, and each renderer only lays them out. A run with
several targets (models) gets a ``target`` column first in every per-mode table (:func:`per_target`)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from benchmarks.report.summary import ModeSummary, Summary, tokens_text
from benchmarks.stats import Interval
from shared.failures import FAILURE_KINDS

Table = tuple[list[str], list[list[str]]]
"""A table's header and rows."""


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
    """``"98.5% (130/132)"``: the share of turns whose request for operations was valid, with its count."""
    rate = mode.valid_plan_rate
    if rate is None:
        return NOT_RECORDED
    return f"{rate:.1%} ({mode.plans_valid}/{mode.plans_checked})"


VALID_PLAN_CAPTION = (
    "Valid plans: turns whose request for operations was valid as written (planner: the plan parsed and "
    "passed validation; tool calling: every tool call named a known operation with valid arguments), out "
    f"of the turns whose engine recorded it ({NOT_RECORDED}: not recorded)."
)


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


Column = tuple[str, Callable[[ModeSummary], str]]
"""A column of a per-mode table: its header and how a mode's cell reads."""


def mode_table(summary: Summary, columns: Sequence[Column]) -> Table:
    """One row per (target, mode) of ``summary``: the columns naming it, then ``columns``."""
    lead = ["target", "mode"] if summary.matrix else ["mode"]
    rows = [
        [*([] if target is None else [target]), m.mode, *(cell(m) for _, cell in columns)]
        for target, m in summary.cells()
    ]
    return [*lead, *(name for name, _ in columns)], rows


def _pair(mode: ModeSummary, figure: str) -> str:
    """``figure``'s p50 / p95 in ms (``"latency"`` reads ``latency_p50`` and ``latency_p95``)."""
    p50, p95 = getattr(mode, f"{figure}_p50"), getattr(mode, f"{figure}_p95")
    return " / ".join("–" if value is None else f"{value:.1f}" for value in (p50, p95))


def _some(summary: Summary, has: Callable[[ModeSummary], object]) -> bool:
    return any(has(m) for _, m in summary.cells())


def summary_rows(summary: Summary) -> Table:
    """The per-mode summary table. Time to the first answer token sits beside total latency, measured then
    simulated; the cached-input and first-answer columns appear only when some mode has the figure."""
    cached = _some(summary, lambda m: m.cached_share is not None)
    first = _some(summary, lambda m: m.first_answer_p50 is not None)
    simulated_first = _some(summary, lambda m: m.simulated_first_answer_p50 is not None)
    columns: list[Column | None] = [
        ("turns", lambda m: str(m.turns)),
        ("accuracy (95% CI)", accuracy_cell),
        ("calls/turn (mean / max)", lambda m: f"{m.calls_mean:.2f} / {m.calls_max}"),
        ("input tok/turn", lambda m: tokens_text(m, m.input_tokens_mean)),
        ("cached input", lambda m: tokens_text(m, m.cached_share, ".0%")) if cached else None,
        ("output tok/turn", lambda m: tokens_text(m, m.output_tokens_mean)),
        ("latency p50 / p95 ms", lambda m: _pair(m, "latency")),
        ("first answer p50 / p95 ms", lambda m: _pair(m, "first_answer")) if first else None,
        ("simulated p50 / p95 ms", lambda m: _pair(m, "simulated")),
        ("simulated first answer p50 / p95 ms", lambda m: _pair(m, "simulated_first_answer"))
        if simulated_first
        else None,
        ("harness p50 / p95 ms", lambda m: f"{m.harness_p50:.2f} / {m.harness_p95:.2f}"),
        ("valid plans", valid_plan_cell),
        ("failed", lambda m: str(m.failed_turns)),
    ]
    return mode_table(summary, [c for c in columns if c is not None])


def without_accuracy(table: Table) -> Table:
    """``table`` without its accuracy columns (a stand-in's share of turns passed is no result)."""
    header, rows = table
    kept = [i for i, name in enumerate(header) if not name.startswith("accuracy")]
    return [header[i] for i in kept], [[row[i] for i in kept] for row in rows]


def category_rows(summary: Summary) -> Table:
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
    rows = [[category, *(per.get(mode, "–") for mode in modes)] for category, per in sorted(cells.items())]
    return ["category", *modes], rows


def signed_points(value: float) -> str:
    """An accuracy difference in signed percentage points: ``"+2.3"``, ``"−1.0"``."""
    return f"{value * 100:+.1f}".replace("-", "−")


def paired_rows(summary: Summary) -> Table | None:
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
            f"{signed_points(p.interval.low)} to {signed_points(p.interval.high)}" if p.interval else "–"
        )
        if p.established:
            verdict = f"{p.base if p.difference > 0 else p.other} more accurate"
        else:
            verdict = "same turns passed" if p.base_only == p.other_only == 0 else "no difference established"
        counts = [str(n) for n in (p.pairs, p.both, p.base_only, p.other_only, p.neither)]
        accuracy = f"{p.base_accuracy:.1%} / {p.other_accuracy:.1%}"
        difference = signed_points(p.difference)
        rows.append(
            [f"{p.base} vs {p.other}", *counts, accuracy, difference, interval, f"{p.p_value:.3f}", verdict]
        )
    return header, rows


PAIRED_CAPTION = (
    "Both modes on the same turns (scenario, turn, repetition). McNemar's exact test counts the turns only "
    "one mode passed; the interval of the accuracy difference is a bootstrap that resamples whole "
    "conversations (2,000 draws, fixed seed). A difference is stated only when the interval excludes 0 "
    "and p < 0.05."
)


def paired_caption(summary: Summary) -> str:
    return PAIRED_CAPTION + (" Each target's modes are paired within that target." if summary.matrix else "")


INTERVALS_CAPTION = (
    "Bootstrap 95% intervals (2,000 draws, fixed seed) resampling turns with all their repetitions."
)

_INTERVALS = (
    ("latency mean ms", "latency_mean", 1),
    ("latency p50 ms", "latency_p50", 1),
    ("first answer p50 ms", "first_answer_p50", 1),
    ("simulated p50 ms", "simulated_p50", 0),
    ("simulated first answer p50 ms", "simulated_first_answer_p50", 0),
    ("input tok/turn", "input_tokens_mean", 0),
    ("output tok/turn", "output_tokens_mean", 0),
)
"""The intervals table's columns: (header, the figure and its interval's name, decimals)."""

_OPTIONAL_INTERVALS = frozenset({"first_answer_p50", "simulated_first_answer_p50"})
"""Interval columns shown only when some mode has the interval."""


def interval_rows(summary: Summary) -> Table | None:
    """Bootstrap intervals of latency and tokens per mode (and target); ``None`` without repetitions."""
    if not _some(summary, lambda m: m.intervals):
        return None

    def cell(name: str, decimals: int) -> Callable[[ModeSummary], str]:
        def read(mode: ModeSummary) -> str:
            value, interval = getattr(mode, name), mode.intervals.get(name)
            if value is None or interval is None:
                return "–"
            return f"{value:.{decimals}f} ({interval.low:.{decimals}f}–{interval.high:.{decimals}f})"

        return read

    return mode_table(
        summary,
        [
            (head, cell(name, places))
            for head, name, places in _INTERVALS
            if name not in _OPTIONAL_INTERVALS or any(name in m.intervals for _, m in summary.cells())
        ],
    )


def failure_rows(summary: Summary) -> Table | None:
    """Failed turns per failure kind (rows) and mode (columns), per target for a matrix, with the turns whose
    answer claimed an action the ERP did not do (refused as ``ungrounded``) when there were; ``None`` when no
    turn failed."""
    if summary.matrix:
        return per_target(summary, failure_rows)
    kinds = [kind for kind in FAILURE_KINDS if any(kind in m.failures for m in summary.modes)]
    if not kinds:
        return None
    header = ["failure kind", *(m.mode for m in summary.modes)]
    rows = [[kind, *(str(m.failures.get(kind, 0)) for m in summary.modes)] for kind in kinds]
    if any(m.claimed_action_turns for m in summary.modes):  # refused as ungrounded: an action never done
        claimed = [str(m.claimed_action_turns or 0) for m in summary.modes]
        rows.append(["… of which an action claimed", *claimed])
    return header, rows


def pass_k_rows(summary: Summary) -> Table:
    """pass^1 … pass^k per mode (and target)."""

    def column(k: int) -> Column:
        return f"pass^{k}", lambda m: f"{m.pass_k[k]:.1%}" if k in m.pass_k else "–"

    return mode_table(summary, [column(k) for k in range(1, summary.repetitions + 1)])


def growth_order(summary: Summary) -> list[str]:
    """The modes of the growth curve: in the summary's order, then any the summary lacks."""
    series = summary.growth.series if summary.growth is not None else {}
    order = [m.mode for m in summary.modes if m.mode in series]
    return order + [m for m in series if m not in order]


def growth_rows(summary: Summary) -> Table | None:
    """Input tokens at the first and last turn of the long conversation per mode (and target)."""
    if summary.matrix:
        return per_target(summary, growth_rows)
    if summary.growth is None:
        return None
    rows = []
    for mode in growth_order(summary):
        values, ratio = summary.growth.series[mode], summary.growth.ratio(mode)
        rows.append(
            [mode, f"{values[0]:.0f}", f"{values[-1]:.0f}", "–" if ratio is None else f"×{ratio:.2f}"]
        )
    return ["mode", "input tokens turn 1", "input tokens last turn", "ratio"], rows


def growth_scenarios(summary: Summary) -> list[str]:
    """The long conversation(s) the growth figures come from."""
    growths = [t.summary.growth for t in summary.targets] if summary.matrix else [summary.growth]
    return list(dict.fromkeys(g.scenario for g in growths if g is not None))
