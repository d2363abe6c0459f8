"""What a benchmark run runs: its settings (:class:`RunConfig`), its units (one scenario by one target in one
mode and repetition, a fresh conversation each) and, for ``resume``, which rows of an earlier results file it
keeps: the complete units, when the file was written with settings that do not mix figures.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Self

from pydantic import BaseModel, ConfigDict, Field, model_validator

from benchmarks.results import RESULTS_FILE, RunMeta, RunResults, TurnRow
from benchmarks.scenario import Scenario
from benchmarks.targets import DEFAULT_TARGET, BenchTarget, implicit_target
from planner_mode.plan_schema import PlanSchemaStyle
from shared.errors import ConfigurationError
from shared.llm.factory import DEFAULT_MAX_TOKENS, DEFAULT_TIMEOUT_S


class RunConfig(BaseModel):
    """What to run and where to write it (the settings are those of :class:`~benchmarks.results.RunMeta`)."""

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
    plan_schema: PlanSchemaStyle = "union"
    tool_call_recovery: bool = True
    max_tokens: int | None = Field(default=DEFAULT_MAX_TOKENS, ge=1)
    timeout: float | None = Field(default=DEFAULT_TIMEOUT_S, gt=0)
    scenario_paths: list[str] = Field(default_factory=list)
    tags: list[str] = Field(default_factory=list)
    warmup: int = Field(default=0, ge=0)
    """Warm-up turns per target and mode, run first and recorded as repetition 0, left out of every figure."""
    targets: list[BenchTarget] = Field(default_factory=list)
    """The models of the matrix; empty: one implicit target from ``provider``, ``model`` and ``base_url``."""
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
        return self.out_dir / RESULTS_FILE


UnitKey = tuple[str, str, str, int]
"""(target, mode, scenario id, repetition)."""


@dataclass(frozen=True)
class Unit:
    """One scenario run by one target in one mode and repetition: a fresh conversation."""

    mode: str
    scenario: Scenario
    repetition: int
    target: str = DEFAULT_TARGET

    @property
    def key(self) -> UnitKey:
        return (self.target, self.mode, self.scenario.id, self.repetition)


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
    scenarios: Sequence[Scenario], modes: Sequence[str], turns: int, targets: Sequence[str]
) -> list[Unit]:
    """The first ``turns`` turns of the suite per target and mode (the last scenario cut short), as
    repetition 0."""
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


_RESUME_SETTINGS = ("latency_profile", "structured", "plan_schema", "tool_call_recovery")
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
    """The rows of ``previous`` to keep: the last record of each turn of this run's complete units.

    Raises :class:`ConfigurationError` when ``previous`` was written with settings that would mix figures.
    """
    changed = _changed_settings(previous.meta, config)
    if changed:
        raise ConfigurationError(
            f"Cannot resume {config.results_path}: it was run with other settings ({'; '.join(changed)}). "
            "Use another --out, or run without --resume."
        )
    lengths = {unit.key: len(unit.scenario.turns) for unit in units}
    latest = {(*row.unit, row.turn): row for row in previous.rows if row.unit in lengths}
    turns: dict[UnitKey, set[int]] = defaultdict(set)
    for row in latest.values():
        turns[row.unit].add(row.turn)
    done = {unit for unit, seen in turns.items() if seen == set(range(1, lengths[unit] + 1))}
    return [row for row in latest.values() if row.unit in done]
