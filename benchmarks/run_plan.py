"""What a benchmark run is: its settings (:class:`RunConfig`), its units (one scenario run by one target in
one mode and repetition, a fresh conversation each), the warm-up units, and which units an existing results
file already holds complete, so that ``resume`` runs only the rest and refuses a file written with settings
that would mix figures."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Self

from pydantic import BaseModel, ConfigDict, Field, model_validator

from benchmarks.results import (
    RESULTS_FILE,
    RunMeta,
    RunResults,
    TurnRow,
)
from benchmarks.scenario import Scenario
from benchmarks.targets import DEFAULT_TARGET, BenchTarget, implicit_target
from shared.errors import ConfigurationError
from shared.llm.factory import DEFAULT_MAX_TOKENS, DEFAULT_TIMEOUT_S

if TYPE_CHECKING:
    pass


class RunConfig(BaseModel):
    """What to run and where to write it."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    modes: list[str] = Field(min_length=1)
    out_dir: Path
    repeat: int = Field(default=1, ge=1)
    concurrency: int = Field(default=1, ge=1)
    resume: bool = False
    provider: str = "offline"
    model: str | None = None
    base_url: str | None = None
    latency_profile: str | None = None
    structured: bool = False
    """Ask tool calling for a structured final answer (so it produces state too)."""
    tool_call_recovery: bool = True
    """Tool calling recovers tool calls written as text (``--no-tool-call-recovery`` turns it off)."""
    max_tokens: int | None = Field(default=DEFAULT_MAX_TOKENS, ge=1)
    """Output cap of every model call (``None``: no cap)."""
    timeout: float | None = Field(default=DEFAULT_TIMEOUT_S, gt=0)
    """Timeout of every model request in seconds (``None``: none)."""
    scenario_paths: list[str] = Field(default_factory=list)
    tags: list[str] = Field(default_factory=list)
    warmup: int = Field(default=0, ge=0)
    """Warm-up turns per target and mode, run before the measured ones: recorded with ``warmup`` set
    (repetition 0), left out of every figure."""
    targets: list[BenchTarget] = Field(default_factory=list)
    """The models of the matrix (``--target``); empty: one implicit target from ``provider``, ``model`` and
    ``base_url``."""
    prompt_cache: bool = True
    """Offline targets model a prefix cache; ``False`` builds them with ``prompt_cache_size=0``."""

    @model_validator(mode="after")
    def _unique_targets(self) -> Self:
        names = [target.name for target in self.targets]
        if len(set(names)) != len(names):
            raise ValueError(f"target names must be unique, got {names}")
        return self

    @property
    def run_targets(self) -> list[BenchTarget]:
        """``targets``, or the one implicit target."""
        return list(self.targets) or [implicit_target(self.provider, self.model, self.base_url)]

    @property
    def results_path(self) -> Path:
        """Where turn records are streamed."""
        return self.out_dir / RESULTS_FILE


@dataclass(frozen=True)
class Unit:
    """One scenario run by one target in one mode and repetition: a fresh conversation."""

    mode: str
    scenario: Scenario
    repetition: int
    target: str = DEFAULT_TARGET

    @property
    def key(self) -> tuple[str, str, str, int]:
        """(target, mode, scenario id, repetition)."""
        return (self.target, self.mode, self.scenario.id, self.repetition)


UnitKey = tuple[str, str, str, int]
"""(target, mode, scenario id, repetition)."""


def plan_units(
    scenarios: Sequence[Scenario],
    modes: Sequence[str],
    repeat: int,
    targets: Sequence[str] = (DEFAULT_TARGET,),
) -> list[Unit]:
    """Every (target, mode, scenario, repetition), repetition-major so partial runs cover every scenario
    early, and the targets side by side within a scenario."""
    return [
        Unit(mode=mode, scenario=scenario, repetition=rep, target=target)
        for rep in range(1, repeat + 1)
        for scenario in scenarios
        for target in targets
        for mode in modes
    ]


def warmup_units(
    scenarios: Sequence[Scenario],
    modes: Sequence[str],
    turns: int,
    targets: Sequence[str] = (DEFAULT_TARGET,),
) -> list[Unit]:
    """The first ``turns`` turns of the suite per target and mode (scenarios in order, the last cut short),
    as repetition 0."""
    units = []
    for target in targets:
        for mode in modes:
            left = turns
            for scenario in scenarios:
                if left <= 0:
                    break
                head = scenario.model_copy(update={"turns": scenario.turns[:left]})
                units.append(Unit(mode=mode, scenario=head, repetition=0, target=target))
                left -= len(head.turns)
    return units


def completed_units(rows: Sequence[TurnRow], scenarios: Sequence[Scenario]) -> set[UnitKey]:
    """Units whose turns are exactly the scenario's turns (1 … n), each recorded."""
    lengths = {s.id: len(s.turns) for s in scenarios}
    seen: dict[UnitKey, set[int]] = defaultdict(set)
    for row in rows:
        seen[row.unit].add(row.turn)
    return {
        unit
        for unit, turns in seen.items()
        if unit[2] in lengths and turns == set(range(1, lengths[unit[2]] + 1))
    }


_RESUME_SETTINGS = ("latency_profile", "structured", "tool_call_recovery")
"""Run settings that change the figures: a resumed run must keep them."""

_TARGET_SETTINGS = ("provider", "model", "base_url")
"""What a target name stands for: a resumed run must keep it for every target name both runs use."""


def _changed_settings(previous: RunMeta, config: RunConfig) -> list[str]:
    """The settings ``config`` changes from ``previous`` that would mix figures (empty: safe to resume)."""
    changed = [
        f"{name} {getattr(previous, name)!r} → {getattr(config, name)!r}"
        for name in _RESUME_SETTINGS
        if getattr(previous, name) != getattr(config, name)
    ]
    if previous.prompt_cache is not None and previous.prompt_cache != config.prompt_cache:
        changed.append(f"prompt_cache {previous.prompt_cache!r} → {config.prompt_cache!r}")
    before = {target.name: target for target in previous.run_targets}
    for target in config.run_targets:
        old = before.get(target.name)
        if old is None:
            continue
        prefix = "" if target.name == DEFAULT_TARGET else f"target {target.name}: "
        changed += [
            f"{prefix}{name} {getattr(old, name)!r} → {getattr(target, name)!r}"
            for name in _TARGET_SETTINGS
            if getattr(old, name) != getattr(target, name)
        ]
    return changed


def resumable_rows(previous: RunResults, config: RunConfig, units: Sequence[Unit]) -> list[TurnRow]:
    """The rows of ``previous`` to keep: complete units of this run, one row per turn.

    Raises :class:`ConfigurationError` when ``previous`` was written with other settings, whose rows would
    be mixed into figures they do not belong to.
    """
    changed = _changed_settings(previous.meta, config)
    if changed:
        raise ConfigurationError(
            f"Cannot resume {config.results_path}: it was run with other settings ({'; '.join(changed)}). "
            "Use another --out, or run without --resume."
        )
    planned = {unit.key for unit in units}
    latest: dict[tuple[str, str, str, int, int], TurnRow] = {}
    for row in previous.rows:
        if row.unit in planned:
            latest[(*row.unit, row.turn)] = row
    done = completed_units(list(latest.values()), [unit.scenario for unit in units])
    return [row for row in latest.values() if row.unit in done]
