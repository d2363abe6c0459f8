"""ToolCallingEngine driven by a function model over the toy registry: loop, recording, limits, failures."""

from __future__ import annotations

import json
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain_core.language_models.fake_chat_models import FakeListChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage

import toolcalling_mode._agent as agent_module
from shared.errors import ConfigurationError, ProviderError, StorageError
from shared.failures import NOT_RECORDED_NOTE, user_message
from shared.memory.store import MemoryStore
from shared.operations.registry import Operation, OperationRegistry
from shared.security import DEMO_CALLER, Caller
from tests.fakes import CallInfo, FunctionChatModel
from tests.toolcalling_mode.toolcalling_fakes import (
    YEAR_TOTALS,
    YearParams,
    YearTotal,
    ask_tools,
    call,
    toy_registry,
)
from toolcalling_mode import ToolCallingEngine, ToolCallingLimits
from toolcalling_mode.prompts import system_prompt


def two_parallel_tools(messages: list[BaseMessage], info: CallInfo) -> AIMessage | str:
    """Ask for sales and the best customer at once, then answer from the results."""
    if not info.tool_results:
        return ask_tools(call("ventas_anuales", anio=2025), call("mejor_cliente", anio=2025))
    results = [json.loads(str(m.content)) for m in info.tool_results]
    return f"En 2025 vendimos {results[0]['total']} y el mejor cliente fue {results[1]['cliente']}."


def dependent_tools(messages: list[BaseMessage], info: CallInfo) -> AIMessage | str:
    """Best customer first, then that customer's purchases: one step depends on the other."""
    results = info.tool_results
    if not results:
        return ask_tools(call("mejor_cliente", anio=2025))
    if len(results) == 1:
        best = json.loads(str(results[0].content))["cliente"]
        return ask_tools(call("compras_cliente", cliente=best, anio=2025))
    return "ACME S.A. compró 120000000 en 2025."


# -- the loop -------------------------------------------------------------------------------------------


def test_parallel_tool_calls_take_two_model_calls_and_are_recorded_as_one_step(
    make_engine: Any, memory_store: Any
) -> None:
    engine, model = make_engine(two_parallel_tools)

    result = engine.ask("c1", "¿Cuánto vendimos en 2025 y cuál fue nuestro mejor cliente?", DEMO_CALLER)

    assert result.model_calls == 2
    assert len(model.calls) == 2
    assert result.answer == "En 2025 vendimos 850000000 y el mejor cliente fue ACME S.A.."
    assert [op.funcion for op in result.operations] == ["ventas_anuales", "mejor_cliente"]
    assert result.operations[0].result == {"anio": 2025, "total": 850_000_000}
    assert result.operations[0].parametros == {"anio": 2025}
    assert all(op.ok and op.id and op.duration_ms >= 0 for op in result.operations)
    assert result.errors == []
    assert result.recorded
    assert result.mode == "toolcalling"
    assert result.plan is None
    assert result.failure is None
    assert result.input_tokens > 0 and result.output_tokens > 0
    assert result.model_ms > 0
    assert result.harness_ms == pytest.approx(result.total_ms - result.model_ms)
    history = memory_store.history("c1")  # the question, the step, its results and the final answer
    assert [m.role for m in history] == ["user", "assistant", "tool", "tool", "assistant"]
    step = history[1].metadata["tool_calls"]
    assert [c["name"] for c in step] == ["ventas_anuales", "mejor_cliente"]
    assert [m.metadata["tool_call_id"] for m in history[2:4]] == [c["id"] for c in step]
    assert json.loads(history[2].content) == {"anio": 2025, "total": 850_000_000}
    assert history[-1].content == result.answer
    assert "tool_calls" not in history[-1].metadata


