"""The findings paragraph: a few sentences computed from the figures, never written by hand.

The headline leads with structure (model calls, tokens, cached share and time to the first answer token where
the rows carry them), because that is what the architectures decide; each pair of modes is also compared on
time to the first answer token, simulated under a latency profile and measured, each labelled as such. An
accuracy difference is stated only when the paired comparison establishes it (its 95% interval excludes zero
and the exact McNemar test agrees); otherwise the sentence says the run cannot tell the modes apart and gives
the interval. In the project's own result blocks, a figure it set itself a target for (:data:`TARGETS`) gets a
plain sentence: "target not met (3.3 ms vs 2 ms)"; a latency target also says whether the offline model's
prefix cache was modelled, since the latency targets were set before the cache model existed.

A run with several targets (models) gets a matrix headline (structure and accuracy per target and mode) and
each target's own findings, prefixed with its name: modes are compared within a target, never across."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from benchmarks.report.summary import ModeSummary, PairedComparison, Summary
from benchmarks.report.tables import valid_plan_cell
from benchmarks.results import RunMeta


def all_failed(mode: ModeSummary) -> bool:
    """Every turn of the mode failed: its calls and tokens say nothing."""
    return mode.turns > 0 and mode.failed_turns == mode.turns


def ms_text(value: float) -> str:
    """Milliseconds as the findings write them: one decimal under 100 (none when whole), else grouped."""
    text = f"{value:.1f}" if value < 100 else f"{value:,.0f}"
    return text.removesuffix(".0")


TARGETS: tuple[tuple[str, str, float | str], ...] = (
    ("planner harness p50 under 2 ms", "harness_p50", 2.0),
    ("planner simulated p50 at most toolcalling's", "simulated_p50", "toolcalling"),
    ("planner time to first answer at most toolcalling's", "simulated_first_answer_p50", "toolcalling"),
)
"""The targets findings check whenever the run has their figures: (what it says, planner's figure, the
target in ms or the mode whose same figure planner must not exceed). Targets against another mode are
latencies, which depend on the modelled prefix cache, so their sentences say which setting ran."""

CACHE_SETTINGS = {
    True: "measured with the offline model's prefix cache modelled (--prompt-cache)",
    False: "measured without a modelled prefix cache (--no-prompt-cache)",
    None: "prefix-cache setting not recorded",
}


def _figure(summary: Summary, mode: str, attribute: str) -> float | None:
    found = summary.mode(mode)
    value = getattr(found, attribute) if found is not None and not all_failed(found) else None
    return None if value is None else float(value)


def target_sentences(summary: Summary) -> list[str]:
    """One plain sentence per target the run can check: "target met" / "target not met (3.3 ms vs 2 ms)"."""
    sentences = []
    for name, attribute, target in TARGETS:
        measured = _figure(summary, "planner", attribute)
        wanted = target if isinstance(target, float) else _figure(summary, target, attribute)
        if measured is None or wanted is None:
            continue
        verdict = "target met" if measured <= wanted else "target not met"
        cache = "" if isinstance(target, float) else f", {CACHE_SETTINGS[summary.prompt_cache]}"
        sentences.append(f"Target {name}: {verdict} ({ms_text(measured)} ms vs {ms_text(wanted)} ms){cache}.")
    return sentences


OFFLINE_NOTICE = (
    "The offline model answered (in process, or behind an emulator of a provider's protocol): it is a "
    "deterministic stand-in, so these figures measure each "
    "architecture's structure and overhead (calls, tokens, harness time), not a language model's accuracy."
)


def pipeline_check(summary: Summary) -> str:
    """The one line an offline run gives about its turns' verdicts: whether the pipeline did what the
    stand-in should, never an accuracy."""
    cells = [m for _, m in summary.cells()]
    return (
        f"pipeline check: {sum(m.passed for m in cells)} of {sum(m.turns for m in cells)} turns as the "
        "stand-in should"
    )


def _relative(a: float, b: float, noun: str) -> str:
    """``a`` relative to ``b``: "41% fewer input tokens" / "12% more input tokens"."""
    if b <= 0:
        return f"{a:.0f} {noun}"
    change = (a - b) / b * 100
    if abs(change) < 0.5:
        return f"the same {noun}"
    return f"{abs(change):.0f}% {'fewer' if change < 0 else 'more'} {noun}"


def _points(value: float) -> str:
    """An accuracy difference in percentage points, signed: ``+2.3``, ``−1.0``, ``0``."""
    points = value * 100
    if abs(points) < 0.05:
        return "0"
    return f"{points:+.1f}".replace("-", "−")


def p_text(value: float) -> str:
    """A p-value as the reports write it: ``"< 0.001"``, ``"= 0.004"``, ``"= 0.31"``."""
    return "< 0.001" if value < 0.001 else f"= {value:.3f}" if value < 0.01 else f"= {value:.2f}"


def accuracy_statement(comparison: PairedComparison) -> str:
    """What the run says about two modes' accuracy on the turns both ran."""
    base, other = comparison.base, comparison.other
    if comparison.base_only == comparison.other_only == 0:
        return f"{base} and {other} passed exactly the same {comparison.pairs} turns"
    interval = comparison.interval
    bounds = (
        f"95% interval {_points(interval.low)} to {_points(interval.high)} points"
        if interval is not None
        else "no interval"
    )
    tally = (
        f"{comparison.base_only} turn(s) only {base} passed, {comparison.other_only} only {other}; "
        f"McNemar p {p_text(comparison.p_value)}"
    )
    if comparison.established:
        better, worse = (base, other) if comparison.difference > 0 else (other, base)
        return (
            f"{better} is more accurate than {worse} by {abs(comparison.difference) * 100:.1f} points "
            f"({comparison.base_accuracy:.1%} vs {comparison.other_accuracy:.1%}; {bounds}; {tally})"
        )
    return (
        f"no accuracy difference between {base} and {other} this run can establish "
        f"({comparison.base_accuracy:.1%} vs {comparison.other_accuracy:.1%}, difference "
        f"{_points(comparison.difference)} points, {bounds}; {tally})"
    )


