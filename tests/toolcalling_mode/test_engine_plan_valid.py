"""``TurnResult.plan_valid`` in tool calling: whether every tool call the model wrote was a valid request."""

from __future__ import annotations

from typing import Any

import pytest
from langchain_core.messages import AIMessage, BaseMessage

from benchmarks.stand_ins.faults import FaultMode
from benchmarks.stand_ins.offline import OfflineSalesModel
from shared.erp.users import caller_for
from shared.security import DEMO_CALLER
from tests.fakes import CallInfo, FunctionChatModel
from tests.toolcalling_mode.toolcalling_fakes import ask_tools, call, then_answer


def tools_then_answer(*calls: dict[str, Any]) -> Any:
    """A model that asks for ``calls`` in one step, then answers in prose."""
    return then_answer(ask_tools(*calls))


# -- valid ---------------------------------------------------------------------------------------------------


def test_a_turn_without_tool_calls_is_valid(make_engine: Any) -> None:
    engine, _ = make_engine(lambda messages, info: "¡Hola!")

    assert engine.ask("c1", "hola", DEMO_CALLER).plan_valid is True


def test_valid_tool_calls_are_valid_even_when_the_erp_refuses_one(make_engine: Any) -> None:
    engine, _ = make_engine(
        tools_then_answer(
            call("ventas_anuales", anio=2025), call("compras_cliente", cliente="Zeta", anio=2025)
        )
    )

    result = engine.ask("c1", "¿Cuánto vendimos y cuánto compró Zeta?", DEMO_CALLER)

    assert [op.error_kind for op in result.operations] == [None, "refused"]  # no such customer
    assert result.plan_valid is True


def test_the_structured_answers_own_tool_is_not_a_request_for_an_operation(make_engine: Any) -> None:
    def answer(messages: list[BaseMessage], info: CallInfo) -> AIMessage:
        return ask_tools(call("Answer", respuesta="Hola.", memoria=[], estado={}))

    engine, _ = make_engine(answer, structured=True, structured_strategy="tool")

    result = engine.ask("c1", "hola", DEMO_CALLER)

    assert (result.failure, result.plan_valid) == (None, True)


# -- invalid -------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "bad_call",
    [
        call("ventas_totales", anio=2025),  # no such tool
        call("ventas_anuales", anio="dos mil veinticinco"),  # rejected by the parameters model
        call("ventas_anuales"),  # a required parameter missing
    ],
    ids=["unknown-tool", "wrong-type", "missing-parameter"],
)
def test_one_invalid_call_makes_the_turn_invalid_even_next_to_a_valid_one(
    make_engine: Any, bad_call: dict[str, Any]
) -> None:
    engine, _ = make_engine(tools_then_answer(call("mejor_cliente", anio=2025), bad_call))

    result = engine.ask("c1", "¿Cuánto vendimos?", DEMO_CALLER)

    assert [op.error_kind for op in result.operations] == [None, "invalid"]
    assert result.plan_valid is False
    assert result.recorded  # the model answered: an invalid request is not a failed turn by itself


# -- with the offline model's faults and the sales registry --------------------------------------------------

FAULT_VERDICTS: dict[FaultMode, bool | None] = {
    "malformed_json": False,  # tool-call JSON the provider cannot parse: an invalid tool call
    "truncated_json": False,
    "unknown_function": False,
    "wrong_types": False,
    "no_tool_calls": True,  # a wrong answer, but no invalid request
    "text_tool_calls": True,  # written as text, recovered into valid tool calls
    "provider_error": None,  # no reply read
    "runaway": False,  # the first reply cut at the output cap: read, unusable (as the planner counts it)
}


@pytest.mark.parametrize("fault", list(FAULT_VERDICTS))
def test_the_offline_models_faults(demo_engine: Any, fault: FaultMode) -> None:
    engine = demo_engine(OfflineSalesModel(faults=fault))

    assert engine.ask("c1", "¿Cuánto vendimos en 2025?", DEMO_CALLER).plan_valid is FAULT_VERDICTS[fault]


def test_an_undeclared_parameter_is_invalid(demo_engine: Any) -> None:
    model = FunctionChatModel(tools_then_answer(call("ventas_anuales", anio=2025, moneda="USD")))
    engine = demo_engine(model)

    result = engine.ask("c1", "¿Cuánto vendimos en 2025, en dólares?", DEMO_CALLER)

    assert [op.error_kind for op in result.operations] == ["invalid"]  # the tool refused it too
    assert result.plan_valid is False


def test_a_tool_the_caller_was_not_given_is_invalid_a_customer_out_of_scope_is_not(
    demo_engine: Any, erp: Any, registry: Any
) -> None:
    bruno = caller_for(erp, "bruno")  # a salesperson: no category analysis, only his own customers
    assert not registry.permits(bruno, "ventas_por_categoria")
    model = FunctionChatModel(tools_then_answer(call("compras_cliente", cliente="Empresa ABC", anio=2025)))
    engine = demo_engine(model)

    out_of_scope = engine.ask("c1", "¿Cuánto compró Empresa ABC en 2025?", bruno)
    model.function = tools_then_answer(call("ventas_por_categoria", anio=2025))
    not_given = engine.ask("c2", "¿Cómo se repartieron las ventas de 2025 por categoría?", bruno)

    assert [op.error_kind for op in out_of_scope.operations] == ["refused"]
    assert out_of_scope.plan_valid is True  # a permitted tool the ERP refused on the caller's scope
    assert [op.error_kind for op in not_given.operations] == ["invalid"]
    assert not_given.plan_valid is False  # not among its tools: to the model, an unknown one
