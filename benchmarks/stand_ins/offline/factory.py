"""The deterministic offline model with its options checked: what ``build_model("offline")`` builds."""

from __future__ import annotations

from typing import Any

from benchmarks.stand_ins.faults import FaultConfig
from benchmarks.stand_ins.latency import resolve_latency_profile
from benchmarks.stand_ins.offline._cache import DEFAULT_PROMPT_CACHE_SIZE
from benchmarks.stand_ins.offline._model import OfflineSalesModel
from shared.errors import ConfigurationError


def build_offline_model(
    *,
    model: str,
    temperature: float,
    max_tokens: int | None,
    timeout: float | None,
    latency_profile: Any = None,
    faults: Any = None,
    prompt_cache_size: int | None = None,
) -> OfflineSalesModel:
    """The deterministic offline model with a latency profile (a preset name or a ``LatencyProfile``), a
    fault (a ``FaultConfig`` or a bare fault mode) and the size of its modelled prefix cache."""
    try:
        profile = resolve_latency_profile(latency_profile)
    except ValueError as exc:
        raise ConfigurationError(str(exc)) from None
    if prompt_cache_size is not None and prompt_cache_size < 0:
        raise ConfigurationError(f"prompt_cache_size must be 0 or more, not {prompt_cache_size}.")
    fault_config = FaultConfig(mode=faults) if isinstance(faults, str) else faults
    return OfflineSalesModel(
        model_name=model,
        temperature=temperature,
        max_tokens=max_tokens,
        timeout=timeout,
        latency_profile=profile,
        faults=fault_config,
        prompt_cache_size=DEFAULT_PROMPT_CACHE_SIZE if prompt_cache_size is None else prompt_cache_size,
    )
