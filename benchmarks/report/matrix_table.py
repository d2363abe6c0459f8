"""The model matrix of a run with several targets: the targets, then one grid per figure with targets as rows
and modes as columns."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from benchmarks.cost import CostEstimate
from benchmarks.report.cost_table import costs_of, usd_cell
from benchmarks.report.summary import ModeSummary, Summary, tokens_text
from benchmarks.report.tables import Table, accuracy_cell, valid_plan_cell
from benchmarks.results import RunMeta

MATRIX_CAPTION = (
    "Targets as rows, modes as columns. Every figure is computed from one target's turns; statistics that "
    "compare modes (the paired comparison) are computed within a target, never across targets."
)


def targets_table(meta: RunMeta) -> Table:
    """One row per target: name, provider, model (the provider's default when none was given), base URL."""
    return (
        ["target", "provider", "model", "base URL"],
        [[t.name, t.provider, t.model_name, t.base_url or "–"] for t in meta.targets],
    )


def _ms(value: float | None) -> str | None:
    return None if value is None else f"{value:,.0f}" if value >= 100 else f"{value:.1f}"


_FIGURES: tuple[tuple[str, Callable[[ModeSummary], str | None]], ...] = (
    ("Accuracy (95% CI)", accuracy_cell),
    ("Model calls per turn (mean)", lambda m: f"{m.calls_mean:.2f}"),
    ("Input tokens per turn (mean)", lambda m: tokens_text(m, m.input_tokens_mean, ",.0f")),
    ("Output tokens per turn (mean)", lambda m: tokens_text(m, m.output_tokens_mean, ",.0f")),
    (
        "Cached share of input",
        lambda m: None if m.cached_share is None else tokens_text(m, m.cached_share, ".0%"),
    ),
    ("Latency p50 ms, simulated", lambda m: _ms(m.simulated_p50)),
    ("Latency p50 ms, measured", lambda m: _ms(m.latency_p50)),
    ("First answer p50 ms, simulated", lambda m: _ms(m.simulated_first_answer_p50)),
    ("First answer p50 ms, measured", lambda m: _ms(m.first_answer_p50)),
    ("Valid plans", valid_plan_cell),
)
"""The matrix's figures: (title, a mode's cell, ``None`` when it lacks the figure)."""


def _cell(read: Callable[[ModeSummary], str | None], mode: ModeSummary | None) -> str:
    value = read(mode) if mode is not None else None
    return "–" if value is None else value


def matrix_grids(
    summary: Summary, cost: CostEstimate | Sequence[CostEstimate]
) -> list[tuple[str, list[str], list[list[str]]]]:
    """``(title, header, rows)`` per figure, targets as rows and modes as columns; a figure no cell has
    (cached share, simulated latency, first answer) is left out. Empty for one target."""
    if not summary.matrix:
        return []
    modes = list(dict.fromkeys(m.mode for _, m in summary.cells()))
    header = ["target", *modes]
    grids = []
    for title, read in _FIGURES:
        rows = [
            [t.target.name, *(_cell(read, t.summary.mode(mode)) for mode in modes)] for t in summary.targets
        ]
        if any(cell != "–" for row in rows for cell in row[1:]):
            grids.append((title, header, rows))
    costs = {c.target: c for c in costs_of(cost)}

    def usd(target: str, mode: str) -> str:
        cell = found.mode(mode) if (found := costs.get(target)) is not None else None
        return usd_cell(cell.usd_per_1000_turns) if cell is not None else "–"

    usd_rows = [[t.target.name, *(usd(t.target.name, mode) for mode in modes)] for t in summary.targets]
    return [*grids, ("USD per 1,000 turns", header, usd_rows)]
