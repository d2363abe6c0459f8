"""Fault injection: every mode, on plans, answers and tool calls; deterministic and seedable."""

from __future__ import annotations

import json
from typing import Any

import pytest
from langchain_core.messages import HumanMessage, SystemMessage
from langchain_core.tools import StructuredTool
from pydantic import ValidationError

import benchmarks.stand_ins.faults as faults_module
from benchmarks.stand_ins.faults import (
    FAULT_MODES,
    HALLUCINATED_FUNCTION,
    INVENTED_FIGURE,
    PLACEHOLDER_FUNCTION,
    REPEATED_MEMORY_ITEMS,
    RUNAWAY_CONTEXT_TOKENS,
    THINK_BLOCK,
    WALL_OF_TEXT_CHARS,
    FaultConfig,
    OfflineProviderError,
    OfflineProviderTimeout,
    spanish_number,
)
from benchmarks.stand_ins.offline import OfflineSalesModel, misbehave
from shared.answer import Answer
from shared.errors import ProviderError, ProviderTimeoutError
from shared.failures import failure_kind_of
from shared.llm.tokens import approx_tokens
from tests.benchmarks.stand_ins.offline.offline_prompts import (
    ANSWER_PROMPT,
    PLAN_PROMPT,
    QUESTION,
    invoked_and_streamed,
    tool_turn,
)

SPELLED_2025 = {"anio": "dos mil veinticinco"}
"""The year as the ``wrong_types`` fault writes it."""


def faulty(mode: str, **kwargs: Any) -> OfflineSalesModel:
    return OfflineSalesModel(faults=FaultConfig(mode=mode), **kwargs)  # type: ignore[arg-type]


def plan_reply(mode: str | None = None) -> str:
    return str((faulty(mode) if mode else OfflineSalesModel()).invoke(PLAN_PROMPT).content)


def answer_reply(mode: str | None = None) -> str:
    return str((faulty(mode) if mode else OfflineSalesModel()).invoke(ANSWER_PROMPT).content)


def test_malformed_json_is_not_parseable() -> None:
    with pytest.raises(json.JSONDecodeError):
        json.loads(plan_reply("malformed_json"))


def test_truncated_json_is_a_strict_prefix_of_the_good_reply() -> None:
    good, cut = plan_reply(), plan_reply("truncated_json")
    assert good.startswith(cut) and len(cut) < len(good)
    with pytest.raises(json.JSONDecodeError):
        json.loads(cut)


def test_unknown_function_names_an_operation_outside_the_catalog() -> None:
    operations = json.loads(plan_reply("unknown_function"))["operaciones"]
    assert operations[0]["funcion"] == HALLUCINATED_FUNCTION
    assert operations[1]["funcion"] == "mejor_cliente"


def test_wrong_types_spells_out_the_year() -> None:
    operations = json.loads(plan_reply("wrong_types"))["operaciones"]
    assert operations[0]["parametros"] == SPELLED_2025


def test_wrong_types_in_an_answer_breaks_importance() -> None:
    data = json.loads(answer_reply("wrong_types"))
    assert {item["importancia"] for item in data["memoria"]} == {"alta"}


def test_empty_reply_has_no_content_and_no_tool_calls(tools: list[StructuredTool]) -> None:
    reply = OfflineSalesModel(faults="empty").bind_tools(tools).invoke(QUESTION)
    assert reply.content == "" and reply.tool_calls == []


def test_provider_error_raises_a_provider_error() -> None:
    with pytest.raises(ProviderError) as caught:
        OfflineSalesModel(faults="provider_error").invoke("hola")
    assert isinstance(caught.value, OfflineProviderError)


def tool_reply(mode: str, tools: list[StructuredTool]) -> Any:
    return faulty(mode).bind_tools(tools).invoke(tool_turn(QUESTION))


