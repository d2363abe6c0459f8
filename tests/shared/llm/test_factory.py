"""build_chat_model: providers, defaults and the one-sentence configuration errors (no network calls)."""

from __future__ import annotations

import builtins
from typing import Any

import pytest

from shared.errors import ConfigurationError
from shared.llm.factory import build_chat_model
from shared.llm.faults import FaultConfig
from shared.llm.latency import LATENCY_PROFILES
from shared.llm.offline import OfflineSalesModel


@pytest.fixture(autouse=True)
def _no_provider_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("GOOGLE_API_KEY", "GEMINI_API_KEY", "OPENAI_API_KEY", "OLLAMA_HOST"):
        monkeypatch.delenv(name, raising=False)


def test_offline_is_the_default_with_options() -> None:
    model = build_chat_model(latency_profile="gpu-8b", faults="empty")
    assert isinstance(model, OfflineSalesModel)
    assert model.temperature == 0.0
    assert model.latency_profile == LATENCY_PROFILES["gpu-8b"]
    assert model.faults == FaultConfig(mode="empty")


def test_unknown_provider_lists_the_valid_ones() -> None:
    with pytest.raises(ConfigurationError, match="valid providers: offline, ollama, gemini, openai"):
        build_chat_model("anthropic")


def test_unknown_latency_profile_is_a_configuration_error() -> None:
    with pytest.raises(ConfigurationError, match="gpu-8b"):
        build_chat_model(latency_profile="warp-speed")


def test_offline_only_options_are_refused_for_network_providers() -> None:
    with pytest.raises(ConfigurationError, match="only apply to the offline provider"):
        build_chat_model("ollama", latency_profile="gpu-8b")


def test_ollama_uses_base_url_then_ollama_host(monkeypatch: pytest.MonkeyPatch) -> None:
    explicit = build_chat_model("ollama", base_url="http://127.0.0.1:1", num_ctx=8192, timeout=5)
    assert (explicit.base_url, explicit.num_ctx, explicit.temperature) == ("http://127.0.0.1:1", 8192, 0.0)  # type: ignore[attr-defined]
    assert explicit.model == "llama3.1:8b"  # type: ignore[attr-defined]
    monkeypatch.setenv("OLLAMA_HOST", "http://127.0.0.1:2")
    assert build_chat_model("ollama", model="qwen3:8b").base_url == "http://127.0.0.1:2"  # type: ignore[attr-defined]


def test_gemini_needs_a_key() -> None:
    with pytest.raises(ConfigurationError, match="set GOOGLE_API_KEY or pass api_key"):
        build_chat_model("gemini")


def test_gemini_with_key_base_url_and_temperature_zero(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GOOGLE_API_KEY", "test-key")
    model: Any = build_chat_model("gemini", base_url="http://127.0.0.1:3", timeout=7)
    assert model.temperature == 0.0
    assert model.base_url == "http://127.0.0.1:3"
    assert model.google_api_key.get_secret_value() == "test-key"
    assert model.model.endswith("gemini-2.5-flash")


def test_openai_needs_a_key_and_accepts_a_base_url() -> None:
    with pytest.raises(ConfigurationError, match="set OPENAI_API_KEY or pass api_key"):
        build_chat_model("openai")
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
    with pytest.raises(ConfigurationError, match="pip install langchain-ollama"):
        build_chat_model("ollama")


def test_sdk_retries_are_off_by_default_so_every_provider_request_is_a_counted_call() -> None:
    gemini = build_chat_model("gemini", api_key="k", base_url="http://127.0.0.1:9")
    openai = build_chat_model("openai", api_key="k", base_url="http://127.0.0.1:9/v1")
    assert gemini.max_retries == 1  # Gemini counts attempts: one attempt, no retry
    assert openai.max_retries == 0
    assert build_chat_model("openai", api_key="k", max_retries=3).max_retries == 3
    with pytest.raises(ConfigurationError, match="max_retries"):
        build_chat_model("openai", api_key="k", max_retries=-1)
