"""The model matrix of a run with several targets: one grid per figure, targets as rows and modes as columns
(every figure computed from one target's turns)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from benchmarks.cost import CostEstimate
from benchmarks.report.summary import ModeSummary, Summary, tokens_text
from benchmarks.report.tables import accuracy_cell, costs_of, usd_cell, valid_plan_cell

MATRIX_CAPTION = (
    "Targets as rows, modes as columns. Every figure is computed from one target's turns; statistics that "
    "compare modes (the paired comparison) are computed within a target, never across targets."
)


def matrix_grids(
    summary: Summary, cost: CostEstimate | Sequence[CostEstimate]
) -> list[tuple[str, list[str], list[list[str]]]]:
    """The model matrix: ``(title, header, rows)`` per figure, targets as rows and modes as columns; a figure
    no cell has (cached share, simulated latency, first answer) is left out. Empty for one target."""
    if not summary.matrix:
        return []
    modes = list(dict.fromkeys(m.mode for _, m in summary.cells()))
    costs = {c.target: c for c in costs_of(cost)}

    def ms(value: float | None) -> str:
        return "–" if value is None else f"{value:,.0f}" if value >= 100 else f"{value:.1f}"

    def usd(target: str, mode: str) -> str:
        found = costs.get(target)
        cell = found.mode(mode) if found is not None else None
        return usd_cell(cell.usd_per_1000_turns) if cell is not None else "–"

    figures: list[tuple[str, Callable[[ModeSummary], str | None]]] = [
        ("Accuracy (95% CI)", accuracy_cell),
        ("Model calls per turn (mean)", lambda m: f"{m.calls_mean:.2f}"),
        ("Input tokens per turn (mean)", lambda m: tokens_text(m, m.input_tokens_mean, ",.0f")),
        ("Output tokens per turn (mean)", lambda m: tokens_text(m, m.output_tokens_mean, ",.0f")),
        (
            "Cached share of input",
            lambda m: None if m.cached_share is None else tokens_text(m, m.cached_share, ".0%"),
        ),
        ("Latency p50 ms, simulated", lambda m: None if m.simulated_p50 is None else ms(m.simulated_p50)),
        ("Latency p50 ms, measured", lambda m: ms(m.latency_p50)),
        (
            "First answer p50 ms, simulated",
            lambda m: None if m.simulated_first_answer_p50 is None else ms(m.simulated_first_answer_p50),
        ),
        (
            "First answer p50 ms, measured",
            lambda m: None if m.first_answer_p50 is None else ms(m.first_answer_p50),
        ),
        ("Valid plans", valid_plan_cell),
    ]
    grids = []
    for title, read in figures:
        rows = []
        for entry in summary.targets:
            row = [entry.target.name]
            for mode in modes:
                found = entry.summary.mode(mode)
                value = read(found) if found is not None else None
                row.append("–" if value is None else value)
            rows.append(row)
        if any(cell != "–" for row in rows for cell in row[1:]):
            grids.append((title, ["target", *modes], rows))
    grids.append(
        (
            "USD per 1,000 turns",
            ["target", *modes],
            [[t.target.name, *(usd(t.target.name, mode) for mode in modes)] for t in summary.targets],
        )
    )
    return grids