def test_each_callers_agent_is_compiled_on_their_first_turn_and_reused(
    make_engine: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    built: list[Any] = []

    def counting(*args: Any, **kwargs: Any) -> Any:
        built.append(kwargs)
        return create_agent(*args, **kwargs)

    monkeypatch.setattr(agent_module, "create_agent", counting)
    engine, _ = make_engine(two_parallel_tools)
    assert built == []  # no default caller, so no agent compiled up front

    engine.ask("c1", "una", DEMO_CALLER)
    engine.ask("c1", "dos", DEMO_CALLER)
    engine.ask("c2", "tres", DEMO_CALLER)
    assert len(built) == 1
    assert built[0]["context_schema"] is not None

    ana = Caller(user_id="ana", roles=frozenset({"ventas"}))
    engine.ask("c3", "cuatro", ana)
    engine.ask("c3", "cinco", ana)
    engine.ask("c4", "seis", DEMO_CALLER)
    assert len(built) == 2  # one more for ana's first turn; both agents kept


def test_a_model_that_cannot_bind_tools_is_refused_at_construction(toy_erp: Any, tmp_path: Any) -> None:
    model = FakeListChatModel(responses=["Hola."])  # BaseChatModel.bind_tools: NotImplementedError
    refusal = r"FakeListChatModel does not support tool calling \(it does not implement bind_tools\)"

    with (
        MemoryStore(f"sqlite:///{tmp_path / 'memory.sqlite3'}") as store,
        pytest.raises(ConfigurationError, match=refusal),
    ):
        ToolCallingEngine(toy_registry(), toy_erp, store, model)


def test_mode_names_follow_the_policy(make_engine: Any) -> None:
    assert make_engine(two_parallel_tools)[0].mode == "toolcalling"
    assert make_engine(two_parallel_tools, policy="full_history")[0].mode == "toolcalling-full"
    with pytest.raises(ValueError, match="policy"):
        make_engine(two_parallel_tools, policy="everything")


# -- context policies ------------------------------------------------------------------------------------


def test_windowed_sends_the_bounded_context_and_only_the_new_question(make_engine: Any) -> None:
    engine, model = make_engine(two_parallel_tools)
    first = engine.ask("c1", "¿Cuánto vendimos en 2025 y cuál fue nuestro mejor cliente?", DEMO_CALLER)
    first_calls = len(model.calls)

    engine.ask("c1", "¿Y en 2024?", DEMO_CALLER)

    second = model.calls[first_calls]
    assert second.system == system_prompt()  # the same instructions every turn: a cacheable prefix
    assert [type(m) for m in second.messages[1:]] == [HumanMessage]
    human = str(second.messages[1].content)  # the context, then the question
    assert human.startswith("Fecha de hoy: 2026-11-30\n")
    assert "Último intercambio:" in human
    assert "Usuario: ¿Cuánto vendimos en 2025 y cuál fue nuestro mejor cliente?" in human
    assert f"Asistente: {first.answer}" in human
    assert human.endswith("\n\nNueva pregunta:\n¿Y en 2024?")


def test_windowed_first_turn_has_only_todays_date(make_engine: Any) -> None:
    engine, model = make_engine(lambda messages, info: "Hola.")

    engine.ask("c1", "hola", DEMO_CALLER)

    assert model.calls[0].system == system_prompt()
    assert model.calls[0].messages[-1].content == "Fecha de hoy: 2026-11-30\n\nNueva pregunta:\nhola"


def test_full_history_replays_every_stored_message(make_engine: Any) -> None:
    engine, model = make_engine(two_parallel_tools, policy="full_history")
    first = engine.ask("c1", "¿Cuánto vendimos en 2025 y cuál fue nuestro mejor cliente?", DEMO_CALLER)
    first_calls = len(model.calls)

    engine.ask("c1", "¿Y en 2024?", DEMO_CALLER)

    second = model.calls[first_calls]
    replay = second.messages[1:]
    assert [m.type for m in replay] == ["human", "ai", "tool", "tool", "ai", "human"]
    assert replay[0].content == "¿Cuánto vendimos en 2025 y cuál fue nuestro mejor cliente?"
    assert isinstance(replay[1], AIMessage)
    assert [c["name"] for c in replay[1].tool_calls] == ["ventas_anuales", "mejor_cliente"]
    assert json.loads(str(replay[2].content))["total"] == 850_000_000
    assert replay[4].content == first.answer
    assert second.system == system_prompt()  # the same instructions every turn and day: a cacheable prefix
    assert replay[5].content == (  # today and the state, then the question; the replay holds the rest
        "Fecha de hoy: 2026-11-30\nEstado de la conversación:\n- anio: 2025\n- cliente_actual: ACME S.A.\n"
        "- ultimas_operaciones: ventas_anuales(anio=2025); mejor_cliente(anio=2025)\n\n"
        "Nueva pregunta:\n¿Y en 2024?"
    )


# -- limits ----------------------------------------------------------------------------------------------


def forever(messages: list[BaseMessage], info: CallInfo) -> AIMessage:
    """A model that never stops asking for tools."""
    return ask_tools(call("ventas_anuales", anio=2025))


def test_model_call_limit_ends_the_turn_with_a_clear_answer(make_engine: Any, memory_store: Any) -> None:
    engine, model = make_engine(forever, limits=ToolCallingLimits(model_calls=3, recursion_limit=100))

    result = engine.ask("c1", "¿Cuánto vendimos?", DEMO_CALLER)

    assert len(model.calls) == 3
    assert result.model_calls == 3
    assert result.answer == user_message("limit")  # the same words in both modes; errors name the limit
    assert len(result.operations) == 3
    assert any("Model call limit" in e for e in result.errors)
    assert result.failure == "limit"
    assert not result.recorded and memory_store.history("c1") == []  # a turn the model never finished


def test_recursion_limit_ends_the_turn_with_a_clear_answer(make_engine: Any, memory_store: Any) -> None:
    engine, model = make_engine(forever, limits=ToolCallingLimits(model_calls=100, recursion_limit=10))

    result = engine.ask("c1", "¿Cuánto vendimos?", DEMO_CALLER)

    assert 1 <= len(model.calls) < 100
    assert result.answer == user_message("limit")  # the same words in both modes; errors name the limit
    assert any("Recursion limit" in e for e in result.errors)
    assert result.failure == "limit"
    assert not result.recorded and memory_store.history("c1") == []


def test_a_turn_after_a_limit_replays_cleanly(make_engine: Any) -> None:
    engine, model = make_engine(forever, policy="full_history", limits=ToolCallingLimits(recursion_limit=10))
    engine.ask("c1", "uno", DEMO_CALLER)
    model.function = lambda messages, info: "Listo."

    result = engine.ask("c1", "dos", DEMO_CALLER)

    replay = model.calls[-1].messages[1:]
    # The limited turn left nothing behind, so nothing half-finished is replayed (and no state was stored).
    assert [type(m) for m in replay] == [HumanMessage]
    assert replay[0].content == "Fecha de hoy: 2026-11-30\n\nNueva pregunta:\ndos"
    assert result.answer == "Listo."


# -- tool errors -----------------------------------------------------------------------------------------


def test_invalid_arguments_go_back_to_the_model_which_recovers(make_engine: Any) -> None:
    def fix_after_error(messages: list[BaseMessage], info: CallInfo) -> AIMessage | str:
        results = info.tool_results
        if not results:
            return ask_tools(call("ventas_anuales", anio="dos mil veinticinco"))
        if results[-1].status == "error":
            return ask_tools(call("ventas_anuales", anio=2025))
        return "Vendimos 850000000."

    engine, model = make_engine(fix_after_error)

    result = engine.ask("c1", "¿Cuánto vendimos en 2025?", DEMO_CALLER)

    assert result.answer == "Vendimos 850000000."
    assert result.model_calls == 3
    assert [op.ok for op in result.operations] == [False, True]
    assert result.plan_valid is False  # corrected, but an invalid request was made
    assert result.operations[0].parametros == {"anio": "dos mil veinticinco"}
    error_seen = model.calls[1].tool_results[0]
    assert error_seen.status == "error"
    assert len(result.errors) == 1 and "ventas_anuales" in result.errors[0]


def test_an_unknown_customer_is_a_tool_error_the_model_sees(make_engine: Any) -> None:
    def unknown_customer(messages: list[BaseMessage], info: CallInfo) -> AIMessage | str:
        if not info.tool_results:
            return ask_tools(call("compras_cliente", cliente="Zeta", anio=2025))
        return f"No encontré al cliente: {info.tool_results[0].content}"

    engine, _ = make_engine(unknown_customer)

    result = engine.ask("c1", "¿Cuánto compró Zeta?", DEMO_CALLER)

    assert result.operations[0].error is not None
    assert "Ningún cliente al que usted tenga acceso coincide con 'Zeta'" in result.operations[0].error
    assert "ACME S.A." in result.answer
    assert result.errors == [f"Tool 'compras_cliente' failed: {result.operations[0].error}"]


def test_a_hallucinated_tool_name_is_answered_with_an_error_and_counted(make_engine: Any) -> None:
    def hallucinate(messages: list[BaseMessage], info: CallInfo) -> AIMessage | str:
        if not info.tool_results:
            return ask_tools(call("ventas_totales", anio=2025))
        return "No tengo esa herramienta."

    engine, model = make_engine(hallucinate)

    result = engine.ask("c1", "¿Cuánto vendimos?", DEMO_CALLER)

    assert result.answer == "No tengo esa herramienta."
    assert result.operations[0].funcion == "ventas_totales"
    assert "not a valid tool" in (result.operations[0].error or "")
    assert result.errors and result.errors[0].startswith("Unknown tool 'ventas_totales'")
    assert model.calls[1].tool_results[0].status == "error"


# -- failures ----------------------------------------------------------------------------------------------


def test_a_provider_exception_ends_the_turn_and_leaves_the_conversation_untouched(
    make_engine: Any, memory_store: Any
) -> None:
    def broken(messages: list[BaseMessage], info: CallInfo) -> AIMessage:
        raise ProviderError("connection refused")

    engine, _ = make_engine(broken)

    result = engine.ask("c1", "¿Cuánto vendimos?", DEMO_CALLER)

    assert result.answer == user_message("provider")
    assert result.errors == ["ProviderError: connection refused"]
    assert (result.failure, result.plan_valid) == ("provider", None)  # no reply read
    assert not result.recorded and memory_store.history("c1") == []


def test_a_timeout_after_tool_calls_reports_the_operations_and_records_nothing(
    make_engine: Any, memory_store: Any
) -> None:
    def fails_second(messages: list[BaseMessage], info: CallInfo) -> AIMessage:
        if not info.tool_results:
            return ask_tools(call("ventas_anuales", anio=2025))
        raise TimeoutError("read timed out")

    engine, _ = make_engine(fails_second)

    result = engine.ask("c1", "¿Cuánto vendimos?", DEMO_CALLER)

    assert (result.failure, result.answer) == ("timeout", user_message("timeout"))
    assert len(result.errors) == 1 and result.errors[0].startswith("ProviderTimeoutError:")
    assert len(result.operations) == 1 and result.operations[0].ok
    assert result.plan_valid is True  # the first reply's request was valid; only the turn failed
    assert not result.recorded and memory_store.history("c1") == []


def test_an_empty_final_answer_is_a_model_output_failure(make_engine: Any, memory_store: Any) -> None:
    engine, _ = make_engine(lambda messages, info: "")

    result = engine.ask("c1", "hola", DEMO_CALLER)

    assert result.answer == user_message("model_output")
    assert "ModelOutputError: The model's final answer is empty." in result.errors
    assert result.failure == "model_output"
    assert not result.recorded and memory_store.history("c1") == []


# -- structured final answer ---------------------------------------------------------------------------------

STRUCTURED = {
    "respuesta": "En 2025 vendimos ₲850.000.000.",
    "memoria": [{"contenido": "El usuario consulta ventas de 2025.", "importancia": 0.7}],
    "estado": {"tema": "ventas", "anio": 2025},
}


def answer_with_tool(messages: list[BaseMessage], info: CallInfo) -> AIMessage | str:
    """Query first, then call the final-answer tool that ToolStrategy binds."""
    if not info.tool_results:
        return ask_tools(call("ventas_anuales", anio=2025))
    return ask_tools(call("Answer", **STRUCTURED))


def test_structured_tool_strategy_stores_memories_and_state(make_engine: Any, memory_store: Any) -> None:
    engine, model = make_engine(answer_with_tool, structured=True, structured_strategy="tool")

    result = engine.ask("c1", "¿Cuánto vendimos en 2025?", DEMO_CALLER)

    assert "Answer" in model.calls[0].tool_names
    assert model.calls[0].tool_choice == "any"
    assert "formato estructurado" in model.calls[0].system
    assert result.answer == STRUCTURED["respuesta"]
    assert result.memories == ["El usuario consulta ventas de 2025."]
    assert result.state == {**STRUCTURED["estado"], "ultimas_operaciones": "ventas_anuales(anio=2025)"}
    assert result.model_calls == 2
    assert [op.funcion for op in result.operations] == ["ventas_anuales"]
    assert result.errors == []
    assert memory_store.get_state("c1") == result.state
    assert [m.contenido for m in memory_store.memories("c1")] == ["El usuario consulta ventas de 2025."]
    history = memory_store.history("c1")
    assert [m.role for m in history] == ["user", "assistant", "tool", "assistant"]
    assert history[-1].content == STRUCTURED["respuesta"]
    assert "tool_calls" not in history[-1].metadata


def test_structured_auto_strategy_uses_tool_strategy_without_a_provider_profile(make_engine: Any) -> None:
    engine, model = make_engine(answer_with_tool, structured=True)

    result = engine.ask("c1", "¿Cuánto vendimos en 2025?", DEMO_CALLER)

    assert "Answer" in model.calls[0].tool_names
    assert result.answer == STRUCTURED["respuesta"]


def test_structured_provider_strategy_parses_the_json_reply(make_engine: Any) -> None:
    def answer_in_json(messages: list[BaseMessage], info: CallInfo) -> AIMessage | str:
        if not info.tool_results:
            return ask_tools(call("ventas_anuales", anio=2025))
        return json.dumps(STRUCTURED, ensure_ascii=False)

    engine, model = make_engine(answer_in_json, structured=True, structured_strategy="provider")

    result = engine.ask("c1", "¿Cuánto vendimos en 2025?", DEMO_CALLER)

    assert model.calls[0].response_format["type"] == "json_schema"
    assert "respuesta" in json.dumps(model.calls[0].response_format)
    assert "Answer" not in model.calls[0].tool_names
    assert result.answer == STRUCTURED["respuesta"]
    assert result.state == {**STRUCTURED["estado"], "ultimas_operaciones": "ventas_anuales(anio=2025)"}


def test_structured_provider_strategy_with_unparsable_reply_is_a_model_output_failure(
    make_engine: Any,
) -> None:
    engine, _ = make_engine(
        lambda messages, info: "no es JSON", structured=True, structured_strategy="provider"
    )

    result = engine.ask("c1", "hola", DEMO_CALLER)

    assert result.answer == user_message("model_output")
    assert result.errors and result.errors[0].startswith("ModelOutputError")
    assert result.failure == "model_output"
    assert not result.recorded


def test_structured_mode_without_a_structured_answer_is_a_model_output_failure(make_engine: Any) -> None:
    engine, _ = make_engine(lambda messages, info: "Hola.", structured=True, structured_strategy="tool")

    result = engine.ask("c1", "hola", DEMO_CALLER)

    assert (result.failure, result.recorded) == ("model_output", False)
    assert "ModelOutputError: The model ended the turn without a structured answer." in result.errors


def test_invalid_arguments_error_names_the_parameter(make_engine: Any) -> None:
    def wrong_type(messages: list[BaseMessage], info: CallInfo) -> AIMessage | str:
        if not info.tool_results:
            return ask_tools(call("ventas_anuales", anio="dos mil"))
        return str(info.tool_results[0].content)

    engine, _ = make_engine(wrong_type)

    result = engine.ask("c1", "¿Cuánto vendimos?", DEMO_CALLER)

    assert result.answer.startswith("Parámetros inválidos para 'ventas_anuales': anio:")
    assert result.operations[0].error == result.answer


def test_a_storage_failure_is_reported_not_raised(
    make_engine: Any, memory_store: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    engine, _ = make_engine(answer_with_tool, structured=True, structured_strategy="tool")
    memory_store.ensure_conversation("c1", user_id="gerente")  # the demo caller owns it
    memory_store.merge_state("c1", {"tema": "clientes"})

    def fail(*args: Any, **kwargs: Any) -> None:
        raise StorageError("disk full")

    monkeypatch.setattr(memory_store, "record_turn", fail)

    result = engine.ask("c1", "¿Cuánto vendimos en 2025?", DEMO_CALLER)

    assert not result.recorded
    assert result.failure == "storage"
    assert result.errors == ["Turn not recorded: disk full"]
    assert result.answer == f"{STRUCTURED['respuesta']}\n\n{NOT_RECORDED_NOTE}"  # the answer is still shown
    assert result.state == {"tema": "clientes"}  # the stored state: the turn's update was not merged


def test_an_unexpected_tool_exception_is_an_operation_error_whose_text_never_reaches_the_model(
    toy_erp: Any, memory_store: Any
) -> None:
    def crash(_session: Any, params: YearParams) -> YearTotal:
        raise RuntimeError("database is locked")

    registry = OperationRegistry(
        [Operation("ventas_anuales", "Total vendido en un año.", YearParams, YearTotal, crash)]
    )

    def report(messages: list[BaseMessage], info: CallInfo) -> AIMessage | str:
        if not info.tool_results:
            return ask_tools(call("ventas_anuales", anio=2025))
        return f"No pude consultar: {info.tool_results[0].content}"

    model = FunctionChatModel(report)
    engine = ToolCallingEngine(registry, toy_erp, memory_store, model)

    result = engine.ask("c1", "¿Cuánto vendimos en 2025?", DEMO_CALLER)

    [operation] = result.operations
    error = operation.error or ""
    assert model.calls[1].tool_results[0].status == "error"
    assert error.startswith("error interno (ref ") and operation.error_kind == "internal"
    assert "database is locked" not in str(model.calls[1].messages)  # the exception stays in the log
    assert result.answer == f"No pude consultar: {error}"
    assert result.failure == "operation_error" and result.recorded  # the model explained it
    assert result.operations[0].duration_ms > 0
    assert result.errors == [f"Tool 'ventas_anuales' failed: {error}"]
    assert [m.role for m in memory_store.history("c1")] == ["user", "assistant", "tool", "assistant"]


# -- one engine, many threads ------------------------------------------------------------------------------


def yearly_sales(messages: list[BaseMessage], info: CallInfo) -> AIMessage | str:
    """Sales of the year named in this turn's question (its last four characters)."""
    human = str([m for m in messages if isinstance(m, HumanMessage)][-1].content)
    question = human.rpartition("Nueva pregunta:\n")[2]  # windowed: after the context; full history: all
    if not info.tool_results:
        return ask_tools(call("ventas_anuales", anio=int(question[-4:])))
    return f"{question}: {json.loads(str(info.tool_results[0].content))['total']}"


@pytest.mark.parametrize("policy", ["windowed", "full_history"])
def test_one_engine_serves_concurrent_conversations_without_mixing_them(
    make_engine: Any, memory_store: Any, policy: str
) -> None:
    engine, model = make_engine(yearly_sales, policy=policy)
    years = {f"c{i}": 2024 + i % 2 for i in range(8)}
    start = threading.Barrier(len(years))

    def converse(conversation_id: str) -> list[Any]:
        start.wait()
        year = years[conversation_id]
        return [
            engine.ask(conversation_id, f"{conversation_id} turno {turn} {year}", DEMO_CALLER)
            for turn in range(3)
        ]

    with ThreadPoolExecutor(max_workers=len(years)) as pool:
        results = dict(zip(years, pool.map(converse, years), strict=True))

    assert len(model.calls) == 2 * 3 * len(years)
    for conversation_id, turns in results.items():
        year = years[conversation_id]
        for turn, result in enumerate(turns):
            question = f"{conversation_id} turno {turn} {year}"
            assert result.answer == f"{question}: {YEAR_TOTALS[year]}"
            assert result.model_calls == 2 and result.errors == [] and result.recorded
            assert [op.parametros for op in result.operations] == [{"anio": year}]
        history = memory_store.history(conversation_id)
        assert [m.content for m in history if m.role == "user"] == [
            f"{conversation_id} turno {turn} {year}" for turn in range(3)
        ]
        assert [m.role for m in history] == ["user", "assistant", "tool", "assistant"] * 3


def test_no_tool_of_a_step_cut_at_the_output_cap_runs(make_engine: Any, memory_store: Any) -> None:
    def cut_mid_step(messages: list[BaseMessage], info: CallInfo) -> AIMessage:
        calls = [call("ventas_anuales", anio=2025), call("mejor_cliente", anio=2025)]
        reply = ask_tools(*calls)
        reply.response_metadata["finish_reason"] = "length"  # the model hit max_tokens while writing them
        return reply

    engine, _ = make_engine(cut_mid_step)
    result = engine.ask("c1", "¿Cuánto vendimos y quién fue el mejor cliente?", DEMO_CALLER)

    assert (result.failure, result.recorded, result.operations) == ("model_output", False, [])
    assert any(error.startswith("OutputLimitError") for error in result.errors)
    assert memory_store.history("c1") == []
