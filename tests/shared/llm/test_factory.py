"""build_chat_model: providers, defaults and the one-sentence configuration errors (no network calls); the
stand-ins' builder, which adds the offline model, gives the same errors for the providers it passes on."""

from __future__ import annotations

import builtins
from typing import Any

import pytest

from benchmarks.stand_ins import build_model
from benchmarks.stand_ins.faults import FaultConfig
from benchmarks.stand_ins.latency import LATENCY_PROFILES
from benchmarks.stand_ins.offline import OfflineSalesModel
from shared.errors import ConfigurationError
from shared.llm.factory import (
    DEFAULT_MAX_TOKENS,
    DEFAULT_TIMEOUT_S,
    build_chat_model,
    configured_max_tokens,
    configured_timeout,
)


@pytest.fixture(autouse=True)
def _no_provider_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("GOOGLE_API_KEY", "GEMINI_API_KEY", "OPENAI_API_KEY", "OLLAMA_HOST"):
        monkeypatch.delenv(name, raising=False)


def test_offline_is_the_default_with_options() -> None:
    assert build_model(prompt_cache_size=0).prompt_cache_size == 0  # type: ignore[attr-defined]
    model = build_model(latency_profile="gpu-8b", faults="empty")
    assert isinstance(model, OfflineSalesModel)
    assert model.prompt_cache_size > 0
    assert model.temperature == 0.0
    assert model.latency_profile == LATENCY_PROFILES["gpu-8b"]
    assert model.faults == FaultConfig(mode="empty")


CONFIGURATION_ERRORS = {
    "unknown provider": ({"provider": "anthropic"}, "valid providers: offline, ollama, gemini, openai"),
    "unknown latency profile": ({"latency_profile": "warp-speed"}, "gpu-8b"),
    "latency for a network provider": (
        {"provider": "ollama", "latency_profile": "gpu-8b"},
        "only apply to the offline provider",
    ),
    "prompt cache for a network provider": (
        {"provider": "ollama", "prompt_cache_size": 0},
        "only apply to the offline provider",
    ),
    "negative prompt cache": ({"prompt_cache_size": -1}, "prompt_cache_size must be 0 or more"),
    "gemini without a key": ({"provider": "gemini"}, "set GOOGLE_API_KEY or pass api_key"),
    "openai without a key": ({"provider": "openai"}, "set OPENAI_API_KEY or pass api_key"),
    "negative retries": ({"provider": "openai", "api_key": "k", "max_retries": -1}, "max_retries"),
}


@pytest.mark.parametrize(
    ("options", "message"), CONFIGURATION_ERRORS.values(), ids=CONFIGURATION_ERRORS.keys()
)
def test_a_wrong_option_is_a_configuration_error_saying_what_to_do(
    options: dict[str, Any], message: str
) -> None:
    with pytest.raises(ConfigurationError, match=message):
        build_model(**options)


def test_the_library_builds_network_providers_only() -> None:
    with pytest.raises(
        ConfigurationError, match="Unknown model provider 'offline'; valid providers: ollama, gemini"
    ):
        build_chat_model("offline")


def test_ollama_uses_base_url_then_ollama_host(monkeypatch: pytest.MonkeyPatch) -> None:
    explicit = build_chat_model("ollama", base_url="http://127.0.0.1:1", num_ctx=8192, timeout=5)
    assert (explicit.base_url, explicit.num_ctx, explicit.temperature) == ("http://127.0.0.1:1", 8192, 0.0)  # type: ignore[attr-defined]
    assert explicit.model == "llama3.1:8b"  # type: ignore[attr-defined]
    monkeypatch.setenv("OLLAMA_HOST", "http://127.0.0.1:2")
    assert build_chat_model("ollama", model="qwen3:8b").base_url == "http://127.0.0.1:2"  # type: ignore[attr-defined]


