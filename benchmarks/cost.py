"""What a run's turns would cost: USD per 1,000 turns per mode (per target in a run with several), from its
token sums and ``benchmarks/pricing.yaml`` (input, cached input and output USD per million tokens per model).

A user file of the same shape replaces or adds entries (:func:`load_pricing`). Local providers cost 0, with
a note saying so; a hosted model without a price gets no figure and a note naming the file to add it to.
"""

from __future__ import annotations

from collections import defaultdict
from importlib import resources
from pathlib import Path
from urllib.parse import urlparse

import yaml
from pydantic import BaseModel, Field, ValidationError

from benchmarks.results import RunMeta, RunResults, TurnRow
from benchmarks.stats import mean
from benchmarks.targets import BenchTarget
from shared.errors import ConfigurationError

TURNS = 1000


class ModelPrice(BaseModel):
    """USD per million tokens of one model."""

    input: float = Field(ge=0)
    cached_input: float | None = Field(default=None, ge=0)
    """Prompt tokens served from the provider's cache; ``None``: billed as ``input``."""
    output: float = Field(ge=0)
    source: str
    as_of: str
    note: str | None = None


class LocalRule(BaseModel):
    """Which runs use a local model, priced at 0."""

    providers: list[str] = Field(default_factory=list)
    hosts: list[str] = Field(default_factory=list)
    note: str = "local model: no per-token price"


class PricingTable(BaseModel):
    """The pricing file: local rule and per-model prices."""

    local: LocalRule = Field(default_factory=LocalRule)
    models: dict[str, ModelPrice] = Field(default_factory=dict)
    reference: list[str] = Field(default_factory=list)
    """Models whose prices are also applied to every run's tokens, for a sense of scale."""

    def price(self, model: str) -> tuple[str, ModelPrice] | None:
        """The entry of ``model``: its own, or the longest name it is a dated snapshot of (``name-…``)."""
        if model in self.models:
            return model, self.models[model]
        candidates = [name for name in self.models if model.startswith(f"{name}-")]
        if not candidates:
            return None
        name = max(candidates, key=len)
        return name, self.models[name]

    def is_local(self, provider: str, base_url: str | None) -> bool:
        if provider in self.local.providers:
            return True
        if not base_url:
            return False
        host = urlparse(base_url if "://" in base_url else f"http://{base_url}").hostname or ""
        return host in {h.strip("[]") for h in self.local.hosts}


def _read(path: Path | str, text: str) -> PricingTable:
    try:
        data = yaml.safe_load(text) or {}
        return PricingTable.model_validate(data)
    except (yaml.YAMLError, ValidationError) as exc:
        raise ConfigurationError(f"{path}: not a valid pricing file: {exc}") from None


def load_pricing(override: Path | None = None) -> PricingTable:
    """The packaged pricing table, with ``override``'s models (and local rule, if given) replacing its own."""
    packaged = resources.files("benchmarks").joinpath("pricing.yaml")
    table = _read("benchmarks/pricing.yaml", packaged.read_text(encoding="utf-8"))
    if override is None:
        return table
    try:
        text = override.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigurationError(f"Cannot read pricing file {override}: {exc}") from None
    user = _read(override, text)
    given = yaml.safe_load(text) or {}
    return PricingTable(
        local=user.local if "local" in given else table.local,
        models={**table.models, **user.models},
        reference=user.reference if "reference" in given else table.reference,
    )


class ModeCost(BaseModel):
    """Token means and cost of one mode."""

    mode: str
    turns: int
    input_tokens_mean: float
    cached_input_tokens_mean: float
    output_tokens_mean: float
    usd_per_1000_turns: float | None
    """``None`` when the model has no price, or no turn reported its tokens."""
    tokens_reported: bool = True
    """``False`` when no turn of the mode reported its token usage: the figures are unknown."""
    reference_usd: dict[str, float] = Field(default_factory=dict)
    """USD per 1,000 turns of the same tokens at each reference model's prices."""


