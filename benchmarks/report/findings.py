"""The findings paragraph: a few sentences computed from the figures, never written by hand."""

from __future__ import annotations

from benchmarks.report.aggregate import ModeSummary, Summary
from benchmarks.results import RunMeta

OFFLINE_NOTICE = (
    "The provider is offline: the offline model is a deterministic stand-in, so these figures measure each "
    "architecture's structure and overhead (calls, tokens, harness time), not a language model's accuracy."
)


def _relative(a: float, b: float, noun: str) -> str:
    """``a`` relative to ``b``: "41% fewer input tokens" / "12% more input tokens"."""
    if b <= 0:
        return f"{a:.0f} {noun}"
    change = (a - b) / b * 100
    if abs(change) < 0.5:
        return f"the same {noun}"
    return f"{abs(change):.0f}% {'fewer' if change < 0 else 'more'} {noun}"


def _broken(mode: ModeSummary) -> bool:
    """Every turn of the mode failed: its calls and tokens say nothing."""
    return mode.turns > 0 and mode.failed_turns == mode.turns


def _accuracy_pair(base: ModeSummary, other: ModeSummary) -> str:
    if round(base.accuracy * 100) == round(other.accuracy * 100):
        return f"the same accuracy ({base.accuracy:.0%})"
    return f"accuracy {base.accuracy:.0%} vs {other.accuracy:.0%}"


def _compare(base: ModeSummary, other: ModeSummary) -> str:
    for mode in (base, other):
        if _broken(mode):
            return (
                f"{mode.mode}: every one of its {mode.turns} turns failed, so its calls and tokens are not "
                f"comparable with {(other if mode is base else base).mode}'s."
            )
    return (
        f"{base.mode}: {base.calls_mean:.1f} calls/turn vs {other.calls_mean:.1f} for {other.mode}; "
        f"{_relative(base.input_tokens_mean, other.input_tokens_mean, 'input tokens')} per turn "
        f"({base.input_tokens_mean:.0f} vs {other.input_tokens_mean:.0f}); "
        f"{_accuracy_pair(base, other)}."
    )


def _than(base: ModeSummary, other: ModeSummary, noun: str) -> str:
    relative = _relative(base.input_tokens_mean, other.input_tokens_mean, noun).strip()
    if relative.startswith("the same"):
        return f"as many {noun} as {other.mode} ({other.accuracy:.0%} passed)".replace("  ", " ")
    return f"{relative} than {other.mode} ({other.accuracy:.0%} passed)"


def headline(summary: Summary) -> str | None:
    """The one-sentence comparison a reader should take away: the base mode (planner) against the others."""
    if not summary.modes:
        return None
    base = summary.mode("planner") or summary.modes[0]
    if _broken(base):
        return f"{base.mode}: every one of its {base.turns} turns failed, so there is nothing to compare."
    figures = (
        f"{base.mode} passed {base.accuracy:.0%} of turns with {base.calls_mean:.2f} model calls "
        f"and {base.input_tokens_mean:.0f} input tokens per turn"
    )
    others = [m for m in summary.modes if m.mode != base.mode and not _broken(m)]
    if not others:
        return figures + "."
    clauses = [_than(base, other, "input tokens" if i == 0 else "") for i, other in enumerate(others)]
    joined = ", ".join(clauses[:-1]) + " and " + clauses[-1] if len(clauses) > 1 else clauses[0]
    return f"{figures} — {joined}."


def findings(summary: Summary, meta: RunMeta | None = None) -> list[str]:
    """Sentences comparing the modes, computed from ``summary``."""
    if not summary.modes:
        return ["No turns were recorded."]
    base = summary.mode("planner") or summary.modes[0]
    others = [m for m in summary.modes if m.mode != base.mode]
    sentences = [_compare(base, other) for other in others]
    if base.mode == "planner" and not _broken(base):
        verdict = "never exceeded" if base.calls_max <= 2 else "exceeded"
        sentences.append(f"planner {verdict} 2 model calls per turn (max {base.calls_max}).")
    no_operation = [m for m in summary.modes if m.no_operation_calls_mean is not None]
    if no_operation:
        calls = ", ".join(f"{m.mode} {m.no_operation_calls_mean:.1f}" for m in no_operation)
        sentences.append(f"Model calls on turns that ran no operation (small talk, refusals): {calls}.")
    dependent = [c for c in summary.categories if c.category == "dependent_operations"]
    if dependent:
        calls = ", ".join(f"{c.mode} {c.calls_mean:.1f}" for c in dependent)
        sentences.append(f"Model calls per turn on dependent operations: {calls}.")
    harness = ", ".join(f"{m.mode} {m.harness_p50:.1f} ms" for m in summary.modes)
    sentences.append(f"Harness overhead p50: {harness}.")
    if summary.growth is not None:
        parts = []
        for mode in summary.growth.series:
            ratio = summary.growth.ratio(mode)
            if ratio is not None:
                parts.append(f"{mode} ×{ratio:.2f}")
        if parts:
            turns = max(len(s) for s in summary.growth.series.values())
            sentences.append(
                f"Over the {turns}-turn conversation, input tokens at the last turn vs the first: "
                + ", ".join(parts)
                + "."
            )
    for mode in summary.modes:
        if mode.failures:
            kinds = ", ".join(f"{count} {kind}" for kind, count in mode.failures.items())
            sentences.append(
                f"{mode.mode}: {mode.failed_turns} turn(s) ended in a failure ({kinds}), scored as failed."
            )
    if meta is not None and meta.offline:
        sentences.append(OFFLINE_NOTICE)
    return sentences
