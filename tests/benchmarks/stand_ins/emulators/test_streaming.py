"""Streaming through the emulators with the real clients: the offline model's reply arrives in several chunks
that add up to the unstreamed reply, and ``stream_break`` drops the connection midway as a real server would.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator, Sequence
from typing import Any

import httpx
import openai
import pytest
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage
from langchain_google_genai import ChatGoogleGenerativeAI
from langchain_ollama import ChatOllama
from langchain_openai import ChatOpenAI

from benchmarks.stand_ins.chunks import stream_pieces
from benchmarks.stand_ins.emulators import FAULT_HEADER, EmulatorKind, EmulatorServer, create_emulator
from benchmarks.stand_ins.offline import OfflineSalesModel
from shared.errors import ProviderError
from shared.llm.provider_errors import as_erp_error
from tests.benchmarks.stand_ins.emulators.offline_prompts import (
    QUESTION,
    TOOLS,
    answer_messages,
    plan_messages,
)

KINDS: tuple[EmulatorKind, ...] = ("ollama", "openai", "gemini")


@pytest.fixture(scope="module", params=KINDS)
def server(request: pytest.FixtureRequest) -> Iterator[EmulatorServer]:
    """Each emulator, backed by the offline model."""
    with create_emulator(request.param) as emulator:
        yield emulator


def client(server: EmulatorServer, *, fault: str | None = None) -> BaseChatModel:
    """The real client of the server's protocol; a ``fault`` is asked for with the request header."""
    headers = {FAULT_HEADER: fault} if fault else None
    kind = server.protocol.name
    if kind == "ollama":
        return ChatOllama(
            model="llama3.1:8b",
            base_url=server.base_url,
            temperature=0,
            client_kwargs={"headers": headers or {}},
        )
    if kind == "openai":
        return ChatOpenAI(
            model="gpt-4o-mini",
            base_url=f"{server.base_url}/v1",
            api_key="sk-test",
            max_retries=0,
            stream_usage=True,
            default_headers=headers,
        )
    return ChatGoogleGenerativeAI(
        model="gemini-2.5-flash",
        google_api_key="any",
        base_url=server.base_url,
        temperature=0,
        max_retries=1,
        additional_headers=headers,
    )


@pytest.fixture(scope="module")
def loop() -> Iterator[asyncio.AbstractEventLoop]:
    """One event loop for the module: clients cache async HTTP connections bound to the loop they ran in."""
    loop = asyncio.new_event_loop()
    yield loop
    loop.close()


def astreamed(
    loop: asyncio.AbstractEventLoop, model: Any, messages: Sequence[BaseMessage] | str
) -> list[AIMessageChunk]:
    async def collect() -> list[AIMessageChunk]:
        return [chunk async for chunk in model.astream(messages)]

    return loop.run_until_complete(collect())


def summed(chunks: Sequence[AIMessageChunk]) -> AIMessageChunk:
    total = chunks[0]
    for chunk in chunks[1:]:
        total = total + chunk
    return total


def finish(message: AIMessage) -> Any:
    metadata = message.response_metadata
    return metadata.get("finish_reason", metadata.get("done_reason"))


def test_an_answer_streams_in_several_chunks_that_add_up_to_the_unstreamed_reply(
    server: EmulatorServer, loop: asyncio.AbstractEventLoop
) -> None:
    model = client(server)
    whole = model.invoke(answer_messages())
    chunks = astreamed(loop, model, answer_messages())
    total = summed(chunks)

    assert sum(1 for c in chunks if c.text) >= 5
    assert total.text == whole.text and '"respuesta"' in total.text
    assert total.usage_metadata is not None and whole.usage_metadata is not None
    assert (total.usage_metadata["input_tokens"], total.usage_metadata["output_tokens"]) == (
        whole.usage_metadata["input_tokens"],
        whole.usage_metadata["output_tokens"],
    )
    assert finish(total) == finish(whole)


def test_the_text_arrives_in_the_offline_models_own_pieces(
    server: EmulatorServer, loop: asyncio.AbstractEventLoop
) -> None:
    offline = OfflineSalesModel().invoke(answer_messages())
    chunks = astreamed(loop, client(server), answer_messages())

    assert [c.text for c in chunks if c.text] == stream_pieces(offline.text)


def test_streamed_tool_calls_are_the_unstreamed_ones(
    server: EmulatorServer, loop: asyncio.AbstractEventLoop
) -> None:
    model = client(server).bind_tools(TOOLS)
    whole = model.invoke(QUESTION)
    total = summed(astreamed(loop, model, QUESTION))

    assert isinstance(whole, AIMessage)
    calls = [(c["name"], c["args"]) for c in whole.tool_calls]
    assert calls == [("ventas_anuales", {"anio": 2025}), ("mejor_cliente", {"anio": 2025})]
    assert [(c["name"], c["args"]) for c in total.tool_calls] == calls
    assert total.invalid_tool_calls == []


