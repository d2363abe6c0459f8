"""Fault injection: every mode, on plans, answers and tool calls; deterministic and seedable."""

from __future__ import annotations

import json
from typing import Any

import pytest
from langchain_core.messages import HumanMessage, SystemMessage
from langchain_core.tools import StructuredTool
from pydantic import ValidationError

from shared.errors import ProviderError
from shared.llm.faults import HALLUCINATED_FUNCTION, FaultConfig, OfflineProviderError, spanish_number
from shared.llm.offline import OfflineSalesModel
from tests.shared.llm.offline_prompts import RESULTS, answer_messages, context, plan_messages

QUESTION = "¿Cuánto vendimos en 2025 y cuál fue nuestro mejor cliente?"


def plan_reply(mode: str) -> str:
    return str(OfflineSalesModel(faults=FaultConfig(mode=mode)).invoke(plan_messages(QUESTION)).content)  # type: ignore[arg-type]


def test_malformed_json_is_not_parseable() -> None:
    with pytest.raises(json.JSONDecodeError):
        json.loads(plan_reply("malformed_json"))


def test_truncated_json_is_a_strict_prefix_of_the_good_reply() -> None:
    good = str(OfflineSalesModel().invoke(plan_messages(QUESTION)).content)
    cut = plan_reply("truncated_json")
    assert good.startswith(cut) and len(cut) < len(good)
    with pytest.raises(json.JSONDecodeError):
        json.loads(cut)


def test_unknown_function_names_an_operation_outside_the_catalog() -> None:
    operations = json.loads(plan_reply("unknown_function"))["operaciones"]
    assert operations[0]["funcion"] == HALLUCINATED_FUNCTION
    assert operations[1]["funcion"] == "mejor_cliente"


def test_wrong_types_spells_out_the_year() -> None:
    operations = json.loads(plan_reply("wrong_types"))["operaciones"]
    assert operations[0]["parametros"] == {"anio": "dos mil veinticinco"}


def test_wrong_types_in_an_answer_breaks_importance() -> None:
    results = [
        {"funcion": "ventas_anuales", "parametros": {"anio": 2025}, "resultado": RESULTS["ventas_anuales"]}
    ]
    model = OfflineSalesModel(faults="wrong_types")
    data = json.loads(str(model.invoke(answer_messages("¿Cuánto vendimos?", results)).content))
    assert {item["importancia"] for item in data["memoria"]} == {"alta"}


def test_empty_reply_has_no_content_and_no_tool_calls(tools: list[StructuredTool]) -> None:
    reply = OfflineSalesModel(faults="empty").bind_tools(tools).invoke(QUESTION)
    assert reply.content == "" and reply.tool_calls == []


def test_provider_error_raises_a_provider_error() -> None:
    with pytest.raises(ProviderError) as caught:
        OfflineSalesModel(faults="provider_error").invoke("hola")
    assert isinstance(caught.value, OfflineProviderError)


def tool_reply(mode: str, tools: list[StructuredTool]) -> Any:
    model = OfflineSalesModel(faults=FaultConfig(mode=mode)).bind_tools(tools)  # type: ignore[arg-type]
    return model.invoke([SystemMessage(context()), HumanMessage(QUESTION)])


@pytest.mark.parametrize("mode", ["malformed_json", "truncated_json"])
def test_broken_tool_arguments_become_invalid_tool_calls(mode: str, tools: list[StructuredTool]) -> None:
    reply = tool_reply(mode, tools)
    assert [c["name"] for c in reply.invalid_tool_calls] == ["ventas_anuales"]
    assert [c["name"] for c in reply.tool_calls] == ["mejor_cliente"]


def test_hallucinated_tool_name(tools: list[StructuredTool]) -> None:
    assert [c["name"] for c in tool_reply("unknown_function", tools).tool_calls] == [
        HALLUCINATED_FUNCTION,
        "mejor_cliente",
    ]


def test_wrong_tool_argument_types(tools: list[StructuredTool]) -> None:
    assert tool_reply("wrong_types", tools).tool_calls[0]["args"] == {"anio": "dos mil veinticinco"}


def test_faults_are_deterministic_for_a_seed_and_follow_the_rate() -> None:
    config = FaultConfig(mode="empty", rate=0.3, seed=7)
    pattern = [config.strikes(i) for i in range(200)]
    assert pattern == [FaultConfig(mode="empty", rate=0.3, seed=7).strikes(i) for i in range(200)]
    assert pattern != [FaultConfig(mode="empty", rate=0.3, seed=8).strikes(i) for i in range(200)]
    assert 40 <= sum(pattern) <= 80
    assert not any(FaultConfig(mode="empty", rate=0.0).strikes(i) for i in range(50))


def test_the_model_counts_calls_so_a_partial_rate_hits_the_same_calls_every_run() -> None:
    def run() -> list[bool]:
        model = OfflineSalesModel(faults=FaultConfig(mode="empty", rate=0.5, seed=3))
        return [model.invoke("hola").content == "" for _ in range(20)]

    first = run()
    assert first == run()
    assert first == [FaultConfig(mode="empty", rate=0.5, seed=3).strikes(i) for i in range(20)]


def test_fault_config_is_validated() -> None:
    with pytest.raises(ValidationError):
        FaultConfig(mode="on_fire")  # type: ignore[arg-type]
    with pytest.raises(ValidationError):
        FaultConfig(mode="empty", rate=1.5)


@pytest.mark.parametrize(
    ("value", "words"),
    [(2025, "dos mil veinticinco"), (2024, "dos mil veinticuatro"), (1999, "mil novecientos noventa y nueve"),
     (100, "cien"), (5, "cinco"), (2000, "dos mil")],
)  # fmt: skip
def test_spanish_numbers(value: int, words: str) -> None:
    assert spanish_number(value) == words
