"""The offline model's reply faults, fault sequences and the ``stall`` fault's shutdown, over the wire.

Faults are picked per request with the ``X-Emulator-Fault`` header, against offline-backed servers of the
three protocols; one test shows the reply faults apply to any backing model (the scripted fake).
"""

from __future__ import annotations

import json
import threading

import httpx
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
from tests.benchmarks.stand_ins.emulators.emulator_fakes import TOOLS, capped, client, cut_at_cap
from tests.benchmarks.stand_ins.offline.offline_prompts import ANSWER_PROMPT, PLAN_PROMPT, QUESTION, Plan
from tests.fakes import FunctionChatModel


def test_runaway_repeats_until_the_clients_cap(offline_server: EmulatorServer) -> None:
    reply = capped(offline_server, 60, fault="runaway").invoke(PLAN_PROMPT)

    assert cut_at_cap(offline_server, reply)
    assert reply.usage_metadata is not None and reply.usage_metadata["output_tokens"] == 60
    assert reply.text.startswith('{"operaciones": [') and reply.text.count('"funcion": "ventas_anuales"') >= 2


def test_runaway_without_a_cap_stops_when_the_context_is_full(offline_ollama: EmulatorServer) -> None:
    reply = client(offline_ollama, fault="runaway").invoke(PLAN_PROMPT)

    assert reply.response_metadata["done_reason"] == "length"
    assert reply.response_metadata["eval_count"] == RUNAWAY_CONTEXT_TOKENS


def test_placeholder_plan_reaches_structured_output_as_parsed_placeholders(
    offline_server: EmulatorServer,
) -> None:
    plan = (
        client(offline_server, fault="placeholder_plan")
        .with_structured_output(Plan, method="json_schema")
        .invoke(PLAN_PROMPT)
    )

    assert isinstance(plan, Plan)
    assert [op.funcion for op in plan.operaciones] == [PLACEHOLDER_FUNCTION, "compras_cliente"]
    assert plan.operaciones[1].parametros == {"cliente": {"$ref": "op1.campo_inexistente"}}


def test_schema_ignored_plans_alternate_between_respuesta_and_nothing(offline_ollama: EmulatorServer) -> None:
    model = client(offline_ollama, fault="schema_ignored")
    replies = [json.loads(model.invoke(PLAN_PROMPT).text) for _ in range(2)]

    assert sorted(replies, key=len) == [
        {},
        {"respuesta": replies[0].get("respuesta") or replies[1]["respuesta"]},
    ]


def test_schema_ignored_answers_are_empty(offline_gemini: EmulatorServer) -> None:
    assert json.loads(client(offline_gemini, fault="schema_ignored").invoke(ANSWER_PROMPT).text) == {}


def test_no_tool_calls_answers_in_prose_with_an_invented_figure(offline_server: EmulatorServer) -> None:
    reply = client(offline_server, fault="no_tool_calls").bind_tools(TOOLS).invoke(QUESTION)

    assert isinstance(reply, AIMessage)
    assert reply.tool_calls == [] and INVENTED_FIGURE in reply.text


def test_think_wrap_puts_a_think_block_before_the_json(offline_server: EmulatorServer) -> None:
    plain = client(offline_server).invoke(PLAN_PROMPT).text
    wrapped = client(offline_server, fault="think_wrap").invoke(PLAN_PROMPT).text

    assert wrapped == THINK_BLOCK + plain


def test_repeat_memory_is_a_valid_answer_with_a_wall_of_memory(offline_server: EmulatorServer) -> None:
    data = json.loads(client(offline_server, fault="repeat_memory").invoke(ANSWER_PROMPT).text)

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
