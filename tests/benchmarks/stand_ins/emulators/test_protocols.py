"""What every emulator does alike, through each protocol's real LangChain client over loopback HTTP: the
backing model's reply with usage, streaming, tool calls, structured output and the faults' exceptions."""

from __future__ import annotations

import httpx
import httpx2
import ollama
import openai
import pytest
from langchain_core.exceptions import OutputParserException
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_google_genai.chat_models import GoogleAPIError
from pydantic import ValidationError

from benchmarks.stand_ins.emulators import EmulatorFaults, EmulatorServer
from tests.benchmarks.stand_ins.emulators.emulator_fakes import MODELS, SamplePlan, client, ventas_anuales
from tests.benchmarks.stand_ins.offline.offline_prompts import merged
from tests.fakes import FunctionChatModel

SERVER_ERROR = {
    "ollama": ollama.ResponseError,
    "gemini": GoogleAPIError,
    "openai": openai.InternalServerError,
}
TIMEOUT = {"ollama": httpx.ReadTimeout, "gemini": httpx2.ReadTimeout, "openai": openai.APITimeoutError}
"""What each client raises on a 500, and on a read timeout (google-genai talks through httpx2)."""
SIX = "uno dos tres cuatro cinco seis"


def test_invoke_returns_the_backing_models_text_with_usage_and_the_model_name(
    fake_server: EmulatorServer, fake_model: FunctionChatModel
) -> None:
    reply = client(fake_server).invoke([SystemMessage("Sé breve."), HumanMessage("hola que tal")])

    assert reply.content == "Hola. Dijiste: hola que tal"
    assert reply.response_metadata["model_name"] == MODELS[fake_server.protocol.name]
    # The fake counts words: "Sé breve." + "hola que tal" = 5 prompt tokens, 5 output words.
    assert (reply.usage_metadata["input_tokens"], reply.usage_metadata["output_tokens"]) == (5, 5)
    seen = fake_model.calls[-1].messages
    assert isinstance(seen[0], SystemMessage) and seen[0].content == "Sé breve."


def test_a_stream_arrives_in_several_chunks_with_the_usage(fake_server: EmulatorServer) -> None:
    chunks = list(client(fake_server).stream(SIX))

    assert sum(1 for c in chunks if c.text) > 1
    total = merged(chunks)
    assert total.text == f"Hola. Dijiste: {SIX}"
    assert total.usage_metadata["output_tokens"] == 8


def test_a_tool_call_round_trip_pairs_the_result_with_its_call(
    fake_server: EmulatorServer, fake_model: FunctionChatModel
) -> None:
    model = client(fake_server).bind_tools([ventas_anuales])
    question = HumanMessage("¿Cuánto vendimos en 2025?")

    first = model.invoke([question])
    assert [(c["name"], c["args"]) for c in first.tool_calls] == [("ventas_anuales", {"anio": 2025})]
    result = ToolMessage('{"anio": 2025, "total": 850000000}', tool_call_id=first.tool_calls[0]["id"])
    final = model.invoke([question, first, result])

    assert final.content == 'Resultado de ventas_anuales: {"anio": 2025, "total": 850000000}'
    info = fake_model.calls[-1]
    seen = info.messages
    assert isinstance(seen[1], AIMessage) and isinstance(seen[2], ToolMessage)
    assert seen[2].tool_call_id == seen[1].tool_calls[0]["id"] and seen[2].name == "ventas_anuales"
    assert info.tools[0]["function"]["parameters"]["properties"]["anio"]["type"] == "integer"


def test_structured_output_reaches_the_backing_model_as_a_json_schema(
    fake_server: EmulatorServer, fake_model: FunctionChatModel
) -> None:
    plan = client(fake_server).with_structured_output(SamplePlan, method="json_schema").invoke("plan")

    assert plan == SamplePlan(operaciones=["Empresa ABC"], anio=2025)
    assert fake_model.calls[-1].schema["required"] == ["operaciones", "anio"]  # type: ignore[index]


async def test_the_async_client_works_too(fake_server: EmulatorServer) -> None:
    reply = await client(fake_server).ainvoke("hola")
    chunks = [chunk.text async for chunk in client(fake_server).astream("uno dos tres cuatro")]

    assert reply.content == "Hola. Dijiste: hola"
    assert "".join(chunks) == "Hola. Dijiste: uno dos tres cuatro"


# -- faults -------------------------------------------------------------------------------------------


def test_http_500_raises_the_clients_server_error(fake_server: EmulatorServer) -> None:
    with pytest.raises(SERVER_ERROR[fake_server.protocol.name]):
        client(fake_server, fault="http_500").invoke("hola")

    assert fake_server.requests[-1].fault == "http_500"


def test_stream_error_fails_midway_after_the_first_text(fake_server: EmulatorServer) -> None:
    received: list[str] = []
    with pytest.raises((ollama.ResponseError, GoogleAPIError, openai.APIError)):
        for chunk in client(fake_server, fault="stream_error").stream(SIX):
            received.append(chunk.text)

    assert "".join(received).startswith("Hola.")
    with pytest.raises(SERVER_ERROR[fake_server.protocol.name]):  # without streaming: a 500
        client(fake_server, fault="stream_error", disable_streaming=True).invoke("hola")


def test_schema_invalid_fails_the_structured_output(fake_server: EmulatorServer) -> None:
    structured = client(fake_server, fault="schema_invalid").with_structured_output(
        SamplePlan, method="json_schema"
    )

    # The openai SDK validates a json_schema reply into the pydantic class itself, inside the model call;
    # LangChain's parser wraps the same validation error for Ollama and Gemini.
    missing = r"validation errors? for SamplePlan\s+operaciones\s+Field required"
    with pytest.raises((OutputParserException, ValidationError), match=missing):
        structured.invoke("plan")


@pytest.mark.parametrize("fault", ["slow", "stall"])
def test_slow_and_stall_trip_the_client_timeout(fake_server: EmulatorServer, fault: str) -> None:
    with pytest.raises(TIMEOUT[fake_server.protocol.name]):
        client(fake_server, fault=fault, timeout=0.2).invoke("hola")
    assert fake_server.requests[-1].fault == fault


def test_a_server_wide_fault_applies_count_times_and_the_header_none_overrides_it(
    fake_server: EmulatorServer,
) -> None:
    fake_server.faults = EmulatorFaults(mode="http_500", count=2)

    assert client(fake_server, fault="none").invoke("hola").content == "Hola. Dijiste: hola"
    for _ in range(2):
        with pytest.raises(SERVER_ERROR[fake_server.protocol.name]):
            client(fake_server).invoke("hola")
    assert client(fake_server).invoke("hola").content == "Hola. Dijiste: hola"
    assert [r.fault for r in fake_server.requests] == [None, "http_500", "http_500", None]
