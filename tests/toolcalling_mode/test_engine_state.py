"""The conversation state tool calling records: the same ERP-derived state as the planner's
(:func:`shared.state.turn_state`), whichever policy and driver runs the turn."""

from __future__ import annotations

from typing import Any

import pytest
from langchain_core.messages import AIMessage, BaseMessage

from shared.erp.database import DEMO_TODAY
from shared.memory.context import relative_dates
from shared.security import DEMO_CALLER
from tests.engine_backends import run_turn
from tests.fakes import CallInfo
from tests.toolcalling_mode.toolcalling_fakes import ask_tools, call

TODAY_LINES = f"Fecha de hoy: 2026-11-30\n{relative_dates(DEMO_TODAY)}"
"""How the context starts on the demo ERP's today: the date, then what the relative dates mean."""

QUESTION = "¿Cuánto nos compró nuestro mejor cliente de 2025?"
DERIVED = {
    "anio": 2025,
    "cliente_actual": "ACME S.A.",  # the result's spelling of the customer the parameter matched
    "ultimas_operaciones": 'mejor_cliente(anio=2025); compras_cliente(cliente="acme", anio=2025)',
}
"""What the ERP derives from :func:`best_customer_then_purchases`'s operations (the calls as requested)."""
DRIVERS = ("ask", "astream")
POLICIES = ("windowed", "full_history")


def best_customer_then_purchases(messages: list[BaseMessage], info: CallInfo) -> AIMessage | str:
    """The best customer of 2025 (spelled as the user might), then that customer's purchases: a prose
    answer, so no ``estado`` from the model."""
    results = info.tool_results
    if not results:
        return ask_tools(call("mejor_cliente", anio=2025))
    if len(results) == 1:
        return ask_tools(call("compras_cliente", cliente="acme", anio=2025))
    return "ACME S.A. compró 120000000 en 2025."


@pytest.mark.parametrize("policy", POLICIES)
async def test_every_driver_stores_the_state_the_erp_derives_from_the_tools(
    make_engine: Any, memory_store: Any, policy: str
) -> None:
    for driver in DRIVERS:  # one conversation each, in one store
        engine, _ = make_engine(best_customer_then_purchases, policy=policy)

        result = await run_turn(engine, driver, driver, QUESTION)

        assert (driver, result.recorded, result.state) == (driver, True, DERIVED)
        assert memory_store.get_state(driver) == DERIVED
        assert result.memories == [] and memory_store.memories(driver) == []  # prose writes no memory


@pytest.mark.parametrize("policy", POLICIES)
def test_the_next_turn_reads_the_stored_state_before_its_question(make_engine: Any, policy: str) -> None:
    engine, model = make_engine(best_customer_then_purchases, policy=policy)
    engine.ask("c1", QUESTION, DEMO_CALLER)
    calls_before = len(model.calls)

    engine.ask("c1", "¿Y en 2024?", DEMO_CALLER)

    human = str(model.calls[calls_before].messages[-1].content)
    state_block = "\n".join(
        ["Estado de la conversación:", *(f"- {key}: {value}" for key, value in DERIVED.items())]
    )
    assert human.startswith(f"{TODAY_LINES}\n{state_block}\n")
    assert human.endswith("\n\nNueva pregunta:\n¿Y en 2024?")


def test_a_turn_without_operations_keeps_the_stored_state(make_engine: Any, memory_store: Any) -> None:
    engine, model = make_engine(best_customer_then_purchases)
    engine.ask("c1", QUESTION, DEMO_CALLER)
    model.function = lambda messages, info: "¡De nada!"

    result = engine.ask("c1", "Gracias.", DEMO_CALLER)

    assert result.operations == [] and result.state == DERIVED
    assert memory_store.get_state("c1") == DERIVED


