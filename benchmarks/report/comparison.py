"""The comparison of two runs (:mod:`benchmarks.compare`) as a section of the combined report: what was
compared, regressions first, then the notes, what only one run has, every group and the turns that flipped.

This module builds the section's data (every figure already written as text, so both renderings say the
same); ``templates/comparison.md.j2`` and ``templates/comparison.html.j2`` lay it out. Run labels, paths,
model names and score details come from results files, so both treat them as untrusted text: the Markdown
prints every value as report.md does (:func:`~benchmarks.report.markdown_text.printed`: one line, pipes
escaped, no control character, no ``<`` that could open a tag), and the HTML is autoescaped."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from benchmarks.compare import (
    ALL,
    CALLS_TOLERANCE,
    LATENCY_TOLERANCE,
    SIGNIFICANCE,
    TOKENS_TOLERANCE,
    Comparison,
    GroupChange,
    GroupFigures,
    RunLabel,
    group_name,
)
from benchmarks.report.html_templates import html_environment
from benchmarks.report.markdown_text import environment

__all__ = ["ComparisonSection", "comparison_section", "render_comparison_html", "render_comparison_markdown"]


@dataclass(frozen=True)
class RunLine:
    """One of the two runs, as the section names it."""

    role: Literal["A (before)", "B (after)"]
    label: str
    path: str
    description: str
    """Provider and model, latency profile, start and commit, in words."""


@dataclass(frozen=True)
class GroupLine:
    """A group named in a list (regressions, notes, not compared) and what is said of it."""

    name: str
    """``mode · category`` (``target · mode · category`` when the runs have targets), or the mode alone when
    ``every_category``."""
    text: str
    every_category: bool = False
    """The whole mode is only in one run (its categories are folded into this line)."""


@dataclass(frozen=True)
class TextTable:
    """A table of text cells; ``align`` has one ``l`` (names a row) or ``r`` (a figure) per column."""

    header: list[str]
    align: str
    rows: list[list[str]]


@dataclass(frozen=True)
class ComparisonSection:
    """What the section shows, every figure as text; the templates lay it out."""

    title: str
    runs: list[RunLine]
    settings_changed: list[str]
    warnings: list[str]
    regressions: list[GroupLine]
    notes: list[GroupLine]
    not_compared: list[GroupLine]
    groups_title: str
    groups: TextTable
    tolerances: str
    flip_tests: str
    """The exact McNemar p of the flips per mode (``toolcalling p = 0.008, …``)."""
    flips: TextTable | None
    """The turns that flipped, newly failing first (``None``: none did)."""


def _pct(figures: GroupFigures | None) -> str:
    if figures is None:
        return "–"
    i = figures.accuracy_interval
    return f"{figures.accuracy:.1%} ({i.low * 100:.0f}–{i.high * 100:.0f})"


def _pair(a: float | None, b: float | None, decimals: int) -> str:
    if a is None or b is None:
        shown = a if a is not None else b
        return "–" if shown is None else f"{shown:.{decimals}f}"
    delta = b - a
    sign = "+" if delta > 0 else "−" if delta < 0 else "±"
    return f"{a:.{decimals}f} → {b:.{decimals}f} ({sign}{abs(delta):.{decimals}f})"


def _rate(figures: GroupFigures | None) -> str:
    rate = figures.valid_plan_rate if figures is not None else None
    if figures is None or rate is None:
        return "n/a"
    return f"{rate:.1%} ({figures.plans_valid}/{figures.plans_checked})"


def _run_line(role: Literal["A (before)", "B (after)"], label: RunLabel) -> RunLine:
    parts = [label.provider + (f" {label.model}" if label.model else "")]
    parts += [f"latency profile {label.latency_profile}"] if label.latency_profile else []
    parts.append(f"started {label.started_at}")
    parts += [f"commit {label.commit[:12]}"] if label.commit else []
    return RunLine(role, label.label, label.path, ", ".join(parts))


_PAIRED_COLUMNS = (
    ("calls_mean", 2),
    ("input_tokens_mean", 0),
    ("output_tokens_mean", 0),
    ("latency_p50", 1),
    ("simulated_first_answer_p50", 1),
    ("first_answer_p50", 1),
)
"""The figures shown as ``A → B (delta)``, with their decimals."""


def _group_row(g: GroupChange, named: bool) -> list[str]:
    def pair(name: str, decimals: int) -> str:
        before = getattr(g.a, name) if g.a else None
        return _pair(before, getattr(g.b, name) if g.b else None, decimals)

    paired = [pair(name, decimals) for name, decimals in _PAIRED_COLUMNS]
    simulated = g.b.simulated if g.b is not None else g.a.simulated if g.a is not None else False
    paired[3] += " (sim.)" if simulated else ""
    rates = (_rate(g.a), _rate(g.b))
    return [
        *([g.target] if named else []),
        g.mode,
        g.category,
        f"{g.a.turns if g.a else 0} / {g.b.turns if g.b else 0}",
        _pct(g.a),
        _pct(g.b),
        *paired,
        "n/a" if rates == ("n/a", "n/a") else " → ".join(rates),
        "yes" if g.regression else "" if g.compared else "not compared",
    ]


def _not_compared(comparison: Comparison) -> list[GroupLine]:
    """Each group only one run has; a mode's categories fold into the mode when the whole mode is missing."""
    groups = comparison.not_compared
    whole = {(g.target, g.mode) for g in groups if g.category == ALL}
    lines = []
    for g in groups:
        name = group_name(comparison.targets, g.target, g.mode)
        if g.category == ALL:
            lines.append(GroupLine(name, ", ".join(g.reasons), every_category=True))
        elif (g.target, g.mode) not in whole:
            lines.append(GroupLine(f"{name} · {g.category}", ", ".join(g.reasons)))
    return lines


