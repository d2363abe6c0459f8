"""Axes for values that span orders of magnitude: logarithmic from :data:`LOG_SPAN` up, else linear from 0;
round ticks, every one a grid line, and only as many tick labels as fit side by side."""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from matplotlib.axes import Axes
from matplotlib.ticker import NullFormatter

from benchmarks.report.charts._render import text_width
from benchmarks.report.charts._style import TEXT_SIZE

LOG_SPAN = 20.0
"""The ratio of the largest to the smallest value from which an axis is logarithmic."""

LABEL_GAP = 10.0
"""The least room, in px, between two tick labels."""


def nice_ticks(peak: float, count: int = 5) -> list[float]:
    """Round tick values from 0 up to at least ``peak`` in about ``count`` steps ([0, 1] for no data)."""
    if peak <= 0 or not math.isfinite(peak):
        return [0.0, 1.0]
    raw = peak / count
    magnitude = 10.0 ** math.floor(math.log10(raw))
    step = next(m * magnitude for m in (1, 2, 2.5, 5, 10) if raw <= m * magnitude)
    intervals = math.ceil(peak / step - 1e-9)
    return [round(i * step, 10) for i in range(intervals + 1)]


def _log_ticks(low: float, high: float) -> list[float]:
    """1, 2, 5 × 10^k from just below ``low`` to just above ``high``."""
    ticks = []
    for exponent in range(math.floor(math.log10(low)), math.ceil(math.log10(high)) + 1):
        for mantissa in (1, 2, 5):
            value = mantissa * 10.0**exponent
            if low / 2.5 <= value <= high * 2.5:
                ticks.append(value)
    return ticks


@dataclass(frozen=True)
class Scale:
    """An axis chosen for some values."""

    log: bool
    limits: tuple[float, float]
    ticks: tuple[float, ...]
    """Every tick, each with a grid line."""
    labelled: tuple[float, ...]
    """The ticks that carry a label: as many as fit without overlapping."""
    label: Callable[[float], str]
    """How a tick value is written."""

    @property
    def note(self) -> str:
        """``"log scale"`` or ``"linear scale"``, for the axis title."""
        return "log scale" if self.log else "linear scale"

    def clamp(self, value: float) -> float:
        """``value`` moved inside the axis (a zero onto a log axis' first tick)."""
        return min(max(value, self.limits[0]), self.limits[1])

    def share(self, value: float) -> float:
        """Where ``value`` sits along the axis, 0 at its start and 1 at its end."""
        low, high = self.limits
        value = self.clamp(value)
        if self.log:
            return math.log(value / low) / math.log(high / low)
        return (value - low) / (high - low) if high > low else 0.0


def _fits(ticks: Sequence[float], where: Callable[[float], float], widths: dict[float, float]) -> bool:
    return all(
        where(b) - where(a) >= (widths[a] + widths[b]) / 2 + LABEL_GAP for a, b in itertools.pairwise(ticks)
    )


def choose_scale(
    values: Iterable[float],
    *,
    length: float,
    label: Callable[[float], str],
    log_span: float | None = LOG_SPAN,
    headroom: float = 1.0,
    font_size: float = TEXT_SIZE,
) -> Scale:
    """The axis of ``values`` (non-finite ones ignored) drawn ``length`` px long.

    Logarithmic when the largest positive value is at least ``log_span`` times the smallest (never when
    ``log_span`` is ``None``), its ticks 1, 2 and 5 × 10^k; else linear from 0 to a round value at least
    ``headroom`` times the largest. Tick labels go to every tick when they fit, else (log axis) to the
    powers of ten, then to every second, third… tick until none overlaps the next.
    """
    finite = [v for v in values if math.isfinite(v)]
    positive = [v for v in finite if v > 0]
    low, high = min(positive, default=1.0), max(positive, default=1.0)
    log = log_span is not None and high / low >= log_span
    ticks = _log_ticks(low, high) if log else nice_ticks(max(finite, default=0.0) * headroom)
    limits = (ticks[0], ticks[-1])
    scale = Scale(log, limits, tuple(ticks), (), label)
    widths = {tick: text_width(label(tick), font_size) for tick in ticks}

    def where(tick: float) -> float:
        return length * scale.share(tick)

    candidates = ticks
    if log and not _fits(candidates, where, widths):
        powers = [t for t in ticks if math.isclose(10 ** round(math.log10(t)), t)]
        candidates = powers if len(powers) >= 2 else candidates
    step = 1
    while step < len(candidates) and not _fits(candidates[::step], where, widths):
        step += 1
    return Scale(log, limits, tuple(ticks), tuple(candidates[::step]), label)


def apply_x(axes: Axes, scale: Scale, title: str) -> None:
    """Give ``axes`` ``scale`` as its x axis: limits, labelled and unlabelled ticks, a vertical grid line at
    each, and ``title`` saying which scale it is."""
    if scale.log:
        axes.set_xscale("log")
    axes.set_xlim(*scale.limits)
    axes.set_xticks(list(scale.labelled), labels=[scale.label(t) for t in scale.labelled])
    axes.set_xticks([t for t in scale.ticks if t not in scale.labelled], minor=True)
    axes.xaxis.set_minor_formatter(NullFormatter())
    axes.tick_params(axis="x", which="minor", length=0)
    axes.grid(axis="x", which="both", zorder=0)
    axes.set_axisbelow(True)
    axes.set_xlabel(f"{title} ({scale.note})")