def _compare(summary: Summary, base: ModeSummary, other: ModeSummary, *, accuracy: bool = True) -> str:
    for mode in (base, other):
        if all_failed(mode):
            return (
                f"{mode.mode}: every one of its {mode.turns} turns failed, so its calls and tokens are not "
                f"comparable with {(other if mode is base else base).mode}'s."
            )
    comparison = summary.comparison(base.mode, other.mode)
    verdict = (
        ""
        if not accuracy
        else accuracy_statement(comparison)
        if comparison is not None
        else f"accuracy {base.accuracy:.0%} vs {other.accuracy:.0%} (no turns in common to compare)"
    )
    first = first_answer_comparison(base, other)
    tokens = (
        f"{_relative(base.input_tokens_mean, other.input_tokens_mean, 'input tokens')} per turn "
        f"({base.input_tokens_mean:.0f} vs {other.input_tokens_mean:.0f}); "
        if base.tokens_reported and other.tokens_reported
        else "tokens not reported by the provider; "
    )
    sentence = (
        f"{base.mode}: {base.calls_mean:.1f} calls/turn vs {other.calls_mean:.1f} for {other.mode}; "
        + tokens
        + (f"first answer token {first}; " if first else "")
        + verdict
    )
    return sentence.removesuffix("; ") + "."


def _sooner(a: float, b: float) -> str:
    """``a`` relative to ``b`` as a time: "35% sooner" / "12% later" / "as soon"."""
    if b <= 0:
        return "sooner" if a < b else "as soon" if a == b else "later"
    change = (a - b) / b * 100
    if abs(change) < 0.5:
        return "as soon"
    return f"{abs(change):.0f}% {'sooner' if change < 0 else 'later'}"


_FIRST_ANSWER = (("simulated_first_answer", "simulated"), ("first_answer", "measured"))
"""The first-answer figures, simulated then measured: (the ``ModeSummary`` attributes' stem, label)."""


def _first_answers(
    a: tuple[ModeSummary, str], b: tuple[ModeSummary, str], text: Callable[[float, float, str], str]
) -> str | None:
    """``text`` of each first-answer figure, simulated then measured, that both ``a`` and ``b`` have (each a
    mode and a statistic, ``"p50"`` or ``"p95"``), joined; ``None`` when there is none."""
    parts = []
    for figure, label in _FIRST_ANSWER:
        x, y = getattr(a[0], f"{figure}_{a[1]}"), getattr(b[0], f"{figure}_{b[1]}")
        if x is not None and y is not None:
            parts.append(text(x, y, label))
    return ", ".join(parts) or None


def first_answer_comparison(base: ModeSummary, other: ModeSummary) -> str | None:
    """How much sooner ``base`` shows its first answer token than ``other``, p50, simulated and measured."""
    return _first_answers(
        (base, "p50"),
        (other, "p50"),
        lambda a, b, label: f"{_sooner(a, b)} {label} ({ms_text(a)} vs {ms_text(b)} ms p50)",
    )


