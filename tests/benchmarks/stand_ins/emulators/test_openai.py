"""The OpenAI-compatible emulator, through the real ``ChatOpenAI`` / ``openai`` clients over loopback HTTP.

``ChatOpenAI(base_url=f"{server.base_url}/v1", api_key=…)`` points the client at the emulator;
``max_retries=0`` makes every failure surface at once.
"""

from __future__ import annotations

import json
from typing import Any

import httpx
import openai
import pytest
from langchain_core.messages import AIMessage
from langchain_openai import ChatOpenAI

from benchmarks.stand_ins.emulators import EmulatorServer, create_emulator
from tests.benchmarks.stand_ins.emulators.emulator_fakes import TOOLS, client
from tests.benchmarks.stand_ins.offline.offline_prompts import QUESTION
from tests.fakes import FunctionChatModel

MODEL = "gpt-4o-mini"


def completions(server: EmulatorServer) -> list[dict[str, Any]]:
    return [r.body for r in server.requests if r.path.endswith("/chat/completions")]


def test_streaming_sends_sse_chunks_usage_last_and_done(openai_server: EmulatorServer) -> None:
    list(client(openai_server).stream("uno dos tres cuatro cinco seis"))

    body = completions(openai_server)[-1]
    assert body["stream"] is True and body["stream_options"] == {"include_usage": True}
    with httpx.stream("POST", f"{openai_server.base_url}/v1/chat/completions", json=body) as response:
        assert response.headers["content-type"] == "text/event-stream"
        events = [line for line in response.iter_lines() if line]
    assert events[-1] == "data: [DONE]"
    assert json.loads(events[-2].removeprefix("data: "))["choices"] == []


def test_malformed_tool_call_arguments_become_invalid_tool_calls(openai_server: EmulatorServer) -> None:
    reply = client(openai_server, fault="malformed_tool_call").bind_tools(TOOLS).invoke(QUESTION)

    assert isinstance(reply, AIMessage)
    assert reply.tool_calls == [] and [c["name"] for c in reply.invalid_tool_calls] == ["ventas_anuales"]


def test_a_configured_key_refuses_any_other(fake_model: FunctionChatModel) -> None:
    with create_emulator("openai", model=fake_model, api_key="sk-right") as server:
        with pytest.raises(openai.AuthenticationError) as caught:
            client(server).invoke("hola")
        assert caught.value.code == "invalid_api_key"
        assert (
            ChatOpenAI(model=MODEL, base_url=f"{server.base_url}/v1", api_key="sk-right")
            .invoke("hola")
            .content
        )


def test_models_are_listed_and_unknown_paths_are_404(openai_server: EmulatorServer) -> None:
    client = openai.OpenAI(base_url=f"{openai_server.base_url}/v1", api_key="k", max_retries=0)

    assert MODEL in [model.id for model in client.models.list()]
    assert httpx.get(f"{openai_server.base_url}/v1/nothing").status_code == 404


def test_a_request_without_messages_is_refused_with_400(openai_server: EmulatorServer) -> None:
    reply = httpx.post(f"{openai_server.base_url}/v1/chat/completions", json={"model": MODEL, "messages": []})

    assert reply.status_code == 400 and reply.json()["error"]["param"] == "messages"


def test_an_unknown_role_is_refused_with_400(openai_server: EmulatorServer) -> None:
    body = {"model": MODEL, "messages": [{"role": "wizard", "content": "hola"}]}

    reply = httpx.post(f"{openai_server.base_url}/v1/chat/completions", json=body)

    assert reply.status_code == 400 and "wizard" in reply.json()["error"]["message"]
