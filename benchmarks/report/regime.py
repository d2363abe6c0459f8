"""What kind of run produced a report's figures, said before any figure: a real model (its accuracy and
latency are that model's), the offline stand-in (structure, not accuracy), and whether model time was
simulated under a latency profile.

Every report opens with :func:`first_line`; a combined report gives one :class:`Regime` per run."""

from __future__ import annotations

from dataclasses import dataclass

from benchmarks.results import RunMeta

STRUCTURE_ONLY = (
    "the offline stand-in answered, so it measures structure (model calls, tokens, harness overhead), "
    "not accuracy"
)
"""What a structure run's first line says about its figures."""


@dataclass(frozen=True)
class Regime:
    """The regime of one run: who answered, under which clock, with which prefix cache."""

    provider: str
    """The provider, or ``"N targets"`` for a model matrix."""
    model: str | None
    latency_profile: str | None
    prefix_cache: str
    """``"modelled"``, ``"not modelled"`` or ``"not recorded"`` for the offline stand-in; ``"the
    provider's own"`` for a real provider."""
    structure_only: bool
    """Whether the offline stand-in produced every figure (accuracy is then not measured)."""
    mixed: bool = False
    """A model matrix whose targets are partly the offline stand-in and partly real models."""

    @property
    def simulated(self) -> bool:
        """Whether model time is simulated under a latency profile (as well as measured)."""
        return self.latency_profile is not None

    @property
    def kind(self) -> str:
        """``"real model"``, ``"offline structure"``, ``"offline, simulated <profile>"`` or ``"mixed"``."""
        if self.mixed:
            return "mixed (real and offline targets)"
        if not self.structure_only:
            return "real model"
        return f"offline, simulated {self.latency_profile}" if self.simulated else "offline structure"

    @property
    def who(self) -> str:
        """``"openai qwen2.5-coder-1.5b-instruct"`` (provider and model)."""
        return f"{self.provider} {self.model}" if self.model else self.provider


def regime_of(meta: RunMeta) -> Regime:
    """The regime of the run ``meta`` describes."""
    if meta.any_offline:
        cache = {True: "modelled", False: "not modelled", None: "not recorded"}[meta.prompt_cache]
    else:
        cache = "the provider's own"
    matrix = meta.matrix
    return Regime(
        provider=f"{len(meta.targets)} targets" if matrix else meta.provider,
        model=", ".join(t.model_name for t in meta.targets) if matrix else meta.model,
        latency_profile=meta.latency_profile,
        prefix_cache=cache,
        structure_only=meta.offline,
        mixed=meta.any_offline and not meta.offline,
    )


def _simulated_clause(regime: Regime) -> str:
    if not regime.simulated:
        return ""
    return (
        f"; its model time is simulated under the {regime.latency_profile} latency profile (computed from "
        "token counts, never slept), beside the time measured on this machine"
    )


def first_line(meta: RunMeta) -> str:
    """The sentence every report of the run opens with: what its figures measure."""
    regime = regime_of(meta)
    if regime.structure_only:
        return f"Structure run: {STRUCTURE_ONLY}{_simulated_clause(regime)}."
    if regime.mixed:
        offline = ", ".join(t.name for t in meta.targets if t.offline)
        return (
            f"Model matrix of real and offline targets: the offline targets ({offline}) measure structure "
            "(model calls, tokens, harness overhead), not accuracy; the others are real models"
            f"{_simulated_clause(regime)}."
        )
    model = meta.model or f"the {meta.provider} provider's default model"
    who = "real models answered" if meta.matrix else f"a real model, {model} ({meta.provider}), answered"
    return (
        f"Real-model run: {who} every turn, so accuracy and latency are the model's, measured on this "
        f"machine{_simulated_clause(regime)}."
    )


def title(meta: RunMeta) -> str:
    """The report's title, which already says what the figures measure."""
    regime = regime_of(meta)
    if regime.structure_only:
        simulated = f"; model time simulated ({regime.latency_profile})" if regime.simulated else ""
        return (
            "erp-ai-harness benchmark: structure (calls, tokens, overhead), not accuracy — offline stand-in"
            + simulated
        )
    if meta.model and not meta.matrix:
        return f"erp-ai-harness benchmark: which architecture for {meta.model}"
    return "erp-ai-harness benchmark: which architecture for these models"


def combined_title(count: int) -> str:
    """The title of a report that puts ``count`` runs side by side."""
    return f"erp-ai-harness benchmark: {count} runs side by side"
