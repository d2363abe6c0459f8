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
from tests.benchmarks.stand_ins.emulators.emulator_fakes import MODELS, client, merged, ventas_anuales
from tests.benchmarks.stand_ins.emulators.emulator_fakes import SamplePlan as Plan
from tests.fakes import FunctionChatModel

SERVER_ERROR = {
    "ollama": ollama.ResponseError,
    "gemini": GoogleAPIError,
    "openai": openai.InternalServerError,
}
TIMEOUT = {"ollama": httpx.ReadTimeout, "gemini": httpx2.ReadTimeout, "openai": openai.APITimeoutError}
"""What each client raises on a 500, and on a read timeout (google-genai talks through httpx2)."""
SIX = "uno dos tres cuatro cinco seis"


@pytest.fixture(params=["ollama", "gemini", "openai"])
def server(request: pytest.FixtureRequest) -> EmulatorServer:
    """Each emulator backed by the scripted fake, clean."""
    return request.getfixturevalue(f"{request.param}_server")  # type: ignore[no-any-return]


def test_invoke_returns_the_backing_models_text_with_usage_and_the_model_name(
    server: EmulatorServer, fake_model: FunctionChatModel
) -> None:
    reply = client(server).invoke([SystemMessage("Sé breve."), HumanMessage("hola que tal")])

    assert reply.content == "Hola. Dijiste: hola que tal"
    assert reply.response_metadata["model_name"] == MODELS[server.protocol.name]
    # The fake counts words: "Sé breve." + "hola que tal" = 5 prompt tokens, 5 output words.
    assert (reply.usage_metadata["input_tokens"], reply.usage_metadata["output_tokens"]) == (5, 5)
    seen = fake_model.calls[-1].messages
    assert isinstance(seen[0], SystemMessage) and seen[0].content == "Sé breve."


def test_a_stream_arrives_in_several_chunks_with_the_usage(server: EmulatorServer) -> None:
    chunks = list(client(server).stream(SIX))

    assert sum(1 for c in chunks if c.text) > 1
    total = merged(chunks)
    assert total.text == f"Hola. Dijiste: {SIX}"
    assert total.usage_metadata["output_tokens"] == 8


def test_a_tool_call_round_trip_pairs_the_result_with_its_call(
    server: EmulatorServer, fake_model: FunctionChatModel
) -> None:
    model = client(server).bind_tools([ventas_anuales])
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
    server: EmulatorServer, fake_model: FunctionChatModel
) -> None:
    plan = client(server).with_structured_output(Plan, method="json_schema").invoke("plan")

    assert plan == Plan(operaciones=["Empresa ABC"], anio=2025)
    assert fake_model.calls[-1].schema["required"] == ["operaciones", "anio"]  # type: ignore[index]


async def test_the_async_client_works_too(server: EmulatorServer) -> None:
    reply = await client(server).ainvoke("hola")
    chunks = [chunk.text async for chunk in client(server).astream("uno dos tres cuatro")]

    assert reply.content == "Hola. Dijiste: hola"
    assert "".join(chunks) == "Hola. Dijiste: uno dos tres cuatro"


# -- faults -------------------------------------------------------------------------------------------


def test_http_500_raises_the_clients_server_error(server: EmulatorServer) -> None:
    with pytest.raises(SERVER_ERROR[server.protocol.name]):
        client(server, fault="http_500").invoke("hola")

    assert server.requests[-1].fault == "http_500"


def test_stream_error_fails_midway_after_the_first_text(server: EmulatorServer) -> None:
    received: list[str] = []
    with pytest.raises((ollama.ResponseError, GoogleAPIError, openai.APIError)):
        for chunk in client(server, fault="stream_error").stream(SIX):
            received.append(chunk.text)

    assert "".join(received).startswith("Hola.")
    with pytest.raises(SERVER_ERROR[server.protocol.name]):  # without streaming: a 500
        client(server, fault="stream_error", disable_streaming=True).invoke("hola")


def test_schema_invalid_fails_the_structured_output(server: EmulatorServer) -> None:
    structured = client(server, fault="schema_invalid").with_structured_output(Plan, method="json_schema")

    # The openai SDK validates a json_schema reply into the pydantic class itself, inside the model call.
    with pytest.raises((OutputParserException, ValidationError), match=r"operaciones|Failed to parse Plan"):
        structured.invoke("plan")


@pytest.mark.parametrize("fault", ["slow", "stall"])
def test_slow_and_stall_trip_the_client_timeout(server: EmulatorServer, fault: str) -> None:
    with pytest.raises(TIMEOUT[server.protocol.name]):
        client(server, fault=fault, timeout=0.2).invoke("hola")
    assert server.requests[-1].fault == fault


def test_a_server_wide_fault_applies_count_times_and_the_header_none_overrides_it(
    server: EmulatorServer,
) -> None:
    server.faults = EmulatorFaults(mode="http_500", count=2)

    assert client(server, fault="none").invoke("hola").content == "Hola. Dijiste: hola"
    for _ in range(2):
        with pytest.raises(SERVER_ERROR[server.protocol.name]):
            client(server).invoke("hola")
    assert client(server).invoke("hola").content == "Hola. Dijiste: hola"
    assert [r.fault for r in server.requests] == [None, "http_500", "http_500", None]
