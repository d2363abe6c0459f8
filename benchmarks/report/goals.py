"""The figures the project set itself targets for (the harness overhead, the latency targets of the
planner against tool calling), and one plain sentence per target a run can check: "target met" or
"target not met (3.3 ms vs 2 ms)"."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from benchmarks.report.summary import ModeSummary, Summary


def all_failed(mode: ModeSummary) -> bool:
    """Every turn of the mode failed: its calls and tokens say nothing."""
    return mode.turns > 0 and mode.failed_turns == mode.turns


def ms_text(value: float) -> str:
    """Milliseconds as the findings write them: one decimal under 100 (none when whole), else grouped."""
    text = f"{value:.1f}" if value < 100 else f"{value:,.0f}"
    return text.removesuffix(".0")


@dataclass(frozen=True)
class Target:
    """A figure the project set itself a target for, and how to read it off a summary."""

    name: str
    """What the target says, e.g. "planner harness p50 under 2 ms"."""
    measure: Callable[[Summary], tuple[float, float] | None]
    """``(measured, target)`` in ms, ``None`` when the run lacks the figures; met when measured <= target."""
    cache_sensitive: bool = False
    """Whether the figure depends on the modelled prefix cache (the sentence says which setting ran)."""


def _figure(mode: str, attribute: str) -> Callable[[Summary], float | None]:
    def read(summary: Summary) -> float | None:
        found = summary.mode(mode)
        value = getattr(found, attribute, None) if found is not None and not all_failed(found) else None
        return float(value) if value is not None else None

    return read


def _against(
    measured: Callable[[Summary], float | None], target: Callable[[Summary], float | None]
) -> Callable[[Summary], tuple[float, float] | None]:
    def measure(summary: Summary) -> tuple[float, float] | None:
        a, b = measured(summary), target(summary)
        return None if a is None or b is None else (a, b)

    return measure


TARGETS: tuple[Target, ...] = (
    Target(
        "planner harness p50 under 2 ms",
        _against(_figure("planner", "harness_p50"), lambda summary: 2.0),
    ),
    Target(
        "planner simulated p50 at most toolcalling's",
        _against(_figure("planner", "simulated_p50"), _figure("toolcalling", "simulated_p50")),
        cache_sensitive=True,
    ),
    Target(
        "planner time to first answer at most toolcalling's",
        _against(
            _figure("planner", "simulated_first_answer_p50"),
            _figure("toolcalling", "simulated_first_answer_p50"),
        ),
        cache_sensitive=True,
    ),
)
"""The targets findings check whenever the run has their figures."""

CACHE_SETTINGS = {
    True: "measured with the offline model's prefix cache modelled (--prompt-cache)",
    False: "measured without a modelled prefix cache (--no-prompt-cache)",
    None: "prefix-cache setting not recorded",
}
"""How a latency target's sentence says under which cache setting it was measured."""


def target_sentences(summary: Summary) -> list[str]:
    """One plain sentence per target the run can check: "target met" / "target not met (3.3 ms vs 2 ms)";
    latency targets say under which prefix-cache setting they were measured."""
    sentences = []
    for target in TARGETS:
        figures = target.measure(summary)
        if figures is None:
            continue
        measured, wanted = figures
        verdict = "target met" if measured <= wanted else "target not met"
        cache = f", {CACHE_SETTINGS[summary.prompt_cache]}" if target.cache_sensitive else ""
        sentences.append(
            f"Target {target.name}: {verdict} ({ms_text(measured)} ms vs {ms_text(wanted)} ms){cache}."
        )
    return sentences