def test_openai_streams_tool_call_arguments_in_pieces_after_the_id_and_name() -> None:
    with create_emulator("openai") as server:
        body = {
            "model": "m",
            "stream": True,
            "messages": [{"role": "user", "content": QUESTION}],
            "tools": [
                {
                    "type": "function",
                    "function": {
                        "name": "ventas_anuales",
                        "parameters": {"type": "object", "properties": {"anio": {"type": "integer"}}},
                    },
                }
            ],
            "tool_choice": "required",
        }
        with httpx.stream("POST", f"{server.base_url}/v1/chat/completions", json=body) as response:
            events = [line.removeprefix("data: ") for line in response.iter_lines() if line]

    deltas = [
        json.loads(event)["choices"][0]["delta"]["tool_calls"][0]
        for event in events[:-1]
        if json.loads(event)["choices"] and "tool_calls" in json.loads(event)["choices"][0]["delta"]
    ]
    assert len(deltas) >= 3
    assert deltas[0]["id"] and deltas[0]["function"] == {"name": "ventas_anuales", "arguments": ""}
    assert all(set(d) == {"index", "function"} for d in deltas[1:])
    arguments = "".join(d["function"]["arguments"] for d in deltas)
    assert json.loads(arguments) == {"anio": 2025}


def test_a_stream_break_drops_the_connection_after_the_first_chunks(
    server: EmulatorServer, loop: asyncio.AbstractEventLoop
) -> None:
    received: list[str] = []

    async def consume() -> None:
        async for chunk in client(server, fault="stream_break").astream(answer_messages()):
            received.append(chunk.text)

    with pytest.raises(Exception) as raised:
        loop.run_until_complete(consume())

    whole = OfflineSalesModel().invoke(answer_messages()).text
    text = "".join(received)
    assert text and whole.startswith(text) and len(text) < len(whole)
    assert type(as_erp_error(raised.value)) is ProviderError
    assert any(type(link).__name__ in BROKEN_BODY for link in chain(raised.value)), raised.value
    assert server.requests[-1].fault == "stream_break"


BROKEN_BODY = {"RemoteProtocolError", "APIConnectionError", "OpenAIConnectionError"}
"""What the clients raise on an incomplete body: httpx's (or httpx2's) error, which the OpenAI SDK wraps."""


def test_a_stream_break_without_streaming_cuts_the_json_body() -> None:
    with create_emulator("ollama") as server:
        body = {"model": "m", "stream": False, "messages": [{"role": "user", "content": "hola"}]}
        with pytest.raises(httpx.RemoteProtocolError, match=r"incomplete|peer closed"):
            httpx.post(f"{server.base_url}/api/chat", json=body, headers={FAULT_HEADER: "stream_break"})
        assert (
            httpx.post(f"{server.base_url}/api/chat", json=body).json()["done"] is True
        )  # the next is whole


def test_a_stream_break_in_openai_is_a_connection_error_for_the_sdk() -> None:
    with create_emulator("openai") as server:
        model = client(server, fault="stream_break")
        with pytest.raises(openai.APIConnectionError):
            model.invoke(plan_messages())
        with pytest.raises(openai.APIConnectionError):
            list(model.stream(plan_messages()))


def chain(error: BaseException) -> Iterator[BaseException]:
    current: BaseException | None = error
    while current is not None:
        yield current
        current = current.__cause__ or current.__context__


def test_ollama_streamed_text_is_the_stream_false_reply(loop: asyncio.AbstractEventLoop) -> None:
    """ChatOllama always streams, so compare with what the server answers to ``"stream": false``."""
    with create_emulator("ollama") as server:
        body = {
            "model": "llama3.1:8b",
            "stream": False,
            "messages": [
                {"role": m.type.replace("human", "user"), "content": m.text} for m in answer_messages()
            ],
        }
        whole = httpx.post(f"{server.base_url}/api/chat", json=body).json()
        chunks = astreamed(loop, client(server), answer_messages())

    total = summed(chunks)
    assert sum(1 for c in chunks if c.text) >= 5
    assert total.text == whole["message"]["content"]
    assert total.usage_metadata is not None
    assert (total.usage_metadata["input_tokens"], total.usage_metadata["output_tokens"]) == (
        whole["prompt_eval_count"],
        whole["eval_count"],
    )
    assert total.response_metadata["done_reason"] == whole["done_reason"] == "stop"
