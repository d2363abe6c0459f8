"""The cost table every report shows: token means and USD per 1,000 turns per mode (and target), with the
prices' source and, for scale, the same tokens at reference hosted models' prices."""

from __future__ import annotations

from collections.abc import Sequence

from benchmarks.cost import CostEstimate
from benchmarks.report.tables import Table


def costs_of(cost: CostEstimate | Sequence[CostEstimate]) -> list[CostEstimate]:
    """One estimate, or one per target, as a list."""
    return [cost] if isinstance(cost, CostEstimate) else list(cost)


def usd_cell(value: float | None) -> str:
    """USD per 1,000 turns, or ``–`` for a model without a price."""
    return "–" if value is None else f"{value:.2f}"


def _references(costs: Sequence[CostEstimate]) -> list[str]:
    """The hosted models the cost table also prices the tokens at (the run's own models left out)."""
    priced = {c.priced_as for c in costs}
    return [name for name in costs[0].reference if name not in priced] if costs else []


def cost_rows(cost: CostEstimate | Sequence[CostEstimate]) -> Table:
    """Token means and USD per 1,000 turns per mode (and target, when given one estimate per target)."""
    costs = costs_of(cost)
    matrix = any(c.target is not None for c in costs)
    references = _references(costs)
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
                (f"{v:.0f}" for v in (m.input_tokens_mean, m.cached_input_tokens_mean, m.output_tokens_mean))
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
    references = _references(costs)
    if references:
        text += (
            f" The {', '.join(references)} columns price the same tokens at those hosted models' prices "
            "(benchmarks/pricing.yaml), for a sense of scale."
        )
    return text
