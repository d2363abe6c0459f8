"""Streaming through the emulators with the real clients: the offline model's reply arrives in several chunks
that add up to the unstreamed reply, and ``stream_break`` drops the connection midway as a real server would.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from typing import Any

import httpx
import openai
import pytest

from benchmarks.stand_ins.chunks import stream_pieces
from benchmarks.stand_ins.emulators import FAULT_HEADER, EmulatorServer
from benchmarks.stand_ins.offline import OfflineSalesModel
from shared.errors import ProviderError
from shared.llm.provider_errors import as_erp_error
from tests.benchmarks.stand_ins.emulators.emulator_fakes import TOOLS, client
from tests.benchmarks.stand_ins.offline.offline_prompts import ANSWER_PROMPT, PLAN_PROMPT, QUESTION, merged

BROKEN_BODY = {"RemoteProtocolError", "APIConnectionError", "OpenAIConnectionError"}
"""What the clients raise on an incomplete body: httpx's (or httpx2's) error, which the OpenAI SDK wraps."""


@pytest.fixture(scope="module")
def loop() -> Iterator[asyncio.AbstractEventLoop]:
    """One event loop for the module: clients cache async HTTP connections bound to the loop they ran in."""
    loop = asyncio.new_event_loop()
    yield loop
    loop.close()


def astreamed(loop: asyncio.AbstractEventLoop, model: Any, messages: Any) -> list[Any]:
    async def collect() -> list[Any]:
        return [chunk async for chunk in model.astream(messages)]

    return loop.run_until_complete(collect())


def finish(message: Any) -> Any:
    return message.response_metadata.get("finish_reason", message.response_metadata.get("done_reason"))


def test_an_answer_streams_in_the_offline_models_pieces_adding_up_to_the_unstreamed_reply(
    offline_server: EmulatorServer, loop: asyncio.AbstractEventLoop
) -> None:
    model = client(offline_server)
    whole = model.invoke(ANSWER_PROMPT)
    chunks = astreamed(loop, model, ANSWER_PROMPT)
    total = merged(chunks)

    assert [c.text for c in chunks if c.text] == stream_pieces(OfflineSalesModel().invoke(ANSWER_PROMPT).text)
    assert total.text == whole.text and '"respuesta"' in total.text
    usage = ("input_tokens", "output_tokens")
    assert [total.usage_metadata[k] for k in usage] == [whole.usage_metadata[k] for k in usage]
    assert finish(total) == finish(whole)


def test_streamed_tool_calls_are_the_unstreamed_ones(
    offline_server: EmulatorServer, loop: asyncio.AbstractEventLoop
) -> None:
    model = client(offline_server).bind_tools(TOOLS)
    whole = model.invoke(QUESTION)
    total = merged(astreamed(loop, model, QUESTION))

    calls = [(c["name"], c["args"]) for c in whole.tool_calls]
    assert calls == [("ventas_anuales", {"anio": 2025}), ("mejor_cliente", {"anio": 2025})]
    assert [(c["name"], c["args"]) for c in total.tool_calls] == calls
    assert total.invalid_tool_calls == []


def test_openai_streams_tool_call_arguments_in_pieces_after_the_id_and_name(
    offline_openai: EmulatorServer,
) -> None:
    tool = {
        "name": "ventas_anuales",
        "parameters": {"type": "object", "properties": {"anio": {"type": "integer"}}},
    }
    body = {
        "model": "m",
        "stream": True,
        "messages": [{"role": "user", "content": QUESTION}],
        "tools": [{"type": "function", "function": tool}],
        "tool_choice": "required",
    }
    with httpx.stream("POST", f"{offline_openai.base_url}/v1/chat/completions", json=body) as response:
        lines = [line.removeprefix("data: ") for line in response.iter_lines() if line]
    events = [json.loads(line) for line in lines[:-1]]  # the last is [DONE]

    deltas = [
        e["choices"][0]["delta"]["tool_calls"][0] for e in events if "tool_calls" in e["choices"][0]["delta"]
    ]
    assert len(deltas) >= 3
    assert deltas[0]["id"] and deltas[0]["function"] == {"name": "ventas_anuales", "arguments": ""}
    assert all(set(d) == {"index", "function"} for d in deltas[1:])
    assert json.loads("".join(d["function"]["arguments"] for d in deltas)) == {"anio": 2025}


def test_a_stream_break_drops_the_connection_after_the_first_chunks(
    offline_server: EmulatorServer, loop: asyncio.AbstractEventLoop
) -> None:
    received: list[str] = []

    async def consume() -> None:
        async for chunk in client(offline_server, fault="stream_break").astream(ANSWER_PROMPT):
            received.append(chunk.text)

    with pytest.raises(Exception) as raised:
        loop.run_until_complete(consume())

    whole, text = OfflineSalesModel().invoke(ANSWER_PROMPT).text, "".join(received)
    assert text and whole.startswith(text) and len(text) < len(whole)
    assert type(as_erp_error(raised.value)) is ProviderError
    links: list[BaseException] = []
    error: BaseException | None = raised.value
    while error is not None:
        links.append(error)
        error = error.__cause__ or error.__context__
    assert any(type(link).__name__ in BROKEN_BODY for link in links), raised.value
    assert offline_server.requests[-1].fault == "stream_break"


def test_a_stream_break_without_streaming_cuts_the_json_body(offline_ollama: EmulatorServer) -> None:
    url = f"{offline_ollama.base_url}/api/chat"
    body = {"model": "m", "stream": False, "messages": [{"role": "user", "content": "hola"}]}
    with pytest.raises(httpx.RemoteProtocolError, match=r"incomplete|peer closed"):
        httpx.post(url, json=body, headers={FAULT_HEADER: "stream_break"})
    assert httpx.post(url, json=body).json()["done"] is True  # the next is whole


def test_a_stream_break_in_openai_is_a_connection_error_for_the_sdk(offline_openai: EmulatorServer) -> None:
    model = client(offline_openai, fault="stream_break")
    with pytest.raises(openai.APIConnectionError):
        model.invoke(PLAN_PROMPT)
    with pytest.raises(openai.APIConnectionError):
        list(model.stream(PLAN_PROMPT))


def test_ollama_streamed_text_is_the_stream_false_reply(
    offline_ollama: EmulatorServer, loop: asyncio.AbstractEventLoop
) -> None:
    """ChatOllama always streams, so compare with what the server answers to ``"stream": false``."""
    messages = [{"role": m.type.replace("human", "user"), "content": m.text} for m in ANSWER_PROMPT]
    body = {"model": "m", "stream": False, "messages": messages}
    whole = httpx.post(f"{offline_ollama.base_url}/api/chat", json=body).json()
    total = merged(astreamed(loop, client(offline_ollama), ANSWER_PROMPT))

    assert total.text == whole["message"]["content"]
    usage = total.usage_metadata
    assert (usage["input_tokens"], usage["output_tokens"]) == (
        whole["prompt_eval_count"],
        whole["eval_count"],
    )
    assert total.response_metadata["done_reason"] == whole["done_reason"] == "stop"