def test_gemini_with_key_base_url_and_temperature_zero(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GOOGLE_API_KEY", "test-key")
    model: Any = build_chat_model("gemini", base_url="http://127.0.0.1:3", timeout=7)
    assert model.temperature == 0.0
    assert model.base_url == "http://127.0.0.1:3"
    assert model.google_api_key.get_secret_value() == "test-key"
    assert model.model.endswith("gemini-2.5-flash")


def test_openai_accepts_a_base_url() -> None:
    model: Any = build_chat_model("openai", api_key="none", base_url="http://127.0.0.1:4/v1", model="local")
    assert (model.model_name, model.openai_api_base, model.temperature) == (
        "local",
        "http://127.0.0.1:4/v1",
        0.0,
    )


def test_missing_optional_package_says_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    real_import = builtins.__import__

    def fake_import(name: str, *args: Any, **kwargs: Any) -> Any:
        if name.startswith("langchain_ollama"):
            raise ImportError(name)
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", fake_import)
    monkeypatch.delitem(__import__("sys").modules, "langchain_ollama", raising=False)
    with pytest.raises(
        ConfigurationError, match=r"needs the 'ollama' extra: pip install 'erp-ai-harness\[ollama\]'"
    ):
        build_chat_model("ollama")


def test_sdk_retries_are_off_by_default_so_every_provider_request_is_a_counted_call() -> None:
    gemini = build_chat_model("gemini", api_key="k", base_url="http://127.0.0.1:9")
    openai = build_chat_model("openai", api_key="k", base_url="http://127.0.0.1:9/v1")
    assert gemini.max_retries == 1  # Gemini counts attempts: one attempt, no retry
    assert openai.max_retries == 0
    assert build_chat_model("openai", api_key="k", max_retries=3).max_retries == 3


# -- output caps and timeouts --------------------------------------------------------------------------------


def test_every_provider_gets_the_default_output_cap_and_timeout() -> None:
    import httpx

    offline: Any = build_model()
    ollama: Any = build_chat_model("ollama")
    gemini: Any = build_chat_model("gemini", api_key="k")
    openai: Any = build_chat_model("openai", api_key="k")
    assert (offline.max_tokens, offline.timeout) == (DEFAULT_MAX_TOKENS, DEFAULT_TIMEOUT_S)
    assert ollama.num_predict == DEFAULT_MAX_TOKENS
    assert ollama._client._client.timeout == httpx.Timeout(DEFAULT_TIMEOUT_S)  # what really bounds a request
    assert (gemini.max_output_tokens, gemini.timeout) == (DEFAULT_MAX_TOKENS, DEFAULT_TIMEOUT_S)
    assert (openai.max_tokens, openai.request_timeout) == (DEFAULT_MAX_TOKENS, DEFAULT_TIMEOUT_S)


def test_none_turns_the_cap_and_the_timeout_off() -> None:
    import httpx

    ollama: Any = build_chat_model("ollama", max_tokens=None, timeout=None)
    assert ollama.num_predict is None
    assert ollama._client._client.timeout == httpx.Timeout(None)
    gemini: Any = build_chat_model("gemini", api_key="k", max_tokens=None, timeout=None)
    assert (gemini.max_output_tokens, gemini.timeout) == (None, None)
    openai: Any = build_chat_model("openai", api_key="k", max_tokens=None, timeout=None)
    assert (openai.max_tokens, openai.request_timeout, openai.extra_body) == (None, None, None)
    assert (configured_max_tokens(ollama), configured_timeout(openai)) == (None, None)


def test_a_tiny_gemini_timeout_is_not_rounded_down_to_no_timeout() -> None:
    # google-genai takes whole milliseconds and reads 0 as "no timeout".
    gemini: Any = build_chat_model("gemini", api_key="k", timeout=0.0001)
    assert gemini.timeout == 0.001


@pytest.mark.parametrize("max_tokens", [0, -5, 1.5, True, "100"])
def test_a_cap_below_one_token_is_a_configuration_error(max_tokens: Any) -> None:
    with pytest.raises(ConfigurationError, match="max_tokens must be a whole number of tokens, 1 or more"):
        build_chat_model("openai", api_key="k", max_tokens=max_tokens)


@pytest.mark.parametrize("timeout", [0, -1.0, float("nan"), float("inf"), True, "30"])
def test_a_timeout_that_is_not_a_positive_number_is_a_configuration_error(timeout: Any) -> None:
    with pytest.raises(ConfigurationError, match="timeout must be a number of seconds greater than 0"):
        build_model(timeout=timeout)
    with pytest.raises(ConfigurationError, match="timeout must be a number of seconds greater than 0"):
        build_chat_model("ollama", timeout=timeout)


def test_caps_and_timeouts_are_configurable_and_read_back_from_every_provider() -> None:
    from langchain_core.language_models import GenericFakeChatModel

    models: list[Any] = [
        build_model(max_tokens=11, timeout=2),
        build_chat_model("ollama", max_tokens=12, timeout=3),
        build_chat_model("gemini", api_key="k", max_tokens=13, timeout=4),
        build_chat_model("openai", api_key="k", max_tokens=14, timeout=5),
        build_chat_model("openai", api_key="k", base_url="http://127.0.0.1:9/v1", max_tokens=15, timeout=6),
    ]
    assert [configured_max_tokens(m) for m in models] == [11, 12, 13, 14, 15]
    assert [configured_timeout(m) for m in models] == [2, 3, 4, 5, 6]
    assert configured_max_tokens(models[0].bind_tools([]).bind(stop=["x"])) == 11  # bindings are unwrapped
    assert configured_max_tokens(GenericFakeChatModel(messages=iter([]))) is None
