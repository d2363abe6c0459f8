"""provider_errors: what the real provider clients raise and report, mapped to the project's error tree."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest
from langchain_core.exceptions import OutputParserException
from langchain_core.messages import AIMessage

from shared.errors import (
    CustomerNotFoundError,
    ModelOutputError,
    OutputLimitError,
    ProviderError,
    ProviderTimeoutError,
)
from shared.llm.factory import build_chat_model, configured_max_tokens
from shared.llm.provider_errors import as_erp_error, stopped_at_limit, usage_from_error
from tests.shared.llm.provider_fakes import (
    ReplyServer,
    StallingServer,
    json_reply,
    length_error,
    openai_completion,
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
    model = build_chat_model(max_tokens=1)
    assert stopped_at_limit(model.invoke("¿Cuánto vendimos en 2025?"))  # type: ignore[arg-type]
    assert not stopped_at_limit(build_chat_model().invoke("¿Cuánto vendimos en 2025?"))  # type: ignore[arg-type]


def _ollama_cut(path: str, body: dict[str, Any]) -> tuple[int, str, bytes]:
    chunks = [
        {"model": "m", "created_at": "2026-11-30T00:00:00Z", "done": False,
         "message": {"role": "assistant", "content": "Vendimos vendimos vendimos"}},
        {"model": "m", "created_at": "2026-11-30T00:00:00Z", "done": True, "done_reason": "length",
         "message": {"role": "assistant", "content": ""}, "prompt_eval_count": 11, "eval_count": 7},
    ]  # fmt: skip
    return 200, "application/x-ndjson", "".join(json.dumps(c) + "\n" for c in chunks).encode()


def _gemini_cut(path: str, body: dict[str, Any]) -> tuple[int, str, bytes]:
    return json_reply(
        {
            "candidates": [
                {
                    "content": {"role": "model", "parts": [{"text": "Vendimos vendimos"}]},
                    "finishReason": "MAX_TOKENS",
                    "index": 0,
                }
            ],
            "usageMetadata": {"promptTokenCount": 11, "candidatesTokenCount": 7, "totalTokenCount": 18},
            "modelVersion": "gemini-2.5-flash",
        }
    )


def _openai_cut(path: str, body: dict[str, Any]) -> tuple[int, str, bytes]:
    return json_reply(openai_completion("Vendimos vendimos", finish_reason="length"))


@pytest.mark.parametrize(
    ("provider", "reply", "suffix"),
    [("ollama", _ollama_cut, ""), ("gemini", _gemini_cut, ""), ("openai", _openai_cut, "/v1")],
)
def test_real_clients_cut_at_the_cap_are_stopped_at_limit(provider: str, reply: Any, suffix: str) -> None:
    with ReplyServer(reply) as server:
        model = build_chat_model(provider, base_url=server.url + suffix, api_key="k", max_tokens=7)
        message = model.invoke("¿Cuánto vendimos en 2025?")
    assert stopped_at_limit(message)  # type: ignore[arg-type]
    sent = json.dumps(server.requests[0].body)
    assert {"ollama": '"num_predict": 7', "gemini": '"maxOutputTokens": 7', "openai": '"max_tokens": 7'}[
        provider
    ] in sent


# -- real clients against a server that never answers --------------------------------------------------------


@pytest.mark.parametrize(("provider", "suffix"), [("ollama", ""), ("openai", "/v1"), ("gemini", "")])
def test_a_stalled_server_ends_in_a_provider_timeout(provider: str, suffix: str) -> None:
    with StallingServer() as server:
        model = build_chat_model(provider, base_url=server.url + suffix, api_key="k", timeout=0.5)
        with pytest.raises(Exception) as raised:
            model.invoke("hola")
    assert server.connections >= 1
    mapped = as_erp_error(raised.value, timeout=0.5)
    assert isinstance(mapped, ProviderTimeoutError), repr(raised.value)


def test_the_cap_a_length_error_reports_is_the_one_the_model_was_built_with() -> None:
    model = build_chat_model("openai", api_key="k", base_url="http://127.0.0.1:9/v1", max_tokens=300)
    mapped = as_erp_error(
        length_error("x", prompt_tokens=1, completion_tokens=300), max_tokens=configured_max_tokens(model)
    )
    assert isinstance(mapped, OutputLimitError) and mapped.max_tokens == 300


def test_a_server_that_cannot_parse_the_models_tool_call_is_a_model_output_failure() -> None:
    error = RuntimeError('error parsing tool call: raw=\'{"name": "ventas_anuales"\', err=unexpected end')
    converted = as_erp_error(error)
    assert type(converted) is ModelOutputError
    assert "error parsing tool call" in str(converted)
