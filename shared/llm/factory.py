"""Build a LangChain chat model from a provider name and options: the one place that constructs providers.

Every provider defaults to temperature 0, an output cap (:data:`DEFAULT_MAX_TOKENS`) and a request timeout
(:data:`DEFAULT_TIMEOUT_S`; ``None`` turns either off), so no call can hang a turn. With a ``base_url`` the
OpenAI cap is sent as ``extra_body={"max_tokens": n}``: every OpenAI-compatible server reads it, while some
ignore ``max_completion_tokens``. Problems the user must fix raise :class:`~shared.errors.ConfigurationError`.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, TypeGuard, cast, get_args

from shared.errors import ConfigurationError
from shared.extras import require

if TYPE_CHECKING:
    from langchain_core.language_models import BaseChatModel
    from langchain_core.runnables import Runnable


ProviderName = Literal["ollama", "gemini", "openai"]
"""The providers :func:`build_chat_model` knows. A stand-in model (the deterministic offline one, fault and
latency simulation) is not a provider of this package: whoever runs one builds it and passes it in, like any
other LangChain chat model."""

PROVIDERS: tuple[str, ...] = get_args(ProviderName)

DEFAULT_MODELS: dict[str, str] = {
    "ollama": "llama3.1:8b",
    "gemini": "gemini-2.5-flash",
    "openai": "gpt-4o-mini",
}
"""The model each provider uses when none is given."""

DEFAULT_MAX_TOKENS = 1024
"""Output cap of every model call unless the caller gives another (``None`` = no cap)."""

DEFAULT_TIMEOUT_S = 120.0
"""Request timeout in seconds of every provider unless the caller gives another (``None`` = no timeout)."""

_PROVIDER_MODULES: dict[str, str] = {
    "ollama": "langchain_ollama",
    "gemini": "langchain_google_genai",
    "openai": "langchain_openai",
}
"""Each network provider's LangChain integration, imported on use only (its extra has the provider's name)."""


def build_chat_model(
    provider: str,
    *,
    model: str | None = None,
    base_url: str | None = None,
    api_key: str | None = None,
    temperature: float = 0.0,
    num_ctx: int | None = None,
    max_tokens: int | None = DEFAULT_MAX_TOKENS,
    timeout: float | None = DEFAULT_TIMEOUT_S,
    max_retries: int = 0,
) -> BaseChatModel:
    """Build the chat model for ``provider`` (``ollama``, ``gemini`` or ``openai``).

    Raises:
        ConfigurationError: an unknown provider, a bound out of range, a missing API key or extra.
    """
    name = provider.strip().lower()
    if name not in PROVIDERS:
        raise ConfigurationError(
            f"Unknown model provider {provider!r}; valid providers: {', '.join(PROVIDERS)}."
        )
    check_limits(max_tokens, timeout)
    if name != "ollama" and max_retries < 0:
        raise ConfigurationError(f"max_retries must be 0 or more, not {max_retries}.")
    build = {"ollama": _ollama, "gemini": _gemini, "openai": _openai}[name]
    chosen = model or DEFAULT_MODELS[name]
    return build(
        _ModelSpec(chosen, base_url, api_key, temperature, num_ctx, max_tokens, timeout, max_retries)
    )


def configured_max_tokens(model: BaseChatModel | Runnable[Any, Any]) -> int | None:
    """The output cap ``model`` was built with, or ``None`` when it has none."""
    unwrapped = _unwrap(model)
    for attribute in ("max_tokens", "num_predict", "max_output_tokens"):
        value = getattr(unwrapped, attribute, None)
        if _is_cap(value):
            return value
    extra_body = getattr(unwrapped, "extra_body", None)
    value = extra_body.get("max_tokens") if isinstance(extra_body, dict) else None
    return value if _is_cap(value) else None


def configured_timeout(model: BaseChatModel | Runnable[Any, Any]) -> float | None:
    """The request timeout in seconds ``model`` was built with, or ``None`` when it has none."""
    unwrapped = _unwrap(model)
    candidates = [getattr(unwrapped, "timeout", None), getattr(unwrapped, "request_timeout", None)]
    client_kwargs = getattr(unwrapped, "client_kwargs", None)
    if isinstance(client_kwargs, dict):
        candidates.append(client_kwargs.get("timeout"))
    for value in candidates:
        if isinstance(value, int | float) and not isinstance(value, bool) and value > 0:
            return float(value)
    return None


def _unwrap(model: Any) -> Any:
    # RunnableBinding (bind_tools, bind) keeps the model in ``bound``; bindings may nest.
    for _ in range(10):
        bound = getattr(model, "bound", None)
        if bound is None:
            break
        model = bound
    return model


def _is_cap(value: object) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 1


def check_limits(max_tokens: int | None, timeout: float | None) -> None:
    """Refuse an output cap or a request timeout no model can honour.

    Raises:
        ConfigurationError: ``max_tokens`` is not a whole number of at least 1, or ``timeout`` not a finite
            number of seconds above 0 (``None`` turns either off).
    """
    if max_tokens is not None and not _is_cap(max_tokens):
        raise ConfigurationError(
            f"max_tokens must be a whole number of tokens, 1 or more (or None for no cap), "
            f"not {max_tokens!r}."
        )
    if timeout is not None and (
        isinstance(timeout, bool)
        or not isinstance(timeout, int | float)
        or not math.isfinite(timeout)
        or timeout <= 0
    ):
        raise ConfigurationError(
            f"timeout must be a number of seconds greater than 0 (or None for no timeout), not {timeout!r}."
        )


@dataclass(frozen=True)
class _ModelSpec:
    """What :func:`build_chat_model` passes to a network provider's builder."""

    model: str
    base_url: str | None
    api_key: str | None
    temperature: float
    num_ctx: int | None
    max_tokens: int | None
    timeout: float | None
    max_retries: int


