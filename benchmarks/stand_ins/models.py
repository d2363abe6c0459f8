"""The model builder of whoever runs stand-ins (the ``erp-ai`` CLI, the benchmark, the tests): the offline
stand-in by name, every network provider through :func:`shared.llm.build_chat_model`.

``offline`` is the deterministic stand-in model (:mod:`benchmarks.stand_ins.offline`), with an optional
simulated latency profile, an injected fault and a modelled prefix cache; these three apply to it only.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from shared.errors import ConfigurationError
from shared.llm.factory import DEFAULT_MAX_TOKENS, DEFAULT_TIMEOUT_S, build_chat_model, check_limits
from shared.llm.factory import DEFAULT_MODELS as PROVIDER_MODELS
from shared.llm.factory import PROVIDERS as NETWORK_PROVIDERS

if TYPE_CHECKING:
    from langchain_core.language_models import BaseChatModel

__all__ = ["DEFAULT_MODELS", "PROVIDERS", "build_model"]

OFFLINE = "offline"

PROVIDERS: tuple[str, ...] = (OFFLINE, *NETWORK_PROVIDERS)
"""Every provider :func:`build_model` knows: the offline stand-in, then the network providers."""

DEFAULT_MODELS: dict[str, str] = {OFFLINE: "offline-sales", **PROVIDER_MODELS}
"""The model each provider uses when none is given."""


def build_model(
    provider: str = OFFLINE,
    *,
    model: str | None = None,
    base_url: str | None = None,
    api_key: str | None = None,
    temperature: float = 0.0,
    num_ctx: int | None = None,
    max_tokens: int | None = DEFAULT_MAX_TOKENS,
    timeout: float | None = DEFAULT_TIMEOUT_S,
    max_retries: int = 0,
    latency_profile: Any = None,
    faults: Any = None,
    prompt_cache_size: int | None = None,
) -> BaseChatModel:
    """The chat model of ``provider``: the offline stand-in (``latency_profile``: a preset name or a
    ``LatencyProfile``; ``faults``: a ``FaultConfig`` or a bare fault mode; ``prompt_cache_size``: entries of
    its modelled prefix cache), or a network provider built by :func:`shared.llm.build_chat_model`.

    Raises:
        ConfigurationError: an unknown provider, a stand-in option for a network provider, or any problem
            :func:`shared.llm.build_chat_model` reports.
    """
    name = provider.strip().lower()
    if name not in PROVIDERS:
        raise ConfigurationError(
            f"Unknown model provider {provider!r}; valid providers: {', '.join(PROVIDERS)}."
        )
    if name != OFFLINE:
        if latency_profile is not None or faults is not None or prompt_cache_size is not None:
            raise ConfigurationError(
                "Latency profiles, fault injection and the modelled prompt cache only apply to the offline "
                f"provider, not {name!r}."
            )
        return build_chat_model(
            name,
            model=model,
            base_url=base_url,
            api_key=api_key,
            temperature=temperature,
            num_ctx=num_ctx,
            max_tokens=max_tokens,
            timeout=timeout,
            max_retries=max_retries,
        )
    check_limits(max_tokens, timeout)
    from benchmarks.stand_ins.offline.factory import build_offline_model

    return build_offline_model(
        model=model or DEFAULT_MODELS[OFFLINE],
        temperature=temperature,
        max_tokens=max_tokens,
        timeout=timeout,
        latency_profile=latency_profile,
        faults=faults,
        prompt_cache_size=prompt_cache_size,
    )