@pytest.mark.parametrize(
    ("mode", "calls", "invalid"),
    [
        ("malformed_json", [("mejor_cliente", {"anio": 2025})], ["ventas_anuales"]),
        ("truncated_json", [("mejor_cliente", {"anio": 2025})], ["ventas_anuales"]),
        (
            "unknown_function",
            [(HALLUCINATED_FUNCTION, {"anio": 2025}), ("mejor_cliente", {"anio": 2025})],
            [],
        ),
        ("wrong_types", [("ventas_anuales", SPELLED_2025), ("mejor_cliente", SPELLED_2025)], []),
    ],
)
def test_a_broken_tool_step_has_invalid_calls_an_invented_tool_or_wrong_types(
    mode: str, calls: list[tuple[str, dict[str, Any]]], invalid: list[str], tools: list[StructuredTool]
) -> None:
    reply = tool_reply(mode, tools)
    assert [(c["name"], c["args"]) for c in reply.tool_calls] == calls
    assert [c["name"] for c in reply.invalid_tool_calls] == invalid


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


# -- the failures real models produce ---------------------------------------------------------------------


def test_every_mode_is_documented_in_the_module_docstring() -> None:
    assert all(f"``{mode}``" in (faults_module.__doc__ or "") for mode in FAULT_MODES)


def test_runaway_plan_repeats_one_operation_until_the_cap_cuts_it() -> None:
    reply = faulty("runaway", max_tokens=100).invoke(PLAN_PROMPT)
    content = str(reply.content)
    first_operation = json.dumps(json.loads(plan_reply())["operaciones"][0], ensure_ascii=False)

    assert reply.response_metadata["finish_reason"] == "length"
    assert reply.usage_metadata is not None and reply.usage_metadata["output_tokens"] == 100
    assert approx_tokens(content) == 100
    assert content.startswith('{"operaciones": [' + first_operation + ", " + first_operation)
    with pytest.raises(json.JSONDecodeError):
        json.loads(content)


def test_runaway_without_a_cap_stops_only_when_the_context_is_full() -> None:
    reply = faulty("runaway").invoke(PLAN_PROMPT)

    assert reply.response_metadata["finish_reason"] == "length"
    assert reply.usage_metadata is not None
    assert reply.usage_metadata["output_tokens"] == RUNAWAY_CONTEXT_TOKENS
    assert approx_tokens(str(reply.content)) == RUNAWAY_CONTEXT_TOKENS


def test_runaway_answer_repeats_the_same_memory_item() -> None:
    reply = faulty("runaway", max_tokens=300).invoke(ANSWER_PROMPT)
    item = json.dumps(json.loads(answer_reply())["memoria"][0], ensure_ascii=False)

    assert reply.response_metadata["finish_reason"] == "length"
    assert str(reply.content).count(item) >= 5


def test_runaway_tool_step_never_yields_a_valid_tool_call(tools: list[StructuredTool]) -> None:
    model = faulty("runaway", max_tokens=200).bind_tools(tools)

    for message in invoked_and_streamed(model, tool_turn(QUESTION)):
        assert message.tool_calls == [] and message.invalid_tool_calls == []
        assert message.response_metadata["finish_reason"] == "length"
        assert '"name": "ventas_anuales"' in str(message.content)


def test_repeat_memory_is_a_complete_valid_answer_with_a_wall_of_text() -> None:
    reply = faulty("repeat_memory").invoke(ANSWER_PROMPT)
    data = json.loads(str(reply.content))
    good = json.loads(answer_reply())

    assert reply.response_metadata["finish_reason"] == "stop"
    assert data["respuesta"] == good["respuesta"]
    assert data["memoria"] == [good["memoria"][0]] * REPEATED_MEMORY_ITEMS
    assert len(data["estado"]["detalle"]) == WALL_OF_TEXT_CHARS
    Answer.model_validate(data)  # valid: bounding it is the memory's job, not the parser's


@pytest.mark.parametrize("mode", ["repeat_memory", "no_tool_calls"])
def test_an_answer_fault_or_a_tool_fault_leaves_plans_alone(mode: str) -> None:
    assert plan_reply(mode) == plan_reply()


def test_placeholder_plan_copies_the_prompts_placeholders() -> None:
    reply = faulty("placeholder_plan").invoke(PLAN_PROMPT)

    assert json.loads(str(reply.content)) == {
        "operaciones": [
            {"id": "op1", "funcion": PLACEHOLDER_FUNCTION, "parametros": {"parametro": "valor"}},
            {
                "id": "op2",
                "funcion": "compras_cliente",
                "parametros": {"cliente": {"$ref": "op1.campo_inexistente"}},
            },
        ]
    }