def _first_answer(mode: ModeSummary) -> str | None:
    """The mode's time to its first answer token for the headline: simulated when profiled, else measured."""
    for figure, label in _FIRST_ANSWER:
        if (p50 := getattr(mode, f"{figure}_p50")) is not None:
            return f"first answer token after {ms_text(p50)} ms ({label} p50)"
    return None


def _first_answer_figures(mode: ModeSummary) -> str | None:
    """Every first-answer figure of the mode, p50 / p95, each labelled simulated or measured."""
    return _first_answers(
        (mode, "p50"), (mode, "p95"), lambda p50, p95, label: f"{ms_text(p50)} / {ms_text(p95)} ms {label}"
    )


def _structure(mode: ModeSummary, *, first: bool) -> str:
    calls = f"{mode.calls_mean:.2f} model calls" if first else f"{mode.calls_mean:.2f} calls"
    tokens = (
        "tokens not reported by the provider"
        if not mode.tokens_reported
        else f"{mode.input_tokens_mean:.0f} input / {mode.output_tokens_mean:.0f} output tokens"
        if first
        else f"{mode.input_tokens_mean:.0f} / {mode.output_tokens_mean:.0f} tokens"
    )
    parts = [f"{mode.mode} {calls}", tokens]
    if mode.cached_share is not None:
        parts.append(f"{mode.cached_share:.0%} of input cached")
    if (text := _first_answer(mode)) is not None:
        parts.append(text)
    return ", ".join(parts)


def headline(summary: Summary, *, accuracy: bool = True) -> str | None:
    """The sentence a reader should take away: structure per mode first, then what accuracy shows, unless
    ``accuracy`` is false (a stand-in's turns: no result); for a matrix, :func:`matrix_headline`."""
    if summary.targets:
        return matrix_headline(summary)
    if not summary.modes:
        return None
    base = summary.mode("planner") or summary.modes[0]
    if all_failed(base):
        return f"{base.mode}: every one of its {base.turns} turns failed, so there is nothing to compare."
    usable = [base] + [m for m in summary.modes if m.mode != base.mode and not all_failed(m)]
    structure = "Per turn: " + "; ".join(_structure(m, first=i == 0) for i, m in enumerate(usable)) + "."
    if not accuracy:
        return structure
    comparisons = [c for m in usable[1:] if (c := summary.comparison(base.mode, m.mode)) is not None]
    if not comparisons:
        return f"{structure} {base.mode} passed {base.accuracy:.0%} of turns."
    shown = "; ".join(_short_accuracy(c) for c in comparisons)
    return f"{structure} Accuracy: {shown}."


def _short_accuracy(comparison: PairedComparison) -> str:
    """The headline's accuracy clause: the difference only when established."""
    base, other = comparison.base, comparison.other
    if comparison.established:
        better, worse = (base, other) if comparison.difference > 0 else (other, base)
        interval = comparison.interval
        assert interval is not None  # established implies an interval
        low, high = sorted((abs(interval.low), abs(interval.high)))
        return (
            f"{better} is more accurate than {worse} by {abs(comparison.difference) * 100:.1f} points "
            f"(95% interval {low * 100:.1f} to {high * 100:.1f})"
        )
    if comparison.base_only == comparison.other_only == 0:
        return f"{base} and {other} passed the same turns ({comparison.base_accuracy:.0%})"
    return (
        f"{base} {comparison.base_accuracy:.0%} vs {other} {comparison.other_accuracy:.0%}, "
        "not a difference this run can establish"
    )


def matrix_headline(summary: Summary) -> str:
    """The headline of a run with several targets: per target, each mode's structure, then its accuracy."""
    modes = len({m.mode for _, m in summary.cells()})
    parts = []
    for entry in summary.targets:
        cells = ", ".join(
            f"{m.mode} ({m.calls_mean:.2f} calls, {m.input_tokens_mean:,.0f} input tokens, "
            f"{m.accuracy:.0%} passed)"
            for m in entry.summary.modes
        )
        parts.append(f"{entry.target.name}: {cells}")
    return (
        f"Model matrix, {len(summary.targets)} targets × {modes} modes, per turn: {'; '.join(parts)}. "
        "Modes are compared within each target only."
    )


