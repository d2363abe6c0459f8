"""The comparison of two runs (:mod:`benchmarks.compare`) as Markdown: what was compared, regressions first,
then every group and the turns that flipped; ``compare.md``."""

from __future__ import annotations

from pathlib import Path

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
from benchmarks.report.markdown import render_table

__all__ = ["COMPARISON_FILE", "render_comparison_markdown", "write_comparison"]

COMPARISON_FILE = "compare.md"


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


def _describe(label: RunLabel) -> str:
    text = f"`{label.path}`: {label.provider}" + (f" {label.model}" if label.model else "")
    text += f", latency profile {label.latency_profile}" if label.latency_profile else ""
    text += f", started {label.started_at}"
    return text + (f", commit {label.commit[:12]}" if label.commit else "")


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


def _not_compared_lines(comparison: Comparison) -> list[str]:
    """Each group only one run has; a mode's categories fold into the mode when the whole mode is missing."""
    groups = comparison.not_compared
    if not groups:
        return []
    whole = {(g.target, g.mode) for g in groups if g.category == ALL}
    note = "Only one run has these, so they are not compared and never count as regressions:"
    lines = ["", "## Not compared", "", note, ""]
    for g in groups:
        name = group_name(comparison.targets, g.target, g.mode)
        if g.category == ALL:
            lines.append(f"- **{name}** (every category): {', '.join(g.reasons)}.")
        elif (g.target, g.mode) not in whole:
            lines.append(f"- **{name} · {g.category}**: {', '.join(g.reasons)}.")
    return lines


_HEADER = [
    "mode", "category", "turns A / B", "accuracy A (95% CI)", "accuracy B (95% CI)", "calls/turn",
    "input tok/turn", "output tok/turn", "latency p50 ms", "first answer p50 ms, simulated",
    "first answer p50 ms, measured", "valid plans", "regression",
]  # fmt: skip


def render_comparison_markdown(comparison: Comparison) -> str:
    """The comparison as Markdown: what was compared, regressions first, then every group and the flips."""
    named = comparison.targets
    lines = [
        "# erp-ai-harness: comparison of two runs",
        "",
        f"- A (before): {_describe(comparison.a)}",
        f"- B (after): {_describe(comparison.b)}",
    ]
    if comparison.settings_changed:
        lines.append(f"- Settings that differ: {'; '.join(comparison.settings_changed)}.")
    lines += [f"- **Warning:** {warning}." for warning in comparison.warnings]
    lines += ["", "## Regressions", ""]
    lines += [
        f"- **{group_name(named, g.target, g.mode)} · {g.category}**: {', '.join(g.reasons)}."
        for g in comparison.regressions
    ] or [
        "None: no mode or category lost accuracy or got more expensive or slower beyond tolerance "
        "(of those both runs measured)."
    ]
    notes = [g for g in comparison.groups if g.notes]
    if notes:
        lines += ["", "Drops a paired test does not establish (chance explains them; not regressions):", ""]
        lines += [
            f"- {group_name(named, g.target, g.mode)} · {g.category}: {', '.join(g.notes)}." for g in notes
        ]
    lines += _not_compared_lines(comparison)
    lines += ["", "## Per target, mode and category" if named else "## Per mode and category", ""]
    lines += render_table(
        [*(["target"] if named else []), *_HEADER],
        [_group_row(g, named) for g in comparison.groups],
        align=("l" if named else "") + "llrrrrrrrrrrl",
    )
    lines += [
        "",
        f"Tolerances: calls/turn +{CALLS_TOLERANCE}, tokens +{TOKENS_TOLERANCE:.0%}, latency and first "
        f"answer +{LATENCY_TOLERANCE:.0%} (measured figures only for a mode overall); an accuracy or "
        f"valid-plan drop counts when an exact McNemar test over the turns both runs ran gives p < "
        f"{SIGNIFICANCE} (runs sharing no turn: Wilson 95% intervals apart). Latency is simulated (sim.) "
        "when both runs were profiled. Valid plans: turns whose request for operations was valid as "
        "written, out of those that recorded it (n/a: none did)."
        + (" Groups are matched by target name." if named else ""),
        "",
        "## Turns that flipped",
        "",
    ]
    flips = [*comparison.newly_failing, *comparison.newly_passing]
    if not flips:
        lines.append("None: every turn both runs ran has the same outcome.")
        return "\n".join(lines) + "\n"
    tests = ", ".join(f"{mode} p = {p:.3f}" for mode, p in comparison.flips_p_value.items())
    lines += [f"Exact McNemar test of newly passing vs newly failing turns per mode: {tests}.", ""]
    lines += render_table(
        ["now", *(["target"] if named else []), "mode", "scenario", "turn", "rep", "why it fails now"],
        [
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
        ],
        align="lll" + ("l" if named else "") + "rrl",
    )
    return "\n".join(lines) + "\n"


def write_comparison(comparison: Comparison, out_dir: Path) -> Path:
    """Write ``compare.md`` into ``out_dir`` and return its path."""
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / COMPARISON_FILE
    path.write_text(render_comparison_markdown(comparison), encoding="utf-8")
    return path
