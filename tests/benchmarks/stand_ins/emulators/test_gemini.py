"""The Gemini emulator, exercised through the real ``ChatGoogleGenerativeAI`` client over loopback HTTP.

``ChatGoogleGenerativeAI(model=…, google_api_key=…, base_url=server.base_url)`` points the client at the
emulator (``base_url`` becomes google-genai's ``HttpOptions.base_url``; ``api_version`` picks ``v1`` or
``v1beta``). ``max_retries=1`` turns off google-genai's retries so a 500 surfaces at once.
"""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest
from langchain_google_genai.chat_models import GoogleInvalidRequestError

from benchmarks.stand_ins.emulators import EmulatorServer
from benchmarks.stand_ins.emulators.gemini import GeminiContent, openapi_to_json_schema, to_langchain_messages
from tests.benchmarks.stand_ins.emulators.emulator_fakes import (
    GEMINI_KEY,
    client,
    mejor_cliente,
    ventas_anuales,
)
from tests.fakes import FunctionChatModel

MODEL = "gemini-2.5-flash"


def model_requests(server: EmulatorServer) -> list[Any]:
    return [r for r in server.requests if ":" in r.path]


def test_raw_stream_is_server_sent_events(gemini_server: EmulatorServer) -> None:
    url = f"{gemini_server.base_url}/v1beta/models/{MODEL}:streamGenerateContent?alt=sse"
    body = {"contents": [{"role": "user", "parts": [{"text": "uno dos tres cuatro"}]}]}

    with httpx.stream("POST", url, json=body, headers={"x-goog-api-key": GEMINI_KEY}) as response:
        assert response.headers["content-type"] == "text/event-stream"
        events = [json.loads(line[6:]) for line in response.iter_lines() if line.startswith("data: ")]

    assert len(events) > 1
    assert events[-1]["candidates"][0]["finishReason"] == "STOP"
    assert all("finishReason" not in e["candidates"][0] for e in events[:-1])
    assert events[-1]["usageMetadata"]["totalTokenCount"] == 4 + 6
    assert events[-1]["modelVersion"] == MODEL


def test_v1beta_is_served_too(gemini_server: EmulatorServer) -> None:
    reply = client(gemini_server, api_version="v1beta").invoke("hola")

    assert reply.content == "Hola. Dijiste: hola"
    assert model_requests(gemini_server)[0].path.startswith("/v1beta/models/")


def test_tool_choice_becomes_function_calling_config(
    gemini_server: EmulatorServer, fake_model: FunctionChatModel
) -> None:
    model = client(gemini_server).bind_tools([ventas_anuales, mejor_cliente], tool_choice="mejor_cliente")

    reply = model.invoke("¿Quién fue el mejor cliente?")

    assert [c["name"] for c in reply.tool_calls] == ["mejor_cliente"]  # type: ignore[attr-defined]
    config = model_requests(gemini_server)[0].body["toolConfig"]["functionCallingConfig"]
    assert config["mode"] == "ANY"
    assert fake_model.calls[-1].tool_choice == "mejor_cliente"


def test_response_schema_in_openapi_form_is_converted() -> None:
    schema = {"type": "OBJECT", "properties": {"anio": {"type": "INTEGER"}, "xs": {"type": "ARRAY"}}}

    assert openapi_to_json_schema(schema) == {
        "type": "object",
        "properties": {"anio": {"type": "integer"}, "xs": {"type": "array"}},
    }


def test_function_responses_pair_with_calls_by_name() -> None:
    contents = [
        GeminiContent.model_validate({"role": "user", "parts": [{"text": "q"}]}),
        GeminiContent.model_validate(
            {"role": "model", "parts": [{"functionCall": {"name": "a"}}, {"functionCall": {"name": "b"}}]}
        ),
        GeminiContent.model_validate(
            {
                "role": "user",
                "parts": [
                    {"functionResponse": {"name": "b", "response": {"output": "rb"}}},
                    {"functionResponse": {"name": "a", "response": {"x": 1}}},
                ],
            }
        ),
    ]

    messages = to_langchain_messages(contents)

    call_a, call_b = messages[1].tool_calls  # type: ignore[attr-defined]
    assert [(m.tool_call_id, m.content) for m in messages[2:]] == [  # type: ignore[attr-defined]
        (call_b["id"], "rb"),
        (call_a["id"], '{"x": 1}'),
    ]


def test_missing_api_key_is_403_permission_denied(gemini_server: EmulatorServer) -> None:
    url = f"{gemini_server.base_url}/v1beta/models/{MODEL}:generateContent"

    response = httpx.post(url, json={"contents": [{"parts": [{"text": "x"}]}]})

    assert response.status_code == 403
    assert response.json()["error"]["status"] == "PERMISSION_DENIED"


def test_wrong_api_key_is_rejected_like_the_real_api(gemini_server: EmulatorServer) -> None:
    with pytest.raises(GoogleInvalidRequestError, match="API key not valid"):
        client(gemini_server, key="wrong").invoke("hola")


# -- faults -------------------------------------------------------------------------------------------


def test_malformed_tool_call_fault_ends_with_malformed_function_call(gemini_server: EmulatorServer) -> None:
    # The real API does not raise: the candidate ends with MALFORMED_FUNCTION_CALL and carries no call.
    reply = client(gemini_server, fault="malformed_tool_call").bind_tools([ventas_anuales]).invoke("ventas")

    assert reply.response_metadata["finish_reason"] == "MALFORMED_FUNCTION_CALL"
    assert reply.tool_calls == []  # type: ignore[attr-defined]
    assert reply.content == ""


def test_stream_without_alt_sse_returns_a_json_array(gemini_server: EmulatorServer) -> None:
    url = f"{gemini_server.base_url}/v1beta/models/{MODEL}:streamGenerateContent"
    body = {"contents": [{"role": "user", "parts": [{"text": "uno dos tres cuatro"}]}]}

    chunks = httpx.post(url, json=body, headers={"x-goog-api-key": GEMINI_KEY}).json()

    assert isinstance(chunks, list) and len(chunks) > 1
    assert chunks[-1]["candidates"][0]["finishReason"] == "STOP"
