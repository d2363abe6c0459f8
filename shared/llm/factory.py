"""Build a LangChain chat model from a provider name and options: the one place that constructs providers.

Engines never build provider clients themselves; they receive the :class:`BaseChatModel` this factory
returns (see docs/design.md). Every provider defaults to temperature 0 (Gemini's own default is 0.7). Problems
the user must fix (a missing API key, an unknown provider, an optional package that is not installed) raise
:class:`~shared.errors.ConfigurationError` with one sentence saying what to set or install.
"""

from __future__ import annotations

import importlib
import os
from typing import TYPE_CHECKING, Any, Literal, get_args

from shared.errors import ConfigurationError
from shared.llm.faults import FaultConfig, FaultMode

if TYPE_CHECKING:
    from langchain_core.language_models import BaseChatModel

    from shared.llm.latency import LatencyProfile

ProviderName = Literal["offline", "ollama", "gemini", "openai"]
"""The providers :func:`build_chat_model` knows."""

PROVIDERS: tuple[str, ...] = get_args(ProviderName)

DEFAULT_MODELS: dict[str, str] = {
    "offline": "offline-sales",
    "ollama": "llama3.1:8b",
    "gemini": "gemini-2.5-flash",
    "openai": "gpt-4o-mini",
}
"""The model each provider uses when none is given."""

_PACKAGES: dict[str, tuple[str, str]] = {
    "ollama": ("langchain_ollama", "langchain-ollama"),
    "gemini": ("langchain_google_genai", "langchain-google-genai"),
    "openai": ("langchain_openai", "langchain-openai"),
}


def build_chat_model(
    provider: str = "offline",
    *,
    model: str | None = None,
    base_url: str | None = None,
    api_key: str | None = None,
    temperature: float = 0.0,
    num_ctx: int | None = None,
    timeout: float | None = None,
    max_retries: int = 0,
    latency_profile: LatencyProfile | str | None = None,
    faults: FaultConfig | FaultMode | None = None,
) -> BaseChatModel:
    """Build the chat model for ``provider``.

    Args:
        provider: ``offline`` (default, the deterministic :class:`OfflineSalesModel`), ``ollama``
            (``ChatOllama``), ``gemini`` (``ChatGoogleGenerativeAI``) or ``openai`` (``ChatOpenAI``; with
            ``base_url`` also llama.cpp server, vLLM or LM Studio).
        model: Model name; each provider has a default (:data:`DEFAULT_MODELS`).
        base_url: Server URL. Ollama falls back to ``OLLAMA_HOST``, then to the client's default.
        api_key: Gemini / OpenAI key; defaults to ``GOOGLE_API_KEY`` (or ``GEMINI_API_KEY``) /
            ``OPENAI_API_KEY``.
        temperature: Sampling temperature, 0 by default everywhere.
        num_ctx: Ollama context window in tokens.
        timeout: Request timeout in seconds (network providers).
        max_retries: Retries the Gemini / OpenAI SDKs make on their own (Ollama's client makes none). 0 by
            default so that every request a provider receives is a model call the usage tracker counts (the
            planner's two-call bound and the benchmark's figures stay true); raise it for production.
        latency_profile: Offline only: a :class:`LatencyProfile` or a preset name (``gpu-8b``, ``cpu-8b``,
            ``gemini-flash``).
        faults: Offline only: a :class:`FaultConfig` or a bare fault mode (rate 1.0, seed 0).

    Raises:
        ConfigurationError: unknown provider, missing key, missing optional package, or an offline-only
            option given to a network provider.
    """
    name = provider.strip().lower()
    if name not in PROVIDERS:
        raise ConfigurationError(
            f"Unknown model provider {provider!r}; valid providers: {', '.join(PROVIDERS)}."
        )
    if name == "offline":
        return _offline(model, temperature, latency_profile, faults)
    if latency_profile is not None or faults is not None:
        raise ConfigurationError(
            f"Latency profiles and fault injection only apply to the offline provider, not {name!r}."
        )
    chosen = model or DEFAULT_MODELS[name]
    if name == "ollama":
        return _ollama(chosen, base_url, temperature, num_ctx, timeout)
    if max_retries < 0:
        raise ConfigurationError(f"max_retries must be 0 or more, not {max_retries}.")
    if name == "gemini":
        return _gemini(chosen, base_url, api_key, temperature, timeout, max_retries)
    return _openai(chosen, base_url, api_key, temperature, timeout, max_retries)