class CostEstimate(BaseModel):
    """The cost section of a report."""

    provider: str
    model: str | None
    priced_as: str | None = None
    """The pricing entry used (the model itself or the one it is a snapshot of)."""
    price: ModelPrice | None = None
    local: bool = False
    note: str
    modes: list[ModeCost]
    reference: list[str] = Field(default_factory=list)
    """The reference models priced in ``ModeCost.reference_usd`` (those with a price)."""
    target: str | None = None
    """The target priced, in a run with several; ``None``: the run's only one."""

    def mode(self, name: str) -> ModeCost | None:
        return next((m for m in self.modes if m.mode == name), None)


def _usd(price: ModelPrice, inputs: list[float], cached: list[float], outputs: list[float]) -> float:
    """USD per 1,000 turns of turns with these input (of which cached) and output tokens."""
    cached_price = price.input if price.cached_input is None else price.cached_input
    per_turn = [
        ((i - c) * price.input + c * cached_price + o * price.output) / 1_000_000
        for i, c, o in zip(inputs, cached, outputs, strict=True)
    ]
    return mean(per_turn) * TURNS


def estimate_costs(results: RunResults, pricing: PricingTable | None = None) -> list[CostEstimate]:
    """One estimate per target of a run with several (each at its model's prices), else the run's one."""
    table = pricing or load_pricing()
    if not results.meta.matrix:
        return [estimate_cost(results, table)]
    return [estimate_cost(results, table, target=target) for target in results.meta.targets]


def estimate_cost(
    results: RunResults, pricing: PricingTable | None = None, *, target: BenchTarget | None = None
) -> CostEstimate:
    """USD per 1,000 turns per mode of ``results`` (warm-up turns left out); with ``target``, of that
    target's turns at its model's prices."""
    from benchmarks.stand_ins.models import DEFAULT_MODELS

    table = pricing or load_pricing()
    meta = results.meta
    priced: BenchTarget | RunMeta = target if target is not None else meta
    provider, base_url = priced.provider, priced.base_url
    model = priced.model or DEFAULT_MODELS.get(provider)
    by_mode: dict[str, list[TurnRow]] = defaultdict(list)
    for row in results.scored_rows:
        if target is None or row.target == target.name:
            by_mode[row.mode].append(row)
    order = [m for m in meta.modes if m in by_mode] + [m for m in by_mode if m not in meta.modes]
    local = table.is_local(provider, base_url)
    found = None if local or model is None else table.price(model)
    if local:
        note = table.local.note
    elif found is None:
        note = (
            f"no price for model {model!r} in benchmarks/pricing.yaml: add it to a pricing file "
            "(erp-ai report RESULTS --pricing FILE)"
        )
    else:
        name, price = found
        snapshot = f" (priced as {name})" if name != model else ""
        note = f"{model}{snapshot}: USD per million tokens from {price.source}, as of {price.as_of}"
        if price.note:
            note += f" ({price.note})"
    references = [name for name in table.reference if name in table.models]
    modes = []
    for mode in order:
        every = by_mode[mode]
        rows = [row for row in every if row.usage_reported]  # unknown tokens, not 0
        cached = [float(row.cached_input_tokens or 0) for row in rows]
        inputs = [float(row.input_tokens) for row in rows]
        outputs = [float(row.output_tokens) for row in rows]
        usd = 0.0 if local else _usd(found[1], inputs, cached, outputs) if found is not None else None
        if not rows:
            usd = None  # no turn reported its tokens: the cost is not known
        modes.append(
            ModeCost(
                mode=mode,
                turns=len(every),
                tokens_reported=bool(rows),
                input_tokens_mean=mean(inputs),
                cached_input_tokens_mean=mean(cached),
                output_tokens_mean=mean(outputs),
                usd_per_1000_turns=usd,
                reference_usd={
                    name: _usd(table.models[name], inputs, cached, outputs) for name in references
                },
            )
        )
    return CostEstimate(
        provider=provider,
        model=model,
        target=target.name if target is not None else None,
        priced_as=found[0] if found else None,
        price=found[1] if found else None,
        local=local,
        note=note,
        modes=modes,
        reference=references,
    )