def test_placeholder_plan_takes_its_real_operation_from_the_prompts_catalog() -> None:
    messages = [
        SystemMessage('Devuelve {"operaciones": [...]}. Operaciones: ventas_mensuales(anio, mes).'),
        HumanMessage("Nueva pregunta:\n¿Ventas de marzo?"),
    ]
    operations = json.loads(str(faulty("placeholder_plan").invoke(messages).content))["operaciones"]

    assert [op["funcion"] for op in operations] == [PLACEHOLDER_FUNCTION, "ventas_mensuales"]


def test_placeholder_plan_leaves_answers_alone() -> None:
    assert answer_reply("placeholder_plan") == answer_reply()


def test_schema_ignored_plans_alternate_between_a_respuesta_and_an_empty_object() -> None:
    model = faulty("schema_ignored")
    replies = [json.loads(str(model.invoke(PLAN_PROMPT).content)) for _ in range(3)]

    assert list(replies[0]) == ["respuesta"] and isinstance(replies[0]["respuesta"], str)
    assert replies[1] == {}
    assert replies[2] == replies[0]


def test_schema_ignored_answers_are_empty_objects() -> None:
    assert json.loads(answer_reply("schema_ignored")) == {}


def test_schema_ignored_also_reaches_a_structured_plan_schema() -> None:
    schema = {
        "title": "Plan",
        "type": "object",
        "properties": {"operaciones": {"type": "array", "items": {"type": "object"}}},
        "required": ["operaciones"],
    }
    raw = faulty("schema_ignored").with_structured_output(schema, include_raw=True)
    result: Any = raw.invoke([HumanMessage(f"Nueva pregunta:\n{QUESTION}")])

    assert "operaciones" not in result["parsed"]


def test_no_tool_calls_answers_in_prose_with_an_invented_figure(tools: list[StructuredTool]) -> None:
    reply = tool_reply("no_tool_calls", tools)

    assert reply.tool_calls == [] and reply.invalid_tool_calls == []
    assert INVENTED_FIGURE in reply.content
    assert reply.response_metadata["finish_reason"] == "stop"


def test_think_wrap_puts_a_reasoning_block_with_stray_braces_before_the_json() -> None:
    content = plan_reply("think_wrap")

    assert content.startswith("<think>") and content.endswith(plan_reply())
    block = content[: -len(plan_reply())]
    assert "</think>" in block and "{" in block and '{"draft": 1}' in block


def test_think_wrap_wraps_text_replies_and_keeps_tool_calls(tools: list[StructuredTool]) -> None:
    text = str(faulty("think_wrap").invoke("Hola").content)
    with_tools = tool_reply("think_wrap", tools)

    assert text == THINK_BLOCK + str(OfflineSalesModel().invoke("Hola").content)
    assert with_tools.content == THINK_BLOCK
    assert [c["name"] for c in with_tools.tool_calls] == ["ventas_anuales", "mejor_cliente"]


def test_timeout_raises_a_provider_timeout_that_the_failure_contract_calls_timeout() -> None:
    with pytest.raises(ProviderTimeoutError) as caught:
        faulty("timeout", timeout=3.0).invoke("hola")

    assert isinstance(caught.value, OfflineProviderTimeout)
    assert caught.value.timeout == 3.0
    assert failure_kind_of(caught.value) == "timeout"


def test_misbehave_rewrites_any_models_reply_as_the_offline_model_would() -> None:
    placeholder, runaway = (
        misbehave(mode, PLAN_PROMPT, text=text, tool_calls=[], tools_bound=False, schema=None, call_index=0)  # type: ignore[arg-type]
        for mode, text in [("placeholder_plan", "{}"), ("runaway", "Hola.")]
    )

    assert json.loads(placeholder.text)["operaciones"][0]["funcion"] == PLACEHOLDER_FUNCTION
    assert (placeholder.repeat, runaway.repeat) == ("", " Hola.")


@pytest.mark.parametrize("mode", ["provider_error", "timeout", "empty"])
def test_misbehave_refuses_modes_that_do_not_rewrite_a_reply(mode: str) -> None:
    with pytest.raises(ValueError, match="does not rewrite replies"):
        misbehave(mode, [], text="", tool_calls=[], tools_bound=False, schema=None, call_index=0)  # type: ignore[arg-type]