def _import_provider(name: str) -> Any:
    return require(_PROVIDER_MODULES[name], name, f"The {name!r} model provider")


def _api_key(provider: str, given: str | None, variables: tuple[str, ...], note: str = "") -> str:
    """``given``, else the first of the environment ``variables`` that is set; else a clear error."""
    key = given or next((os.environ[name] for name in variables if os.environ.get(name)), None)
    if not key:
        raise ConfigurationError(
            f"The {provider} provider needs an API key: set {variables[0]} or pass api_key{note}."
        )
    return key


def _given(**options: Any) -> dict[str, Any]:
    """The options that are set (not ``None``): the rest is left to the client's own defaults."""
    return {name: value for name, value in options.items() if value is not None}


def _ollama(spec: _ModelSpec) -> BaseChatModel:
    module = _import_provider("ollama")
    options = _given(
        base_url=spec.base_url or os.environ.get("OLLAMA_HOST") or None,
        num_ctx=spec.num_ctx,
        num_predict=spec.max_tokens,
        # ollama.Client passes it to httpx.Client: connect/read/write/pool timeouts (its own default is None).
        client_kwargs=None if spec.timeout is None else {"timeout": spec.timeout},
        async_client_kwargs=_loop_bound_ollama_transport(),
    )
    return cast("BaseChatModel", module.ChatOllama(model=spec.model, temperature=spec.temperature, **options))


def _gemini(spec: _ModelSpec) -> BaseChatModel:
    module = _import_provider("gemini")
    key = _api_key("gemini", spec.api_key, ("GOOGLE_API_KEY", "GEMINI_API_KEY"))
    kwargs: dict[str, Any] = {
        "model": spec.model,
        "google_api_key": key,
        "temperature": spec.temperature,
        # Gemini's client counts *attempts* (and reads 0 as "the SDK's default"): one attempt = no retry.
        "max_retries": spec.max_retries + 1,
    }
    kwargs |= _given(
        base_url=spec.base_url or None,
        max_output_tokens=spec.max_tokens,
        # Sent as whole milliseconds, and 0 ms means "no timeout": never round a tiny timeout down to 0.
        timeout=None if spec.timeout is None else max(spec.timeout, 0.001),
    )
    return cast("BaseChatModel", module.ChatGoogleGenerativeAI(**kwargs))


def _openai(spec: _ModelSpec) -> BaseChatModel:
    module = _import_provider("openai")
    key = _api_key(
        "openai", spec.api_key, ("OPENAI_API_KEY",), " (any non-empty value works for local servers)"
    )
    kwargs: dict[str, Any] = {
        "model": spec.model,
        "api_key": key,
        "temperature": spec.temperature,
        "max_retries": spec.max_retries,
        # Usage in streams (stream_options.include_usage): ChatOpenAI asks for it only without a base_url,
        # and llama.cpp, vLLM and LM Studio send a stream's token counts only when asked.
        "stream_usage": True,
    }
    kwargs |= _given(base_url=spec.base_url or None, timeout=spec.timeout)
    if spec.max_tokens is not None and spec.base_url:
        # ChatOpenAI would send max_completion_tokens, which older llama.cpp servers and llama-cpp-python
        # ignore; every OpenAI-compatible server reads max_tokens.
        kwargs["extra_body"] = {"max_tokens": spec.max_tokens}
    elif spec.max_tokens is not None:
        kwargs["max_tokens"] = spec.max_tokens
    kwargs.update(_retrying_http_clients())
    return cast("BaseChatModel", module.ChatOpenAI(**kwargs))


_PROXY_VARIABLES = ("HTTPS_PROXY", "HTTP_PROXY", "ALL_PROXY", "https_proxy", "http_proxy", "all_proxy")


def _proxy_configured() -> bool:
    return any(os.environ.get(name) for name in _PROXY_VARIABLES)


def _loop_bound_ollama_transport() -> dict[str, Any] | None:
    """``ollama.AsyncClient``'s transport with a connection pool per event loop
    (:mod:`shared.llm.loop_pools`), so that one ``ChatOllama`` serves ``ask`` and any ``asyncio.run``.
    None when the environment names a proxy (a client with its own transport ignores the proxy variables)."""
    if _proxy_configured():
        return None
    import httpx

    from shared.llm.loop_pools import LoopBoundPools

    return {"transport": LoopBoundPools(httpx.AsyncHTTPTransport)}


def _retrying_http_clients() -> dict[str, Any]:
    """The OpenAI SDK's HTTP clients over transports that resend a request once when its connection failed
    before the server answered (a keep-alive connection the server had closed): see
    :mod:`shared.llm.connection_retry`. The async one pools its connections per event loop
    (:mod:`shared.llm.loop_pools`). Timeouts come from the SDK's per-request options, as before."""
    if _proxy_configured():
        return {}
    import openai

    from shared.llm.connection_retry import AsyncRetryingTransport, RetryingTransport

    limits = openai.DEFAULT_CONNECTION_LIMITS
    return {
        "http_client": openai.DefaultHttpxClient(transport=RetryingTransport(limits=limits)),
        "http_async_client": openai.DefaultAsyncHttpxClient(transport=AsyncRetryingTransport(limits=limits)),
    }
