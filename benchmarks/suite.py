"""The pieces a benchmark run opens (:func:`open_suite`): one seeded ERP database (read only) and registry for
every target and mode, and per target its own model and memory store in the output directory, so targets
never see each other's conversations; within a target the modes share the model and the store, so they
differ only in their architecture.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING

from benchmarks.modes import build_engine
from benchmarks.provenance import Provenance, collect_provenance
from benchmarks.run_plan import RunConfig
from benchmarks.run_turns import CallerResolver, EngineFactory
from benchmarks.scoring.turn import TurnScorer
from benchmarks.targets import BenchTarget
from shared.errors import ConfigurationError
from shared.security import Caller

if TYPE_CHECKING:
    from langchain_core.language_models import BaseChatModel


@dataclass(frozen=True)
class SuitePieces:
    """What :func:`open_suite` opened for a run: engines per target over one ERP, and how to score."""

    engine_factories: dict[str, EngineFactory]
    """Target name → the factory of its engines (its own model and memory store)."""
    scorer: TurnScorer
    callers: CallerResolver
    provenance: Provenance

    @property
    def engine_factory(self) -> EngineFactory:
        """The factory of the run's first target (the only one without ``--target``)."""
        return next(iter(self.engine_factories.values()))


def build_target_model(target: BenchTarget, config: RunConfig) -> BaseChatModel:
    """The model of ``target`` with the run's cap and timeout; offline targets also get the latency profile,
    and no modelled prefix cache when ``config.prompt_cache`` is off."""
    from benchmarks.stand_ins.models import build_model

    offline = target.offline
    return build_model(
        target.provider,
        model=target.model,
        base_url=target.base_url,
        latency_profile=config.latency_profile if offline else None,
        max_tokens=config.max_tokens,
        timeout=config.timeout,
        prompt_cache_size=0 if offline and not config.prompt_cache else None,
    )


def _check_offline_only(config: RunConfig) -> None:
    """Offline-only settings need an offline target: say so rather than ignore them."""
    if any(target.offline for target in config.run_targets):
        return
    providers = ", ".join(sorted({target.provider for target in config.run_targets}))
    if config.latency_profile is not None:
        raise ConfigurationError(
            f"Latency profiles only apply to the offline provider, not {providers}: drop --latency-profile."
        )
    if not config.prompt_cache:
        raise ConfigurationError(
            "--no-prompt-cache only applies to the offline provider's modelled prefix cache, not "
            f"{providers}: drop it (a real provider caches on its own)."
        )


def _record_prompt_cache(provenance: Provenance, models: Mapping[str, BaseChatModel], first: str) -> None:
    """Note each offline model's prefix-cache size in its identity (what actually ran)."""
    for name, model in models.items():
        size = getattr(model, "prompt_cache_size", None)
        if not isinstance(size, int):
            continue
        identities = [provenance.models.get(name), provenance.model if name == first else None]
        for identity in identities:
            if identity is not None:
                identity.details["prompt_cache_size"] = size


@contextmanager
def open_suite(
    config: RunConfig,
    *,
    db_url: str | None = None,
    model: BaseChatModel | Mapping[str, BaseChatModel] | None = None,
) -> Iterator[SuitePieces]:
    """Open the shared pieces of a run (seeded ERP, registry) and each target's own (model, fresh memory
    store ``memory.sqlite3``, or ``memory-NAME.sqlite3`` per named target, in ``out_dir``); close them when
    the block ends.

    ``model`` overrides the providers in ``config`` (tests pass a fake): one model for every target, or one
    per target name.
    """
    from shared.erp.database import open_demo_erp
    from shared.erp.users import DEFAULT_USER, caller_for
    from shared.memory.store import MemoryStore
    from shared.operations.sales import sales_registry

    _check_offline_only(config)
    config.out_dir.mkdir(parents=True, exist_ok=True)
    targets = config.run_targets
    models: dict[str, BaseChatModel] = {}
    for target in targets:
        given = model.get(target.name) if isinstance(model, Mapping) else model
        models[target.name] = given if given is not None else build_target_model(target, config)
    erp = open_demo_erp(db_url)
    registry = sales_registry()
    first = targets[0]
    provenance = collect_provenance(
        first.provider, first.model, first.base_url, registry=registry, targets=config.targets
    )
    _record_prompt_cache(provenance, models, first.name)
    stores: list[MemoryStore] = []
    try:
        factories: dict[str, EngineFactory] = {}
        for target in targets:
            memory = "memory.sqlite3" if not config.targets else f"memory-{target.name}.sqlite3"
            stores.append(MemoryStore(f"sqlite:///{config.out_dir / memory}"))
            factories[target.name] = functools.partial(
                build_engine,
                registry=registry,
                erp=erp,
                store=stores[-1],
                model=models[target.name],
                structured=config.structured,
                plan_schema=config.plan_schema,
                tool_call_recovery=config.tool_call_recovery,
            )

        @functools.cache
        def callers(name: str | None) -> Caller:  # one ERP read per user and run
            return caller_for(erp, name or DEFAULT_USER)

        yield SuitePieces(
            engine_factories=factories,
            scorer=TurnScorer(registry, erp),
            callers=callers,
            provenance=provenance,
        )
    finally:
        for store in stores:
            store.close()
        erp.engine.dispose()