def _matrix_findings(summary: Summary, meta: RunMeta | None) -> list[str]:
    """Each target's headline and findings, prefixed with the target's name."""
    sentences = []
    for entry in summary.targets:
        own = [text for text in [headline(entry.summary)] if text] + findings(entry.summary, None)
        sentences += [f"Target {entry.target.name}: {sentence}" for sentence in own]
    if meta is not None and meta.offline:
        sentences.append(OFFLINE_NOTICE)
    return sentences


def _listed(lead: str, parts: Sequence[str], separator: str = ", ") -> list[str]:
    """``["<lead>: <parts>."]``, or no sentence without parts."""
    return [f"{lead}: {separator.join(parts)}."] if parts else []


def measurement_sentences(modes: Sequence[ModeSummary]) -> list[str]:
    """What the provider did not report, what tool calling recovered, what was retried (none: no sentence)."""
    unreported = [f"{m.mode} {m.usage_unreported}" for m in modes if m.usage_unreported]
    recovered = [f"{m.mode} {m.recovered_tool_calls}" for m in modes if m.mode.startswith("toolcalling")]
    retried = [f"{m.mode} {m.connection_retries}" for m in modes if m.connection_retries]
    return [
        *_listed(
            "Turns whose provider did not report token usage (left out of the token figures, not counted "
            "as 0)",
            unreported,
        ),
        *_listed("Tool calls written as text and recovered into real tool calls", recovered),
        *_listed("Requests resent once after a connection failed before any answer", retried),
    ]


def findings(
    summary: Summary, meta: RunMeta | None = None, *, accuracy: bool = True, targets: bool = False
) -> list[str]:
    """Sentences comparing the modes, computed from ``summary`` (per target for a matrix); without their
    accuracy when ``accuracy`` is false (a stand-in's turns: no result); with the project's own
    :data:`TARGETS` only when ``targets`` is true (the result blocks of its documentation, which explain
    them: a report is read by people who set no such target)."""
    if summary.targets:
        return _matrix_findings(summary, meta)
    if not summary.modes:
        return ["No turns were recorded."]
    base = summary.mode("planner") or summary.modes[0]
    others = [m for m in summary.modes if m.mode != base.mode]
    sentences = [_compare(summary, base, other, accuracy=accuracy) for other in others]
    if base.mode == "planner" and not all_failed(base):
        verdict = "never exceeded" if base.calls_max <= 2 else "exceeded"
        sentences.append(f"planner {verdict} 2 model calls per turn (max {base.calls_max}).")
    modes = summary.modes
    no_operation = [
        f"{m.mode} {m.no_operation_calls_mean:.1f}" for m in modes if m.no_operation_calls_mean is not None
    ]
    sentences += _listed("Model calls on turns that ran no operation (small talk, refusals)", no_operation)
    dependent = [
        f"{c.mode} {c.calls_mean:.1f}" for c in summary.categories if c.category == "dependent_operations"
    ]
    sentences += _listed("Model calls per turn on dependent operations", dependent)
    cached = [f"{m.mode} {m.cached_share:.0%}" for m in modes if m.cached_share is not None]
    sentences += _listed("Share of input tokens served from the provider's prompt cache", cached)
    first = [f"{m.mode} {text}" for m in modes if (text := _first_answer_figures(m)) is not None]
    sentences += _listed("Time to the first answer token, p50 / p95", first, "; ")
    valid = [f"{m.mode} {valid_plan_cell(m)}" for m in modes if m.valid_plan_rate is not None]
    sentences += _listed("Valid-plan rate (requests for operations valid as written)", valid)
    sentences += measurement_sentences(modes)
    sentences += _listed("Harness overhead p50", [f"{m.mode} {m.harness_p50:.1f} ms" for m in modes])
    if targets:
        sentences += target_sentences(summary)
    if (growth := summary.growth) is not None:
        turns = max((len(s) for s in growth.series.values()), default=0)
        ratios = [
            f"{mode} ×{ratio:.2f}" for mode in growth.series if (ratio := growth.ratio(mode)) is not None
        ]
        sentences += _listed(
            f"Over the {turns}-turn conversation, input tokens at the last turn vs the first", ratios
        )
    for mode in summary.modes:
        if mode.failures:
            kinds = ", ".join(f"{count} {kind}" for kind, count in mode.failures.items())
            sentences.append(
                f"{mode.mode}: {mode.failed_turns} turn(s) ended in a failure ({kinds}), scored as failed."
            )
    if summary.warmup_turns:
        sentences.append(
            f"{summary.warmup_turns} warm-up turn(s) were run first and left out of every figure."
        )
    if meta is not None and meta.offline:
        sentences.append(OFFLINE_NOTICE)
    return sentences