def test_refused_and_invalid_tool_calls_derive_nothing(make_engine: Any, memory_store: Any) -> None:
    def mixed(messages: list[BaseMessage], info: CallInfo) -> AIMessage | str:
        if not info.tool_results:
            return ask_tools(
                call("ventas_anuales", anio=2024),
                call("compras_cliente", cliente="Zeta", anio=2023),  # no such customer: refused
                call("ventas_anuales", anio="dos mil veintidós"),  # invalid arguments
            )
        return "En 2024 vendimos 700000000; no encontré al cliente Zeta."

    engine, model = make_engine(mixed)

    result = engine.ask("c1", "¿Cuánto vendimos en 2024 y cuánto compró Zeta en 2023?", DEMO_CALLER)

    assert [op.error_kind for op in result.operations] == [None, "refused", "invalid"]
    # A later operation overrides an earlier one's keys, but only the one that ran says anything.
    expected = {"anio": 2024, "ultimas_operaciones": "ventas_anuales(anio=2024)"}
    assert result.state == expected and memory_store.get_state("c1") == expected
    model.function = lambda messages, info: (  # a turn whose only tool failed: nothing more derived
        "No encontré a Zeta."
        if info.tool_results
        else ask_tools(call("compras_cliente", cliente="Zeta", anio=2025))
    )
    assert engine.ask("c1", "¿Y Zeta en 2025?", DEMO_CALLER).state == expected


# -- a structured final answer's estado ---------------------------------------------------------------------

MODEL_STATE = {
    "tema": "clientes",  # only the model knows: kept
    "anio": 1999,  # the ERP derived these three this turn: its values win
    "cliente_actual": "Otro Cliente",
    "ultimas_operaciones": "inventada()",  # the ERP's alone, always
    "prioridad": "alta",  # a caller's own key: kept
}


def best_customer_then_structured(messages: list[BaseMessage], info: CallInfo) -> AIMessage | str:
    """The best customer of 2025, then a structured answer (ToolStrategy's ``Answer`` tool) whose
    ``estado`` contradicts the ERP."""
    if not info.tool_results:
        return ask_tools(call("mejor_cliente", anio=2025))
    answer = {"respuesta": "El mejor cliente de 2025 fue ACME S.A.", "memoria": [], "estado": MODEL_STATE}
    return ask_tools(call("Answer", **answer))


@pytest.mark.parametrize("policy", POLICIES)
async def test_a_structured_estado_merges_under_the_erps_keys_in_every_driver(
    make_engine: Any, memory_store: Any, policy: str
) -> None:
    expected = {
        "tema": "clientes",
        "anio": 2025,
        "cliente_actual": "ACME S.A.",
        "ultimas_operaciones": "mejor_cliente(anio=2025)",
        "prioridad": "alta",
    }
    for driver in DRIVERS:
        conversation = f"{policy}-{driver}"
        memory_store.ensure_conversation(conversation, user_id="gerente")  # the demo caller owns it
        memory_store.merge_state(conversation, {"ultima_operacion": "ventas_anuales"})  # an older version's
        engine, _ = make_engine(best_customer_then_structured, structured=True, structured_strategy="tool")

        result = await run_turn(engine, driver, conversation, "¿Quién fue el mejor cliente de 2025?")

        assert (driver, result.state) == (driver, expected)  # ultima_operacion deleted: superseded
        assert memory_store.get_state(conversation) == expected


def test_a_structured_estado_names_what_no_operation_of_the_turn_said(
    make_engine: Any, memory_store: Any
) -> None:
    def structured_only(messages: list[BaseMessage], info: CallInfo) -> AIMessage:
        estado = {"cliente_actual": "Distribuidora Norte", "tema": "clientes"}
        return ask_tools(call("Answer", respuesta="Anotado.", memoria=[], estado=estado))

    engine, _ = make_engine(structured_only, structured=True, structured_strategy="tool")

    result = engine.ask("c1", "Hablemos de Distribuidora Norte.", DEMO_CALLER)

    assert result.operations == []
    assert result.state == {"cliente_actual": "Distribuidora Norte", "tema": "clientes"}
