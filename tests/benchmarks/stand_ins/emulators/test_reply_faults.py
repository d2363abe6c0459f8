"""The offline model's reply faults, fault sequences and the ``stall`` fault's shutdown, over the wire.

Faults are picked per request with the ``X-Emulator-Fault`` header, against offline-backed servers of the
three protocols; one test shows the reply faults apply to any backing model (the scripted fake).
"""

from __future__ import annotations

import json
import threading

import httpx
import pytest
from langchain_core.messages import AIMessage

from benchmarks.stand_ins.emulators import EmulatorFaults, EmulatorServer, create_emulator
from benchmarks.stand_ins.faults import (
    INVENTED_FIGURE,
    PLACEHOLDER_FUNCTION,
    REPEATED_MEMORY_ITEMS,
    RUNAWAY_CONTEXT_TOKENS,
    THINK_BLOCK,
)
from shared.answer import Answer
from tests.benchmarks.stand_ins.emulators.emulator_fakes import client
from tests.benchmarks.stand_ins.emulators.offline_prompts import (
    QUESTION,
    TOOLS,
    Plan,
    answer_messages,
    plan_messages,
)
from tests.fakes import FunctionChatModel


@pytest.fixture(params=["ollama", "gemini", "openai"])
def server(request: pytest.FixtureRequest) -> EmulatorServer:
    """Each offline-backed emulator in turn."""
    return request.getfixturevalue(f"offline_{request.param}")  # type: ignore[no-any-return]


def is_length_stop(reply: AIMessage) -> bool:
    reason = reply.response_metadata.get("done_reason") or reply.response_metadata.get("finish_reason")
    return reason in ("length", "MAX_TOKENS")


def test_runaway_repeats_until_the_clients_cap(server: EmulatorServer) -> None:
    option = {"ollama": "num_predict", "gemini": "max_output_tokens", "openai": "max_tokens"}
    reply = client(server, fault="runaway", **{option[server.protocol.name]: 60}).invoke(plan_messages())

    assert is_length_stop(reply)
    assert reply.usage_metadata is not None and reply.usage_metadata["output_tokens"] == 60
    assert reply.text.startswith('{"operaciones": [') and reply.text.count('"funcion": "ventas_anuales"') >= 2


def test_runaway_without_a_cap_stops_when_the_context_is_full(offline_ollama: EmulatorServer) -> None:
    reply = client(offline_ollama, fault="runaway").invoke(plan_messages())

    assert reply.response_metadata["done_reason"] == "length"
    assert reply.response_metadata["eval_count"] == RUNAWAY_CONTEXT_TOKENS


def test_placeholder_plan_reaches_structured_output_as_parsed_placeholders(server: EmulatorServer) -> None:
    plan = (
        client(server, fault="placeholder_plan")
        .with_structured_output(Plan, method="json_schema")
        .invoke(plan_messages())
    )

    assert isinstance(plan, Plan)
    assert [op.funcion for op in plan.operaciones] == [PLACEHOLDER_FUNCTION, "compras_cliente"]
    assert plan.operaciones[1].parametros == {"cliente": {"$ref": "op1.campo_inexistente"}}


def test_schema_ignored_plans_alternate_between_respuesta_and_nothing(offline_ollama: EmulatorServer) -> None:
    model = client(offline_ollama, fault="schema_ignored")
    replies = [json.loads(model.invoke(plan_messages()).text) for _ in range(2)]

    assert sorted(replies, key=len) == [
        {},
        {"respuesta": replies[0].get("respuesta") or replies[1]["respuesta"]},
    ]


def test_schema_ignored_answers_are_empty(offline_gemini: EmulatorServer) -> None:
    assert json.loads(client(offline_gemini, fault="schema_ignored").invoke(answer_messages()).text) == {}


def test_no_tool_calls_answers_in_prose_with_an_invented_figure(server: EmulatorServer) -> None:
    reply = client(server, fault="no_tool_calls").bind_tools(TOOLS).invoke(QUESTION)

    assert isinstance(reply, AIMessage)
    assert reply.tool_calls == [] and INVENTED_FIGURE in reply.text


def test_think_wrap_puts_a_think_block_before_the_json(server: EmulatorServer) -> None:
    plain = client(server).invoke(plan_messages()).text
    wrapped = client(server, fault="think_wrap").invoke(plan_messages()).text

    assert wrapped == THINK_BLOCK + plain


def test_repeat_memory_is_a_valid_answer_with_a_wall_of_memory(server: EmulatorServer) -> None:
    data = json.loads(client(server, fault="repeat_memory").invoke(answer_messages()).text)

    assert len(data["memoria"]) == REPEATED_MEMORY_ITEMS
    assert all(item == data["memoria"][0] for item in data["memoria"])
    Answer.model_validate(data)


def test_reply_faults_apply_to_any_backing_model(ollama_server: EmulatorServer) -> None:
    reply = client(ollama_server, fault="think_wrap").invoke("hola")

    assert reply.text == THINK_BLOCK + "Hola. Dijiste: hola"


# -- stall ------------------------------------------------------------------------------------------------


def test_a_stalled_request_does_not_block_server_shutdown() -> None:
    outcome: list[BaseException | None] = []
    with create_emulator(
        "ollama", model=FunctionChatModel(lambda m, i: "ok"), faults=EmulatorFaults(mode="stall")
    ) as server:

        def ask() -> None:
            try:
                httpx.post(
                    f"{server.base_url}/api/chat",
                    json={"model": "m", "stream": False, "messages": [{"role": "user", "content": "hola"}]},
                    timeout=60,
                )
                outcome.append(None)
            except httpx.HTTPError as exc:
                outcome.append(exc)

        caller = threading.Thread(target=ask)
        caller.start()
        while not server.requests:
            threading.Event().wait(0.01)
    caller.join(timeout=30)

    assert not caller.is_alive()
    assert len(outcome) == 1 and isinstance(outcome[0], httpx.RemoteProtocolError)


def test_a_fault_sequence_fails_the_first_requests_then_applies_the_next_step(
    ollama_server: EmulatorServer,
) -> None:
    ollama_server.faults = EmulatorFaults(sequence=[("http_500", 1), ("think_wrap", None)])
    body = {"model": "m", "stream": False, "messages": [{"role": "user", "content": "hola"}]}

    statuses = [httpx.post(f"{ollama_server.base_url}/api/chat", json=body) for _ in range(3)]

    assert [r.status_code for r in statuses] == [500, 200, 200]
    assert all(r.json()["message"]["content"].startswith("<think>") for r in statuses[1:])
    assert [r.fault for r in ollama_server.requests] == ["http_500", "think_wrap", "think_wrap"]
