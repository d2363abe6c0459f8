"""Output caps, as the real servers honour them and the real clients report them.

Ollama's ``options.num_predict`` (``ChatOllama(num_predict=…)``) ends a cut reply with ``done_reason:
"length"``; Gemini's ``generationConfig.maxOutputTokens`` (``ChatGoogleGenerativeAI(max_output_tokens=…)``)
with ``finishReason: "MAX_TOKENS"``. The servers are backed by the offline model.
"""

from __future__ import annotations

from typing import Any

import httpx
import ollama
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_google_genai import ChatGoogleGenerativeAI
from langchain_ollama import ChatOllama

from benchmarks.stand_ins.emulators import EmulatorServer
from shared.llm.tokens import approx_tokens
from tests.benchmarks.stand_ins.emulators.offline_prompts import QUESTION, TOOLS, answer_messages


def ollama_chat(server: EmulatorServer, **kw: Any) -> ChatOllama:
    return ChatOllama(model="llama3.1:8b", base_url=server.base_url, **kw)


def gemini_chat(server: EmulatorServer, **kw: Any) -> ChatGoogleGenerativeAI:
    return ChatGoogleGenerativeAI(
        model="gemini-2.5-flash", google_api_key="k", base_url=server.base_url, max_retries=1, **kw
    )


def streamed(model: BaseChatModel, messages: list[BaseMessage]) -> Any:
    chunks = list(model.stream(messages))
    merged = chunks[0]
    for chunk in chunks[1:]:
        merged += chunk
    return merged


def full_text(server: EmulatorServer) -> str:
    return ollama_chat(server).invoke(answer_messages()).text


def test_chatollama_num_predict_cuts_the_reply_and_reports_length(offline_ollama: EmulatorServer) -> None:
    full = full_text(offline_ollama)
    model = ollama_chat(offline_ollama, num_predict=20)

    for reply in (model.invoke(answer_messages()), streamed(model, answer_messages())):
        assert reply.response_metadata["done_reason"] == "length"
        assert reply.response_metadata["eval_count"] == 20
        assert reply.usage_metadata["output_tokens"] == 20
        assert full.startswith(reply.text) and approx_tokens(reply.text) == 20
    assert offline_ollama.requests[-1].body["options"]["num_predict"] == 20


def test_a_reply_within_num_predict_ends_with_stop(offline_ollama: EmulatorServer) -> None:
    reply = ollama_chat(offline_ollama, num_predict=4096).invoke(answer_messages())

    assert reply.response_metadata["done_reason"] == "stop"
    assert reply.text == full_text(offline_ollama)


def test_a_negative_num_predict_means_no_cap(offline_ollama: EmulatorServer) -> None:
    reply = ollama_chat(offline_ollama, num_predict=-1).invoke(answer_messages())

    assert reply.response_metadata["done_reason"] == "stop"


def test_the_non_streaming_ollama_api_reports_length_too(offline_ollama: EmulatorServer) -> None:
    client = ollama.Client(host=offline_ollama.base_url)
    messages = [{"role": "user", "content": QUESTION}]

    response = client.chat(model="llama3.1:8b", messages=messages, stream=False, options={"num_predict": 5})

    assert response.done_reason == "length" and response.eval_count == 5
    assert approx_tokens(response.message.content or "") == 5


def test_a_cut_ollama_tool_call_is_text_not_a_call(offline_ollama: EmulatorServer) -> None:
    reply = ollama_chat(offline_ollama, num_predict=8).bind_tools(TOOLS).invoke(QUESTION)

    assert isinstance(reply, AIMessage)
    assert reply.tool_calls == [] and reply.response_metadata["done_reason"] == "length"
    assert reply.text.startswith('{"name": "ventas_anuales"')


def test_tool_calls_within_num_predict_arrive_whole(offline_ollama: EmulatorServer) -> None:
    reply = ollama_chat(offline_ollama, num_predict=500).bind_tools(TOOLS).invoke(QUESTION)

    assert isinstance(reply, AIMessage)
    assert sorted(c["name"] for c in reply.tool_calls) == ["mejor_cliente", "ventas_anuales"]
    assert reply.response_metadata["done_reason"] == "stop"


def test_gemini_max_output_tokens_cuts_the_reply_and_reports_max_tokens(
    offline_gemini: EmulatorServer,
) -> None:
    full = gemini_chat(offline_gemini).invoke(answer_messages()).text
    model = gemini_chat(offline_gemini, max_output_tokens=20)

    for reply in (model.invoke(answer_messages()), streamed(model, answer_messages())):
        assert reply.response_metadata["finish_reason"] == "MAX_TOKENS"
        assert reply.usage_metadata["output_tokens"] == 20
        assert full.startswith(reply.text) and approx_tokens(reply.text) == 20
    assert offline_gemini.requests[-1].body["generationConfig"]["maxOutputTokens"] == 20


def test_a_gemini_reply_within_the_cap_ends_with_stop(offline_gemini: EmulatorServer) -> None:
    reply = gemini_chat(offline_gemini, max_output_tokens=4096).invoke(answer_messages())

    assert reply.response_metadata["finish_reason"] == "STOP"


def test_a_cut_gemini_function_call_is_text_not_a_call(offline_gemini: EmulatorServer) -> None:
    body = {
        "contents": [{"role": "user", "parts": [{"text": QUESTION}]}],
        "tools": [
            {
                "functionDeclarations": [
                    {
                        "name": "ventas_anuales",
                        "parameters": {"type": "OBJECT", "properties": {"anio": {"type": "INTEGER"}}},
                    }
                ]
            }
        ],
        "generationConfig": {"maxOutputTokens": 6},
    }
    url = f"{offline_gemini.base_url}/v1beta/models/gemini-2.5-flash:generateContent?key=k"

    candidate = httpx.post(url, json=body).json()["candidates"][0]

    assert candidate["finishReason"] == "MAX_TOKENS"
    assert [list(part) for part in candidate["content"]["parts"]] == [["text"]]
