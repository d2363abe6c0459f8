"""The offline model with bound tools: parallel and sequential tool calls, then a final answer."""

from __future__ import annotations

import json
from typing import Any

import pytest
from langchain.agents.structured_output import ProviderStrategy
from langchain_core.messages import BaseMessage, HumanMessage
from langchain_core.tools import StructuredTool

from benchmarks.stand_ins.offline import OfflineSalesModel
from shared.answer import Answer
from tests.benchmarks.stand_ins.offline.offline_prompts import (
    Operation,
    after_tool_call,
    merged,
    run_turn,
    tool_turn,
)


def test_independent_operations_are_requested_together_then_answered(tools: list[StructuredTool]) -> None:
    model = OfflineSalesModel().bind_tools(tools)
    replies = run_turn(model, tool_turn("¿Cuánto vendimos en 2025 y cuál fue nuestro mejor cliente?"), tools)
    assert [[(c["name"], c["args"]) for c in r.tool_calls] for r in replies] == [
        [("ventas_anuales", {"anio": 2025}), ("mejor_cliente", {"anio": 2025})],
        [],
    ]
    assert len({c["id"] for c in replies[0].tool_calls}) == 2
    answer = str(replies[-1].content)
    assert "₲850.000.000" in answer
    assert "Empresa ABC" in answer
    assert "₲120.000.000" in answer


def test_dependent_operation_waits_for_the_earlier_result(tools: list[StructuredTool]) -> None:
    model = OfflineSalesModel().bind_tools(tools, tool_choice="auto")
    replies = run_turn(model, tool_turn("¿Cuánto compró nuestro mejor cliente de 2025?"), tools)
    assert [[(c["name"], c["args"]) for c in r.tool_calls] for r in replies] == [
        [("mejor_cliente", {"anio": 2025})],
        [("compras_cliente", {"anio": 2025, "cliente": "Empresa ABC"})],
        [],
    ]
    assert "Empresa ABC compró ₲120.000.000" in str(replies[-1].content)


def test_full_history_follow_ups_are_resolved_from_earlier_messages(tools: list[StructuredTool]) -> None:
    model = OfflineSalesModel().bind_tools(tools)
    history: list[BaseMessage] = tool_turn("¿Cuál fue nuestro mejor cliente en 2025?")
    run_turn(model, history, tools)
    history.append(HumanMessage("¿Y cuánto compró?"))
    second = run_turn(model, history, tools)
    assert second[0].tool_calls[0]["args"] == {"anio": 2025, "cliente": "Empresa ABC"}
    history.append(HumanMessage("¿y en 2024?"))
    third = run_turn(model, history, tools)
    assert [(c["name"], c["args"]) for c in third[0].tool_calls] == [
        ("compras_cliente", {"cliente": "Empresa ABC", "anio": 2024})
    ]


@pytest.mark.parametrize(
    ("question", "reply"),
    [
        ("¿Y cuánto compró?", "¿De qué cliente"),  # a follow-up without history asks instead of guessing
        ("hola", "¡Hola!"),
        ("Borra las facturas pendientes de Empresa ABC", "No puedo"),
    ],
)
def test_questions_that_need_no_operation_call_no_tool(
    tools: list[StructuredTool], question: str, reply: str
) -> None:
    message = OfflineSalesModel().bind_tools(tools).invoke(tool_turn(question))
    assert message.tool_calls == []
    assert str(message.content).startswith(reply)


def test_tool_errors_are_explained_in_the_final_answer(tools: list[StructuredTool]) -> None:
    args = {"cliente": "Nadie", "anio": 2025}
    messages = after_tool_call(
        "¿Cuánto compró Nadie en 2025?", "compras_cliente", args, "No customer matches 'Nadie'.", error=True
    )
    reply = OfflineSalesModel().bind_tools(tools).invoke(messages)
    assert reply.tool_calls == []
    assert "No pude consultar las compras del cliente" in str(reply.content)


def test_tool_strategy_answer_tool_is_called_last_with_the_answer_json(tools: list[StructuredTool]) -> None:
    model = OfflineSalesModel().bind_tools([*tools, Answer], tool_choice="any")
    messages: list[BaseMessage] = tool_turn("¿Cuál fue nuestro mejor cliente en 2025?")
    first = model.invoke(messages)
    assert [c["name"] for c in first.tool_calls] == ["mejor_cliente"]
    messages += [first, *(tools[1].invoke(c) for c in first.tool_calls)]
    final = model.invoke(messages)
    assert [c["name"] for c in final.tool_calls] == ["Answer"]
    answer = Answer.model_validate(final.tool_calls[0]["args"])
    assert "Empresa ABC" in answer.text
    assert answer.state["cliente_actual"] == "Empresa ABC"
    assert answer.state["anio"] == 2025


