"""The Ollama emulator, exercised through the real ``ChatOllama`` / ``ollama`` clients over loopback HTTP."""

from __future__ import annotations

import json
from typing import Any

import httpx
import ollama
import pytest
from langchain_core.messages import AIMessage, BaseMessage
from langchain_ollama import ChatOllama

from benchmarks.stand_ins.emulators import FAULT_HEADER, EmulatorFaults, EmulatorServer, create_emulator
from tests.benchmarks.stand_ins.emulators.emulator_fakes import client, ventas_anuales
from tests.fakes import CallInfo, FunctionChatModel

MODEL = "llama3.1:8b"


def chat_bodies(server: EmulatorServer) -> list[dict[str, Any]]:
    return [r.body for r in server.requests if r.path == "/api/chat"]


def test_chat_invoke_streams_ndjson_with_the_role_in_every_chunk(ollama_server: EmulatorServer) -> None:
    client(ollama_server).invoke("uno dos tres cuatro cinco seis")

    body = chat_bodies(ollama_server)[0]
    assert body["stream"] is True  # ChatOllama streams even for invoke
    with httpx.stream("POST", f"{ollama_server.base_url}/api/chat", json=body) as response:
        assert response.headers["content-type"] == "application/x-ndjson"
        lines = [json.loads(line) for line in response.iter_lines() if line]
    assert len(lines) > 2
    assert all(line["message"]["role"] == "assistant" for line in lines)
    assert [line["done"] for line in lines] == [False] * (len(lines) - 1) + [True]
    final = lines[-1]
    assert {"prompt_eval_count", "eval_count", "total_duration", "eval_duration", "done_reason"} <= set(final)
    assert (
        "".join(line["message"]["content"] for line in lines)
        == "Hola. Dijiste: uno dos tres cuatro cinco seis"
    )


def test_stream_false_returns_one_object(ollama_server: EmulatorServer) -> None:
    api = ollama.Client(host=ollama_server.base_url)

    response = api.chat(model=MODEL, messages=[{"role": "user", "content": "hola"}], stream=False)

    assert response.done is True
    assert response.message.role == "assistant"
    assert response.message.content == "Hola. Dijiste: hola"
    assert response.eval_count == 3


def test_validate_model_on_init_reads_the_tags(ollama_server: EmulatorServer) -> None:
    ChatOllama(model="llama3.1", base_url=ollama_server.base_url, validate_model_on_init=True)

    assert [r.path for r in ollama_server.requests] == ["/api/tags"]
    with pytest.raises(ValueError, match="not found in Ollama"):
        ChatOllama(model="mistral", base_url=ollama_server.base_url, validate_model_on_init=True)


def test_show_and_version_answer_like_ollama(ollama_server: EmulatorServer) -> None:
    api = ollama.Client(host=ollama_server.base_url)

    shown = api.show(MODEL)
    version = httpx.get(f"{ollama_server.base_url}/api/version").json()

    assert shown.capabilities == ["completion", "tools"]
    assert shown.details is not None and shown.details.family == "llama"
    assert version["version"].count(".") == 2


def test_format_json_reaches_the_server(ollama_server: EmulatorServer) -> None:
    client(ollama_server, format="json").invoke("hola")

    assert chat_bodies(ollama_server)[0]["format"] == "json"


def test_missing_model_is_a_400_error_body(ollama_server: EmulatorServer) -> None:
    response = httpx.post(f"{ollama_server.base_url}/api/chat", json={"messages": []})

    assert response.status_code == 400
    assert response.json() == {"error": "model is required"}


def test_a_failing_backing_model_becomes_a_500() -> None:
    def explode(messages: list[BaseMessage], info: CallInfo) -> AIMessage:
        raise RuntimeError("provider exploded")

    with (
        create_emulator("ollama", model=FunctionChatModel(explode)) as server,
        pytest.raises(ollama.ResponseError) as caught,
    ):
        client(server).invoke("hola")
    assert caught.value.status_code == 500
    assert "provider exploded" in caught.value.error


# -- faults -------------------------------------------------------------------------------------------


def test_stream_error_is_an_error_line_mid_stream_or_a_500_without_streaming(
    ollama_server: EmulatorServer,
) -> None:
    received: list[str] = []
    with pytest.raises(ollama.ResponseError) as caught:
        for chunk in client(ollama_server, fault="stream_error").stream("uno dos tres cuatro cinco seis"):
            received.append(chunk.text)
    api = ollama.Client(host=ollama_server.base_url, headers={FAULT_HEADER: "stream_error"})
    with pytest.raises(ollama.ResponseError) as unstreamed:
        api.chat(model=MODEL, messages=[{"role": "user", "content": "hola"}], stream=False)

    assert caught.value.status_code == -1  # an error line inside a 200 stream
    assert "unexpected EOF" in caught.value.error and "".join(received).startswith("Hola.")
    assert unstreamed.value.status_code == 500


def test_malformed_tool_call_fault_is_ollamas_tool_parsing_error(ollama_server: EmulatorServer) -> None:
    # langchain#34746: Ollama cannot parse the model's tool-call JSON and reports it in the stream.
    with pytest.raises(ollama.ResponseError, match="error parsing tool call") as caught:
        client(ollama_server, fault="malformed_tool_call").bind_tools([ventas_anuales]).invoke("ventas 2025")

    assert "unexpected end of JSON input" in caught.value.error
    assert "ventas_anuales" in caught.value.error


def test_schema_invalid_fault_in_json_mode_fences_the_json(ollama_server: EmulatorServer) -> None:
    reply = client(ollama_server, fault="schema_invalid", format="json").invoke("hola")

    assert reply.text.startswith("```json\n")


def test_a_bad_request_does_not_use_up_a_counted_fault(ollama_server: EmulatorServer) -> None:
    ollama_server.faults = EmulatorFaults(mode="http_500", count=1)
    bad_arguments = {"role": "assistant", "tool_calls": [{"function": {"name": "f", "arguments": "{"}}]}

    rejected = httpx.post(
        f"{ollama_server.base_url}/api/chat", json={"model": MODEL, "messages": [bad_arguments]}
    )

    assert rejected.status_code == 400 and "invalid message" in rejected.json()["error"]
    assert ollama_server.faults.count == 1
    with pytest.raises(ollama.ResponseError):
        client(ollama_server).invoke("hola")


def test_unknown_fault_header_is_a_400(ollama_server: EmulatorServer) -> None:
    with pytest.raises(ollama.ResponseError) as caught:
        client(ollama_server, fault="meteor").invoke("hola")

    assert caught.value.status_code == 400


def test_durations_report_the_models_simulated_latency() -> None:
    def timed(messages: list[BaseMessage], info: CallInfo) -> AIMessage:
        return AIMessage(content="listo", response_metadata={"simulated_latency_ms": 1234.0})

    with create_emulator("ollama", model=FunctionChatModel(timed)) as server:
        reply = client(server).invoke("hola")

    assert reply.response_metadata["total_duration"] == 1_234_000_000
    meta = reply.response_metadata
    assert meta["prompt_eval_duration"] + meta["eval_duration"] == meta["total_duration"]