_HEADER = [
    "mode", "category", "turns A / B", "accuracy A (95% CI)", "accuracy B (95% CI)", "calls/turn",
    "input tok/turn", "output tok/turn", "latency p50 ms", "first answer p50 ms, simulated",
    "first answer p50 ms, measured", "valid plans", "regression",
]  # fmt: skip

TOLERANCES = (
    f"Tolerances: calls/turn +{CALLS_TOLERANCE}, tokens +{TOKENS_TOLERANCE:.0%}, latency and first answer "
    f"+{LATENCY_TOLERANCE:.0%} (measured figures only for a mode overall); an accuracy or valid-plan drop "
    f"counts when an exact McNemar test over the turns both runs ran gives p < {SIGNIFICANCE} (runs sharing "
    "no turn: Wilson 95% intervals apart). Latency is simulated (sim.) when both runs were profiled. Valid "
    "plans: turns whose request for operations was valid as written, out of those that recorded it (n/a: "
    "none did)."
)


def _flips(comparison: Comparison) -> TextTable | None:
    named = comparison.targets
    flips = [*comparison.newly_failing, *comparison.newly_passing]
    if not flips:
        return None
    header = ["now", *(["target"] if named else []), "mode", "scenario", "turn", "rep", "why it fails now"]
    rows = [
        [
            "passes" if f.now_passes else "fails",
            *([f.target] if named else []),
            f.mode,
            f.scenario,
            str(f.turn),
            str(f.repetition),
            f.why,
        ]
        for f in flips
    ]
    return TextTable(header, "lll" + ("l" if named else "") + "rrl", rows)


def comparison_section(comparison: Comparison) -> ComparisonSection:
    """The section's data: every line and table cell of the comparison, as text."""
    named = comparison.targets

    def name(g: GroupChange) -> str:
        return f"{group_name(named, g.target, g.mode)} · {g.category}"

    return ComparisonSection(
        title=f"Changes from {comparison.a.label} to {comparison.b.label}",
        runs=[_run_line("A (before)", comparison.a), _run_line("B (after)", comparison.b)],
        settings_changed=comparison.settings_changed,
        warnings=comparison.warnings,
        regressions=[GroupLine(name(g), ", ".join(g.reasons)) for g in comparison.regressions],
        notes=[GroupLine(name(g), ", ".join(g.notes)) for g in comparison.groups if g.notes],
        not_compared=_not_compared(comparison),
        groups_title="Per target, mode and category" if named else "Per mode and category",
        groups=TextTable(
            [*(["target"] if named else []), *_HEADER],
            ("l" if named else "") + "llrrrrrrrrrrl",
            [_group_row(g, named) for g in comparison.groups],
        ),
        tolerances=TOLERANCES + (" Groups are matched by target name." if named else ""),
        flip_tests=", ".join(f"{mode} p = {p:.3f}" for mode, p in comparison.flips_p_value.items()),
        flips=_flips(comparison),
    )


def render_comparison_markdown(comparison: Comparison) -> str:
    """The comparison as a Markdown section (``## Changes from A to B``) of the combined report."""
    template = environment().get_template("comparison.md.j2")
    return template.render(section=comparison_section(comparison))


def render_comparison_html(comparison: Comparison) -> str:
    """The comparison as an HTML fragment, ``<section id="comparison">…</section>``, of the combined page."""
    return (
        html_environment().get_template("comparison.html.j2").render(section=comparison_section(comparison))
    )