def test_tool_strategy_small_talk_goes_straight_to_the_answer_tool(tools: list[StructuredTool]) -> None:
    reply = OfflineSalesModel().bind_tools([*tools, Answer], tool_choice="any").invoke(tool_turn("gracias"))
    assert [c["name"] for c in reply.tool_calls] == ["Answer"]


def test_provider_strategy_response_format_gives_the_answer_as_content(tools: list[StructuredTool]) -> None:
    model = OfflineSalesModel().bind_tools(tools, **ProviderStrategy(Answer).to_model_kwargs())
    replies = run_turn(model, tool_turn("¿Cuánto vendimos en 2025?"), tools)
    assert replies[0].tool_calls and replies[0].content == ""
    answer = Answer.model_validate_json(str(replies[-1].content))
    assert "₲850.000.000" in answer.text


def test_a_named_tool_choice_forces_that_tool_and_only_bound_tools_are_called(
    tools: list[StructuredTool],
) -> None:
    forced = OfflineSalesModel().bind_tools(tools, tool_choice="ventas_anuales")
    assert [c["name"] for c in forced.invoke(tool_turn("hola")).tool_calls] == ["ventas_anuales"]
    only_sales = OfflineSalesModel().bind_tools([t for t in tools if t.name == "ventas_anuales"])
    assert only_sales.invoke(tool_turn("¿Cuál fue el mejor cliente de 2025?")).tool_calls == []


def test_streaming_a_tool_call_reassembles_the_same_calls(tools: list[StructuredTool]) -> None:
    model = OfflineSalesModel().bind_tools(tools)
    question = tool_turn("¿Cuánto vendimos en 2025 y cuál fue nuestro mejor cliente?")
    full = merged(model.stream(question))
    assert [(c["name"], c["args"]) for c in full.tool_calls] == [
        ("ventas_anuales", {"anio": 2025}),
        ("mejor_cliente", {"anio": 2025}),
    ]
    assert json.dumps(full.usage_metadata)


# -- the understanding test_offline_understanding pins, with bound tools ---------------------------------


def tool_calls(tools: list[StructuredTool], question: str, **ctx: Any) -> list[list[Operation]]:
    replies = run_turn(OfflineSalesModel().bind_tools(tools), tool_turn(question, **ctx), tools)
    return [[(c["name"], c["args"]) for c in reply.tool_calls] for reply in replies]


def test_tools_two_customers_are_called_together(tools: list[StructuredTool]) -> None:
    assert tool_calls(tools, "¿Cuánto nos compraron Agro Sur S.A. y Comercial Sur en 2024?") == [
        [
            ("compras_cliente", {"anio": 2024, "cliente": "Agro Sur S.A."}),
            ("compras_cliente", {"anio": 2024, "cliente": "Comercial Sur"}),
        ],
        [],
    ]


def test_tools_best_customer_then_its_pending_invoices(tools: list[StructuredTool]) -> None:
    assert tool_calls(tools, "¿Qué le falta pagar a nuestro mejor cliente del año pasado?") == [
        [("mejor_cliente", {"anio": 2025})],
        [("facturas_pendientes", {"cliente": "Empresa ABC"})],
        [],
    ]


def test_tools_best_customer_of_one_year_purchases_in_another(tools: list[StructuredTool]) -> None:
    assert tool_calls(tools, "¿Cuánto gastó este año el que fue nuestro mejor cliente en 2023?") == [
        [("mejor_cliente", {"anio": 2023})],
        [("compras_cliente", {"anio": 2026, "cliente": "Empresa ABC"})],
        [],
    ]


def test_tools_year_follow_up_from_the_windowed_context(tools: list[StructuredTool]) -> None:
    exchange = ("¿Cuánto compró Agro Sur S.A. en 2025?", "Agro Sur S.A. compró ₲5.000.000 en 2025.")
    assert tool_calls(tools, "¿Y el año anterior?", exchange=exchange) == [
        [("compras_cliente", {"anio": 2024, "cliente": "Agro Sur S.A."})],
        [],
    ]