def _offline(
    model: str | None,
    temperature: float,
    latency_profile: LatencyProfile | str | None,
    faults: FaultConfig | FaultMode | None,
) -> BaseChatModel:
    from shared.llm.latency import resolve_latency_profile
    from shared.llm.offline import OfflineSalesModel

    try:
        profile = resolve_latency_profile(latency_profile)
    except ValueError as exc:
        raise ConfigurationError(str(exc)) from None
    fault_config = FaultConfig(mode=faults) if isinstance(faults, str) else faults
    return OfflineSalesModel(
        model_name=model or DEFAULT_MODELS["offline"],
        temperature=temperature,
        latency_profile=profile,
        faults=fault_config,
    )


def _import_provider(name: str) -> Any:
    module, package = _PACKAGES[name]
    try:
        return importlib.import_module(module)
    except ImportError:
        raise ConfigurationError(
            f"The {name!r} provider needs the optional package {package}: run `pip install {package}`."
        ) from None


def _ollama(
    model: str, base_url: str | None, temperature: float, num_ctx: int | None, timeout: float | None
) -> BaseChatModel:
    module = _import_provider("ollama")
    kwargs: dict[str, Any] = {"model": model, "temperature": temperature}
    url = base_url or os.environ.get("OLLAMA_HOST") or None
    if url:
        kwargs["base_url"] = url
    if num_ctx is not None:
        kwargs["num_ctx"] = num_ctx
    if timeout is not None:
        kwargs["client_kwargs"] = {"timeout": timeout}
    model_instance: BaseChatModel = module.ChatOllama(**kwargs)
    return model_instance


def _gemini(
    model: str,
    base_url: str | None,
    api_key: str | None,
    temperature: float,
    timeout: float | None,
    max_retries: int,
) -> BaseChatModel:
    key = api_key or os.environ.get("GOOGLE_API_KEY") or os.environ.get("GEMINI_API_KEY")
    if not key:
        raise ConfigurationError("The gemini provider needs an API key: set GOOGLE_API_KEY or pass api_key.")
    module = _import_provider("gemini")
    kwargs: dict[str, Any] = {
        "model": model,
        "google_api_key": key,
        "temperature": temperature,
        # Gemini's client counts *attempts* (and reads 0 as "the SDK's default"): one attempt = no retry.
        "max_retries": max_retries + 1,
    }
    if base_url:
        kwargs["base_url"] = base_url
    if timeout is not None:
        kwargs["timeout"] = timeout
    model_instance: BaseChatModel = module.ChatGoogleGenerativeAI(**kwargs)
    return model_instance


def _openai(
    model: str,
    base_url: str | None,
    api_key: str | None,
    temperature: float,
    timeout: float | None,
    max_retries: int,
) -> BaseChatModel:
    key = api_key or os.environ.get("OPENAI_API_KEY")
    if not key:
        raise ConfigurationError(
            "The openai provider needs an API key: set OPENAI_API_KEY or pass api_key "
            "(any non-empty value works for local servers that ignore it)."
        )
    module = _import_provider("openai")
    kwargs: dict[str, Any] = {
        "model": model,
        "api_key": key,
        "temperature": temperature,
        "max_retries": max_retries,
    }
    if base_url:
        kwargs["base_url"] = base_url
    if timeout is not None:
        kwargs["timeout"] = timeout
    model_instance: BaseChatModel = module.ChatOpenAI(**kwargs)
    return model_instance
