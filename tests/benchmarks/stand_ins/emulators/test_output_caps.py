"""Output caps, as the real servers honour them and the real clients report them, against offline-backed
emulators: Ollama's ``options.num_predict`` ends a cut reply with ``done_reason: "length"``, Gemini's
``generationConfig.maxOutputTokens`` with ``finishReason: "MAX_TOKENS"``, OpenAI's ``max_completion_tokens``
(or the older ``max_tokens``) with ``finish_reason: "length"``.
"""

from __future__ import annotations

import httpx
import ollama
import openai
import pytest

from benchmarks.stand_ins.emulators import EmulatorServer
from shared.llm.tokens import approx_tokens
from tests.benchmarks.stand_ins.emulators.emulator_fakes import TOOLS, capped, client, cut_at_cap
from tests.benchmarks.stand_ins.offline.offline_prompts import (
    ANSWER_PROMPT,
    PLAN_PROMPT,
    QUESTION,
    Plan,
    merged,
)


def test_the_cap_cuts_the_reply_streamed_or_not_and_is_reported(offline_server: EmulatorServer) -> None:
    full = client(offline_server).invoke(ANSWER_PROMPT).text
    model = capped(offline_server, 20)

    for reply in (model.invoke(ANSWER_PROMPT), merged(model.stream(ANSWER_PROMPT))):
        assert cut_at_cap(offline_server, reply)
        assert reply.usage_metadata["output_tokens"] == 20
        assert full.startswith(reply.text) and approx_tokens(reply.text) == 20


def test_a_reply_within_the_cap_is_whole(offline_server: EmulatorServer) -> None:
    reply = capped(offline_server, 4096).invoke(ANSWER_PROMPT)

    assert not cut_at_cap(offline_server, reply)
    assert reply.text == client(offline_server).invoke(ANSWER_PROMPT).text


def test_a_cut_tool_call_is_text_not_a_call(offline_server: EmulatorServer) -> None:
    reply = capped(offline_server, 8).bind_tools(TOOLS).invoke(QUESTION)

    assert reply.tool_calls == [] and reply.invalid_tool_calls == []
    assert cut_at_cap(offline_server, reply) and reply.text.startswith('{"name": "ventas_anuales"')


def test_tool_calls_within_the_cap_arrive_whole(offline_server: EmulatorServer) -> None:
    reply = capped(offline_server, 500).bind_tools(TOOLS).invoke(QUESTION)

    assert sorted(c["name"] for c in reply.tool_calls) == ["mejor_cliente", "ventas_anuales"]
    assert not cut_at_cap(offline_server, reply)


def test_the_caps_travel_in_each_protocols_own_field(
    offline_ollama: EmulatorServer, offline_gemini: EmulatorServer
) -> None:
    capped(offline_ollama, 20).invoke("hola")
    capped(offline_gemini, 20).invoke("hola")

    assert offline_ollama.requests[-1].body["options"]["num_predict"] == 20
    assert offline_gemini.requests[-1].body["generationConfig"]["maxOutputTokens"] == 20
    assert (
        client(offline_ollama, num_predict=-1).invoke(ANSWER_PROMPT).response_metadata["done_reason"]
        == "stop"
    )


def test_the_non_streaming_ollama_api_reports_length_too(offline_ollama: EmulatorServer) -> None:
    messages = [{"role": "user", "content": QUESTION}]
    response = ollama.Client(host=offline_ollama.base_url).chat(
        model="llama3.1:8b", messages=messages, stream=False, options={"num_predict": 5}
    )

    assert response.done_reason == "length" and response.eval_count == 5
    assert approx_tokens(response.message.content or "") == 5


def test_the_older_openai_max_tokens_field_is_honoured_too(offline_openai: EmulatorServer) -> None:
    body = {"model": "m", "max_tokens": 7, "messages": [{"role": "user", "content": QUESTION}]}

    choice = httpx.post(f"{offline_openai.base_url}/v1/chat/completions", json=body).json()["choices"][0]

    assert choice["finish_reason"] == "length" and approx_tokens(choice["message"]["content"]) == 7


def test_openai_structured_output_cut_at_the_cap_raises_the_sdks_length_error(
    offline_openai: EmulatorServer,
) -> None:
    with pytest.raises(openai.LengthFinishReasonError) as caught:
        capped(offline_openai, 15).with_structured_output(Plan, method="json_schema").invoke(PLAN_PROMPT)

    usage = caught.value.completion.usage
    assert usage is not None and usage.completion_tokens == 15 and usage.prompt_tokens > 0
