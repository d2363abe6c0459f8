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
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_openai import ChatOpenAI

from benchmarks.stand_ins.emulators import FAULT_HEADER, EmulatorServer, create_emulator
from benchmarks.stand_ins.faults import PLACEHOLDER_FUNCTION
from tests.benchmarks.stand_ins.emulators.emulator_fakes import scripted_responder
from tests.benchmarks.stand_ins.emulators.offline_prompts import (
    QUESTION,
    TOOLS,
    Plan,
    plan_messages,
)
from tests.fakes import FunctionChatModel

MODEL = "gpt-4o-mini"


def chat(server: EmulatorServer, *, fault: str | None = None, **kw: Any) -> ChatOpenAI:
    headers = {FAULT_HEADER: fault, "X-Emulator-Delay": "0.5"} if fault else None
    return ChatOpenAI(
        model=MODEL,
        base_url=f"{server.base_url}/v1",
        api_key="sk-test",
        max_retries=0,
        default_headers=headers,
        **kw,
    )


def completions(server: EmulatorServer) -> list[dict[str, Any]]:
    return [r.body for r in server.requests if r.path.endswith("/chat/completions")]


def test_streaming_sends_sse_chunks_usage_last_and_done(openai_server: EmulatorServer) -> None:
    chunks = list(chat(openai_server, stream_usage=True).stream("uno dos tres cuatro cinco seis"))
    merged = chunks[0]
    for chunk in chunks[1:]:
        merged += chunk

    assert len(chunks) > 3
    assert merged.content == "Hola. Dijiste: uno dos tres cuatro cinco seis"
    assert merged.usage_metadata is not None and merged.usage_metadata["output_tokens"] == 8
    body = completions(openai_server)[-1]
    assert body["stream"] is True and body["stream_options"] == {"include_usage": True}
    with httpx.stream("POST", f"{openai_server.base_url}/v1/chat/completions", json=body) as response:
        assert response.headers["content-type"] == "text/event-stream"
        events = [line for line in response.iter_lines() if line]
    assert events[-1] == "data: [DONE]"
    assert json.loads(events[-2].removeprefix("data: "))["choices"] == []


def test_a_tool_calling_turn_pairs_results_by_tool_call_id(offline_openai: EmulatorServer) -> None:
    model = chat(offline_openai).bind_tools(TOOLS)
    conversation: list[Any] = [SystemMessage("Fecha de hoy: 2026-11-30"), HumanMessage(QUESTION)]

    first = model.invoke(conversation)
    assert isinstance(first, AIMessage)
    assert sorted(c["name"] for c in first.tool_calls) == ["mejor_cliente", "ventas_anuales"]
    assert first.response_metadata["finish_reason"] == "tool_calls"
    results = [
        ToolMessage(
            json.dumps({"anio": 2025, "total": 850000000, "cliente": "Empresa ABC"}), tool_call_id=c["id"]
        )
        for c in first.tool_calls
    ]
    final = model.invoke([*conversation, first, *results])

    assert isinstance(final, AIMessage) and final.tool_calls == []
    assert "₲850.000.000" in final.text
    assert (
        completions(offline_openai)[-1]["messages"][2]["tool_calls"][0]["function"]["arguments"]
        == '{"anio": 2025}'
    )


def test_structured_output_uses_a_json_schema_response_format(offline_openai: EmulatorServer) -> None:
    plan = chat(offline_openai).with_structured_output(Plan, method="json_schema").invoke(plan_messages())

    assert isinstance(plan, Plan)
    assert [op.funcion for op in plan.operaciones] == ["ventas_anuales", "mejor_cliente"]
    assert completions(offline_openai)[-1]["response_format"]["type"] == "json_schema"


def test_malformed_tool_call_arguments_become_invalid_tool_calls(openai_server: EmulatorServer) -> None:
    reply = chat(openai_server, fault="malformed_tool_call").bind_tools(TOOLS).invoke(QUESTION)

    assert isinstance(reply, AIMessage)
    assert reply.tool_calls == [] and [c["name"] for c in reply.invalid_tool_calls] == ["ventas_anuales"]


def test_reply_faults_reach_the_client(offline_openai: EmulatorServer) -> None:
    plan = chat(offline_openai, fault="placeholder_plan").with_structured_output(Plan, method="json_schema")

    result = plan.invoke(plan_messages())

    assert isinstance(result, Plan) and result.operaciones[0].funcion == PLACEHOLDER_FUNCTION


def test_a_configured_key_refuses_any_other() -> None:
    with create_emulator("openai", model=FunctionChatModel(scripted_responder), api_key="sk-right") as server:
        with pytest.raises(openai.AuthenticationError) as caught:
            chat(server).invoke("hola")
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
