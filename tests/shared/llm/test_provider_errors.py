"""provider_errors: what the real provider clients raise and report, mapped to the project's error tree."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest
from langchain_core.exceptions import OutputParserException
from langchain_core.messages import AIMessage

from benchmarks.stand_ins import build_model
from benchmarks.stand_ins.emulators import create_emulator
from shared.errors import (
    CustomerNotFoundError,
    ModelOutputError,
    OutputLimitError,
    ProviderError,
    ProviderTimeoutError,
)
from shared.llm.provider_errors import as_erp_error, stopped_at_limit, usage_from_error
from tests.shared.llm.provider_fakes import (
    SocketServer,
    length_error,
    network_model,
)

# -- as_erp_error --------------------------------------------------------------------------------------------


def test_model_and_provider_errors_pass_through_unchanged() -> None:
    for error in (ModelOutputError("not JSON"), ProviderError("HTTP 503")):
        assert as_erp_error(error) is error


def test_any_other_project_error_a_model_raises_is_the_provider_failing() -> None:
    converted = as_erp_error(CustomerNotFoundError("compras_cliente", "ACME", []))
    assert type(converted) is ProviderError and "CustomerNotFoundError" in str(converted)


def _sdk_timeouts() -> list[BaseException]:
    import httpx2
    import openai
    import requests
    from langchain_google_genai.chat_models import GoogleAPIError
    from langchain_openai.chat_models.base import OpenAITimeoutError

    request = httpx2.Request("POST", "http://127.0.0.1/v1/chat/completions")
    return [
        httpx.ReadTimeout("timed out"),
        httpx.ConnectTimeout("timed out"),
        httpx2.ReadTimeout("timed out"),  # google-genai's default HTTP backend: not an httpx subclass
        openai.APITimeoutError(request=request),
        OpenAITimeoutError(request),
        TimeoutError("timed out"),  # also asyncio.TimeoutError and socket.timeout (aliases since 3.11)
        requests.Timeout("timed out"),
        _raised_from(RuntimeError("model call failed"), httpx.ReadTimeout("timed out")),  # wrapped
        GoogleAPIError(504, {"error": {"code": 504, "message": "Deadline", "status": "DEADLINE_EXCEEDED"}}),
    ]


def _raised_from(error: BaseException, cause: BaseException) -> BaseException:
    try:
        raise error from cause
    except BaseException as raised:
        return raised


@pytest.mark.parametrize("error", _sdk_timeouts(), ids=lambda e: type(e).__qualname__)
def test_sdk_timeouts_become_provider_timeout_errors(error: BaseException) -> None:
    mapped = as_erp_error(error, timeout=7.5)
    assert isinstance(mapped, ProviderTimeoutError)
    assert mapped.timeout == 7.5
    assert "did not answer within 7.5 s" in str(mapped)


def test_a_length_stop_from_openai_structured_output_is_an_output_limit_error() -> None:
    mapped = as_erp_error(
        length_error('{"respuesta": "Vendimos', prompt_tokens=1314, completion_tokens=768), max_tokens=768
    )
    assert isinstance(mapped, OutputLimitError)
    assert mapped.max_tokens == 768
    assert mapped.raw == '{"respuesta": "Vendimos'
    assert "cut at 768 tokens" in str(mapped)


def test_an_unparseable_structured_reply_is_a_model_output_error() -> None:
    mapped = as_erp_error(OutputParserException("Invalid json output", llm_output="{oops"))
    assert type(mapped) is ModelOutputError
    assert mapped.raw == "{oops"


def test_anything_else_is_a_provider_error_naming_the_exception() -> None:
    mapped = as_erp_error(ConnectionError("Failed to connect to Ollama"))
    assert type(mapped) is ProviderError
    assert str(mapped) == "The model provider failed: ConnectionError: Failed to connect to Ollama"
    assert str(as_erp_error(ValueError())) == "The model provider failed: ValueError"


# -- usage_from_error ----------------------------------------------------------------------------------------


def test_usage_from_error_reads_the_completion_usage_of_a_length_error_or_is_none() -> None:
    assert usage_from_error(length_error("x", prompt_tokens=1314, completion_tokens=768)) == (1314, 768)
    assert usage_from_error(httpx.ReadTimeout("timed out")) is None
    assert usage_from_error(ProviderError("down")) is None


# -- stopped_at_limit ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("metadata", "expected"),
    [
        ({"finish_reason": "length"}, True),  # OpenAI-compatible servers, the offline model
        ({"done_reason": "length"}, True),  # Ollama
        ({"finish_reason": "MAX_TOKENS"}, True),  # Gemini
        ({"finish_reason": "stop"}, False),
        ({"done_reason": "stop"}, False),
        ({"finish_reason": "STOP"}, False),
        ({}, False),
    ],
)
def test_stopped_at_limit_reads_each_providers_finish_reason(
    metadata: dict[str, Any], expected: bool
) -> None:
    assert stopped_at_limit(AIMessage("…", response_metadata=metadata)) is expected


def test_the_offline_model_cut_at_its_cap_is_stopped_at_limit() -> None:
    model = build_model(max_tokens=1)
    assert stopped_at_limit(model.invoke("¿Cuánto vendimos en 2025?"))  # type: ignore[arg-type]
    assert not stopped_at_limit(build_model().invoke("¿Cuánto vendimos en 2025?"))  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("provider", "sent"),
    [("ollama", '"num_predict": 7'), ("gemini", '"maxOutputTokens": 7'), ("openai", '"max_tokens": 7')],
)
def test_real_clients_cut_at_the_cap_are_stopped_at_limit(provider: str, sent: str) -> None:
    with create_emulator(provider) as server:  # backed by the offline model, which honours the cap
        message = network_model(provider, server.base_url, max_tokens=7).invoke("¿Cuánto vendimos en 2025?")
    assert stopped_at_limit(message)  # type: ignore[arg-type]
    body = json.dumps(server.requests[-1].body)
    assert sent in body
    assert "max_completion_tokens" not in body  # what OpenAI-compatible servers understand is max_tokens


# -- real clients against a server that never answers --------------------------------------------------------


@pytest.mark.parametrize("provider", ["ollama", "openai", "gemini"])
def test_a_stalled_server_ends_in_a_provider_timeout(provider: str) -> None:
    with SocketServer() as server, pytest.raises(Exception) as raised:
        network_model(provider, server.url, timeout=0.5).invoke("hola")
    assert server.connections >= 1
    mapped = as_erp_error(raised.value, timeout=0.5)
    assert isinstance(mapped, ProviderTimeoutError), repr(raised.value)


def test_a_server_that_cannot_parse_the_models_tool_call_is_a_model_output_failure() -> None:
    error = RuntimeError('error parsing tool call: raw=\'{"name": "ventas_anuales"\', err=unexpected end')
    converted = as_erp_error(error)
    assert type(converted) is ModelOutputError
    assert "error parsing tool call" in str(converted)
