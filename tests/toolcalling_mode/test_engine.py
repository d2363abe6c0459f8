"""ToolCallingEngine over the toy registry: the loop, context policies, limits, failures, structured answers,
and the three entry points (``ask``, ``aask``, ``astream``) running the same turn: events, threads,
callbacks and logging."""

from __future__ import annotations

import asyncio
import contextvars
import json
import logging
import threading
from concurrent.futures import ThreadPoolExecutor
from contextlib import aclosing
from typing import Any, Literal

import pytest
from langchain.agents import create_agent
from langchain_core.language_models.fake_chat_models import FakeListChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage

import toolcalling_mode._agent as agent_module
from benchmarks.stand_ins import build_model
from benchmarks.stand_ins.faults import FaultConfig
from benchmarks.stand_ins.offline import OfflineSalesModel
from shared.bounds import reply_max_chars
from shared.engine import AssistantEngine
from shared.erp.database import DEMO_TODAY
from shared.errors import (
    ConfigurationError,
    ConversationAccessDenied,
    OutputLimitError,
    ProviderError,
    StorageError,
)
from shared.events import AnswerDelta, OperationDone, TurnDone
from shared.failures import NOT_RECORDED_NOTE, user_message
from shared.memory.context import relative_dates
from shared.operations.registry import Operation, OperationRegistry
from shared.result_text import for_model
from shared.security import DEMO_CALLER, Caller
from shared.turn import FirstAnswerCall
from tests.engine_backends import deltas, run_turn, streamed
from tests.fakes import CallInfo, FunctionChatModel, ModelFunction, RunRecorder, YearParams, YearTotal
from tests.toolcalling_mode.toolcalling_fakes import (
    YEAR_TOTALS,
    ask_tools,
    call,
    then_answer,
    toy_registry,
    two_parallel_tools,
)
from toolcalling_mode import ToolCallingEngine, ToolCallingLimits
from toolcalling_mode.prompts import system_prompt

TODAY_LINES = f"Fecha de hoy: 2026-11-30\n{relative_dates(DEMO_TODAY)}"
"""How the context starts on the demo ERP's today: the date, then what the relative dates mean."""

QUESTION = "¿Cuánto vendimos en 2025 y cuál fue nuestro mejor cliente?"


def forever(messages: list[BaseMessage], info: CallInfo) -> AIMessage:
    """A model that never stops asking for tools."""
    return ask_tools(call("ventas_anuales", anio=2025))


def cut_at_the_cap(messages: list[BaseMessage], info: CallInfo) -> AIMessage:
    """Two tool calls, cut at max_tokens while the model wrote them."""
    reply = ask_tools(call("ventas_anuales", anio=2025), call("mejor_cliente", anio=2025))
    reply.response_metadata["finish_reason"] = "length"
    return reply


def past_the_cap(messages: list[BaseMessage], info: CallInfo) -> AIMessage:
    """A reply longer than its cap can hold (a server ignoring ``max_tokens``), with a call at its end."""
    reply = ask_tools(call("ventas_anuales", anio=2025))
    reply.content = "palabra " * (reply_max_chars(None) // 8 + 1)
    return reply


def huge_arguments(messages: list[BaseMessage], info: CallInfo) -> AIMessage:
    """One call whose arguments are longer than a reply may be (a server ignoring ``max_tokens``)."""
    return ask_tools(call("compras_cliente", cliente="x" * (reply_max_chars(None) + 1), anio=2025))


def by_id(operations: Any) -> list[Any]:
    """Operations in call id order: parallel tool calls finish, and their events arrive, in any order."""
    return sorted(operations, key=lambda op: str(op.id))


# -- the engine ----------------------------------------------------------------------------------------


def test_the_engine_satisfies_the_protocol_and_its_default_limits_end_on_model_calls(
    make_engine: Any,
) -> None:
    engine, _ = make_engine(lambda messages, info: "Hola.")
    limits = ToolCallingLimits()

    assert isinstance(engine, AssistantEngine)
    assert limits.model_calls == 6 and limits.recursion_limit >= 4 * limits.model_calls + 2


def test_mode_names_follow_the_policy_and_unknown_policies_are_refused(make_engine: Any) -> None:
    assert make_engine(two_parallel_tools)[0].mode == "toolcalling"
    assert make_engine(two_parallel_tools, policy="full_history")[0].mode == "toolcalling-full"
    with pytest.raises(ValueError, match="context policy"):
        make_engine(two_parallel_tools, policy="everything")
    with pytest.raises(ValueError, match="grounding policy"):
        make_engine(two_parallel_tools, grounding="maybe")


def test_a_model_that_cannot_bind_tools_is_refused_at_construction(toy_erp: Any, memory_store: Any) -> None:
    model = FakeListChatModel(responses=["Hola."])  # BaseChatModel.bind_tools: NotImplementedError
    refusal = r"FakeListChatModel does not support tool calling \(it does not implement bind_tools\)"

    with pytest.raises(ConfigurationError, match=refusal):
        ToolCallingEngine(toy_registry(), toy_erp, memory_store, model)


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

    for conversation in ("c1", "c1", "c2"):
        engine.ask(conversation, "una", DEMO_CALLER)
    assert len(built) == 1 and built[0]["context_schema"] is not None

    ana = Caller(user_id="ana", roles=frozenset({"ventas"}))
    engine.ask("c3", "cuatro", ana)
    engine.ask("c3", "cinco", ana)
    engine.ask("c4", "seis", DEMO_CALLER)
    assert len(built) == 2  # one more for ana's first turn; both agents kept


# -- the loop -------------------------------------------------------------------------------------------


def test_parallel_tool_calls_take_two_model_calls_and_are_recorded_as_one_step(
    make_engine: Any, memory_store: Any
) -> None:
    engine, model = make_engine(two_parallel_tools)

    result = engine.ask("c1", QUESTION, DEMO_CALLER)

    assert result.model_calls == len(model.calls) == 2
    assert [call.role for call in result.calls] == ["agent", "agent"]
    assert result.answer == "En 2025 vendimos 850.000.000 y el mejor cliente fue ACME S.A.."
    assert [op.function for op in result.operations] == ["ventas_anuales", "mejor_cliente"]
    assert result.operations[0].result == {"anio": 2025, "total": 850_000_000}
    assert result.operations[0].parameters == {"anio": 2025}
    assert all(op.ok and op.id and op.duration_ms >= 0 for op in result.operations)
    assert (result.errors, result.recorded, result.mode, result.plan, result.failure) == (
        [],
        True,
        "toolcalling",
        None,
        None,
    )
    assert result.input_tokens > 0 and result.output_tokens > 0 and result.model_ms > 0
    assert result.harness_ms == pytest.approx(result.total_ms - result.model_ms)
    history = memory_store.history("c1")  # the question, the step, its results and the final answer
    assert [m.role for m in history] == ["user", "assistant", "tool", "tool", "assistant"]
    step = history[1].metadata["tool_calls"]
    assert [c["name"] for c in step] == ["ventas_anuales", "mejor_cliente"]
    assert [m.metadata["tool_call_id"] for m in history[2:4]] == [c["id"] for c in step]
    assert json.loads(history[2].content) == {"anio": 2025, "total": "850.000.000"}  # as the model read it
    assert history[-1].content == result.answer and "tool_calls" not in history[-1].metadata


def test_windowed_sends_the_bounded_context_and_only_the_new_question(make_engine: Any) -> None:
    engine, model = make_engine(two_parallel_tools)
    first = engine.ask("c1", QUESTION, DEMO_CALLER)
    first_calls = len(model.calls)

    engine.ask("c1", "¿Y en 2024?", DEMO_CALLER)

    assert model.calls[0].messages[-1].content == f"{TODAY_LINES}\n\nNueva pregunta:\n{QUESTION}"
    second = model.calls[first_calls]
    assert second.system == system_prompt()  # the same instructions every turn: a cacheable prefix
    assert [type(m) for m in second.messages[1:]] == [HumanMessage]
    human = str(second.messages[1].content)  # the context, then the question
    assert human.startswith("Fecha de hoy: 2026-11-30\n")
    assert "Último intercambio:" in human
    assert f"Usuario: {QUESTION}" in human and f"Asistente: {first.answer}" in human
    assert human.endswith("\n\nNueva pregunta:\n¿Y en 2024?")


def test_full_history_replays_every_stored_message(make_engine: Any) -> None:
    engine, model = make_engine(two_parallel_tools, policy="full_history")
    first = engine.ask("c1", QUESTION, DEMO_CALLER)
    first_calls = len(model.calls)

    engine.ask("c1", "¿Y en 2024?", DEMO_CALLER)

    second = model.calls[first_calls]
    replay = second.messages[1:]
    assert [m.type for m in replay] == ["human", "ai", "tool", "tool", "ai", "human"]
    assert replay[0].content == QUESTION
    assert isinstance(replay[1], AIMessage)
    assert [c["name"] for c in replay[1].tool_calls] == ["ventas_anuales", "mejor_cliente"]
    assert json.loads(str(replay[2].content))["total"] == "850.000.000"  # as the ERP showed it
    assert replay[4].content == first.answer
    assert second.system == system_prompt()  # the same instructions every turn and day: a cacheable prefix
    assert replay[5].content == (  # today and the state, then the question; the replay holds the rest
        f"{TODAY_LINES}\nEstado de la conversación:\n- anio: 2025\n- cliente_actual: ACME S.A.\n"
        "- ultimas_operaciones: ventas_anuales(anio=2025); mejor_cliente(anio=2025)\n\n"
        "Nueva pregunta:\n¿Y en 2024?"
    )


# -- limits ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("function", "limits", "failure", "calls", "error", "operations"),
    [
        (forever, ToolCallingLimits(), "limit", 6, "Model call limit reached (6/6 calls)", 6),
        (forever, ToolCallingLimits(model_calls=3, recursion_limit=100), "limit", 3, "Model call limit", 3),
        (
            forever,
            ToolCallingLimits(model_calls=100, recursion_limit=10),
            "limit",
            3,
            "Recursion limit",
            None,
        ),
        (cut_at_the_cap, ToolCallingLimits(), "model_output", 1, "OutputLimitError", 0),  # no tool of it runs
        (past_the_cap, ToolCallingLimits(), "model_output", 1, "ReplyTooLongError", 0),  # nor of this one
        (huge_arguments, ToolCallingLimits(), "model_output", 1, "ReplyTooLongError", 0),
    ],
    ids=[
        "model-calls",
        "model-calls-lowered",
        "recursion",
        "cut-at-the-output-cap",
        "past-the-output-cap",
        "arguments-past-the-output-cap",
    ],
)
@pytest.mark.parametrize("driver", ["ask", "astream"])
async def test_limits_and_cut_replies_end_the_turn_unrecorded(
    make_engine: Any,
    memory_store: Any,
    driver: str,
    function: Any,
    limits: ToolCallingLimits,
    failure: str,
    calls: int,
    error: str,
    operations: int | None,
) -> None:
    engine, _ = make_engine(function, streaming=True, limits=limits)

    result = await run_turn(engine, driver, "c1", "¿Cuánto vendimos?")

    assert (result.failure, result.model_calls, result.recorded) == (failure, calls, False)
    cut = OutputLimitError(None) if failure == "model_output" else None
    assert result.answer == user_message(failure, cut)  # the same words in both modes
    assert any(line.startswith(error) for line in result.errors), result.errors
    assert operations is None or len(result.operations) == operations
    assert memory_store.get_conversation("c1") is None


async def test_a_reply_past_its_cap_stops_being_read_where_the_cap_ends(make_engine: Any) -> None:
    """The stream would break at twice the bound: the turn ends at the bound, before reading that far."""
    words = 2 * reply_max_chars(None) // len("palabra ")
    engine, _ = make_engine(lambda _m, _i: "palabra " * (words + 10), break_after=words)

    result = await run_turn(engine, "astream", "c1", "¿Cuánto vendimos?")

    assert result.failure == "model_output"
    assert result.errors[0].startswith("ReplyTooLongError: The model's reply passed 65,536 characters")


def test_a_turn_after_a_limit_replays_cleanly(make_engine: Any) -> None:
    engine, model = make_engine(forever, policy="full_history", limits=ToolCallingLimits(recursion_limit=10))
    engine.ask("c1", "uno", DEMO_CALLER)
    model.function = lambda messages, info: "Listo."

    result = engine.ask("c1", "dos", DEMO_CALLER)

    replay = model.calls[-1].messages[1:]
    # The limited turn left nothing behind, so nothing half-finished is replayed (and no state was stored).
    assert [type(m) for m in replay] == [HumanMessage]
    assert replay[0].content == f"{TODAY_LINES}\n\nNueva pregunta:\ndos"
    assert result.answer == "Listo."


# -- tool errors -----------------------------------------------------------------------------------------


def test_invalid_arguments_go_back_to_the_model_naming_the_parameter_and_it_recovers(
    make_engine: Any,
) -> None:
    def fix_after_error(messages: list[BaseMessage], info: CallInfo) -> AIMessage | str:
        results = info.tool_results
        if not results:
            return ask_tools(call("ventas_anuales", anio="dos mil veinticinco"))
        if results[-1].status == "error":
            return ask_tools(call("ventas_anuales", anio=2025))
        return "Vendimos 850000000."

    engine, model = make_engine(fix_after_error)

    result = engine.ask("c1", "¿Cuánto vendimos en 2025?", DEMO_CALLER)

    assert (result.answer, result.model_calls) == ("Vendimos 850000000.", 3)
    assert [op.ok for op in result.operations] == [False, True]
    assert result.plan_valid is False  # corrected, but an invalid request was made
    assert result.operations[0].parameters == {"anio": "dos mil veinticinco"}
    error = result.operations[0].error or ""
    assert error.startswith("Parámetros inválidos para 'ventas_anuales': anio:")
    assert (
        model.calls[1].tool_results[0].status == "error" and model.calls[1].tool_results[0].content == error
    )
    assert result.errors == [f"Tool 'ventas_anuales' failed: {error}"]


def test_an_unknown_customer_is_a_tool_error_the_model_sees(make_engine: Any) -> None:
    def unknown_customer(messages: list[BaseMessage], info: CallInfo) -> AIMessage | str:
        if not info.tool_results:
            return ask_tools(call("compras_cliente", cliente="Zeta", anio=2025))
        return f"No encontré al cliente: {info.tool_results[0].content}"

    engine, _ = make_engine(unknown_customer)

    result = engine.ask("c1", "¿Cuánto compró Zeta?", DEMO_CALLER)

    assert "Ningún cliente al que usted tenga acceso coincide con 'Zeta'" in (
        result.operations[0].error or ""
    )
    assert "ACME S.A." in result.answer
    assert result.errors == [f"Tool 'compras_cliente' failed: {result.operations[0].error}"]


def test_a_hallucinated_tool_name_is_answered_with_an_error_and_counted(make_engine: Any) -> None:
    engine, model = make_engine(then_answer(ask_tools(call("ventas_totales", anio=2025)), "No tengo esa."))

    result = engine.ask("c1", "¿Cuánto vendimos?", DEMO_CALLER)

    assert result.answer == "No tengo esa."
    assert result.operations[0].function == "ventas_totales"
    assert "La operación 'ventas_totales' no existe" in (result.operations[0].error or "")
    assert result.errors and result.errors[0].startswith("Unknown tool 'ventas_totales'")
    assert model.calls[1].tool_results[0].status == "error"
    assert (result.failure, result.plan_valid) == ("invalid_plan", False)


def test_a_tool_the_caller_may_not_run_is_answered_with_the_erps_no_permission(demo_engine: Any) -> None:
    ana = Caller(user_id="ana", roles=frozenset({"ventas"}))
    model = FunctionChatModel(
        then_answer(ask_tools(call("ventas_por_categoria", anio=2025)), "No tiene permiso para eso.")
    )
    engine = demo_engine(model)

    result = engine.ask("c1", "¿Cómo se repartieron las ventas de 2025 por categoría?", ana)

    assert "ventas_por_categoria" not in model.calls[0].tool_names  # never offered to her
    told = model.calls[1].tool_results[0]
    assert told.status == "error"
    assert told.text == "No tiene permiso para la operación 'ventas_por_categoria'; no se ejecutó."
    assert [(op.function, op.error_kind) for op in result.operations] == [("ventas_por_categoria", "invalid")]
    assert (result.answer, result.failure) == ("No tiene permiso para eso.", "invalid_plan")


def test_an_unexpected_tool_exception_is_an_operation_error_whose_text_never_reaches_the_model(
    make_engine: Any, memory_store: Any
) -> None:
    def crash(_session: Any, params: YearParams) -> YearTotal:
        raise RuntimeError("database is locked")

    registry = OperationRegistry(
        [Operation("ventas_anuales", "Total vendido.", YearParams, YearTotal, crash)]
    )

    def report(messages: list[BaseMessage], info: CallInfo) -> AIMessage | str:
        if not info.tool_results:
            return ask_tools(call("ventas_anuales", anio=2025))
        return f"No pude consultar: {info.tool_results[0].content}"

    engine, model = make_engine(report, registry=registry)

    result = engine.ask("c1", "¿Cuánto vendimos en 2025?", DEMO_CALLER)

    [operation] = result.operations
    error = operation.error or ""
    assert model.calls[1].tool_results[0].status == "error"
    assert error.startswith("error interno (ref ") and operation.error_kind == "internal"
    assert "database is locked" not in str(model.calls[1].messages)  # the exception stays in the log
    assert result.answer == f"No pude consultar: {error}"
    assert result.failure == "operation_error" and result.recorded  # the model explained it
    assert operation.duration_ms > 0
    assert result.errors == [f"Tool 'ventas_anuales' failed: {error}"]
    assert [m.role for m in memory_store.history("c1")] == ["user", "assistant", "tool", "assistant"]


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

    assert (result.recorded, result.failure) == (False, "storage")
    assert result.errors == ["Turn not recorded: disk full"]
    assert result.answer == f"{STRUCTURED['respuesta']}\n\n{NOT_RECORDED_NOTE}"  # the answer is still shown
    assert result.state == {"tema": "clientes"}  # the stored state: the turn's update was not merged


async def test_another_users_conversation_is_refused_before_the_first_event(
    make_engine: Any, memory_store: Any
) -> None:
    engine, model = make_engine(two_parallel_tools, streaming=True)
    memory_store.ensure_conversation("c1", user_id="otro")
    events = engine.astream("c1", QUESTION, DEMO_CALLER)

    with pytest.raises(ConversationAccessDenied):
        await anext(events)
    with pytest.raises(ConversationAccessDenied):
        await engine.aask("c1", QUESTION, DEMO_CALLER)
    assert model.call_count == 0


async def test_an_invalid_question_ends_in_one_event(make_engine: Any) -> None:
    engine, _ = make_engine(two_parallel_tools, streaming=True)

    events, result = await streamed(engine, "c1", "   ")

    assert [type(event) for event in events] == [TurnDone]
    assert (result.failure, result.model_calls, result.plan_valid) == ("input", 0, None)


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


@pytest.mark.parametrize("strategy", ["tool", "auto"])  # auto: ToolStrategy without a provider profile
def test_structured_tool_strategy_stores_memories_and_state(
    make_engine: Any, memory_store: Any, strategy: str
) -> None:
    engine, model = make_engine(answer_with_tool, structured=True, structured_strategy=strategy)

    result = engine.ask("c1", "¿Cuánto vendimos en 2025?", DEMO_CALLER)

    assert "Answer" in model.calls[0].tool_names and model.calls[0].tool_choice == "any"
    assert "formato estructurado" in model.calls[0].system
    assert result.answer == STRUCTURED["respuesta"]
    assert result.memories == ["El usuario consulta ventas de 2025."]
    assert result.state == {**STRUCTURED["estado"], "ultimas_operaciones": "ventas_anuales(anio=2025)"}
    assert (result.model_calls, result.errors) == (2, [])
    assert [op.function for op in result.operations] == ["ventas_anuales"]
    assert memory_store.get_state("c1") == result.state
    assert [m.content for m in memory_store.memories("c1")] == ["El usuario consulta ventas de 2025."]
    history = memory_store.history("c1")
    assert [m.role for m in history] == ["user", "assistant", "tool", "assistant"]
    assert history[-1].content == STRUCTURED["respuesta"] and "tool_calls" not in history[-1].metadata


def test_structured_provider_strategy_parses_the_json_reply(make_engine: Any) -> None:
    answer = json.dumps(STRUCTURED, ensure_ascii=False)
    engine, model = make_engine(
        then_answer(ask_tools(call("ventas_anuales", anio=2025)), answer),
        structured=True,
        structured_strategy="provider",
    )

    result = engine.ask("c1", "¿Cuánto vendimos en 2025?", DEMO_CALLER)

    assert model.calls[0].response_format["type"] == "json_schema"
    assert "respuesta" in json.dumps(model.calls[0].response_format)
    assert "Answer" not in model.calls[0].tool_names
    assert result.answer == STRUCTURED["respuesta"]
    assert result.state == {**STRUCTURED["estado"], "ultimas_operaciones": "ventas_anuales(anio=2025)"}


@pytest.mark.parametrize(
    ("reply", "strategy", "error"),
    [
        ("no es JSON", "provider", "ModelOutputError: No usable structured answer"),
        ("Hola.", "tool", "ModelOutputError: The model ended the turn without a structured answer."),
        ("", None, "ModelOutputError: The model's final answer is empty."),
    ],
)
def test_a_reply_without_a_usable_answer_is_a_model_output_failure(
    make_engine: Any, memory_store: Any, reply: str, strategy: str | None, error: str
) -> None:
    options = {"structured": True, "structured_strategy": strategy} if strategy else {}
    engine, _ = make_engine(lambda messages, info: reply, **options)

    result = engine.ask("c1", "hola", DEMO_CALLER)

    assert (result.failure, result.answer) == ("model_output", user_message("model_output"))
    assert result.errors and result.errors[0].startswith(error)
    assert not result.recorded and memory_store.history("c1") == []


# -- grounding -----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("grounding", ["refuse", "flag"])
def test_a_prose_answer_with_an_invented_figure_is_refused_or_flagged(
    demo_engine: Any, memory_store: Any, grounding: str
) -> None:
    model = build_model("offline", faults="no_tool_calls")  # answers with a figure it made up
    engine = demo_engine(model, grounding=grounding)

    result = engine.ask("c1", "¿Cuánto vendimos en 2025?", DEMO_CALLER)

    assert result.ungrounded_figures == ["987.654.321"] and "987.654.321" in result.answer
    if grounding == "refuse":
        assert result.failure == "ungrounded" and "¿Puede intentarlo de nuevo" in result.answer
        # recorded as the user read it: the refusal, never the invented figure as an answer
        assert result.recorded and memory_store.history("c1")[-1].content == result.answer
    else:
        assert result.failure is None and result.recorded


def test_an_answer_from_the_tools_results_is_grounded(demo_engine: Any) -> None:
    engine = demo_engine(build_model("offline"))
    result = engine.ask("c1", "¿Cuánto vendimos en 2025?", DEMO_CALLER)
    assert result.failure is None and result.ungrounded_figures == [] and result.recorded


# -- events ------------------------------------------------------------------------------------------------


async def test_astream_yields_operations_then_the_answer_in_deltas_then_the_result(
    make_engine: Any, memory_store: Any
) -> None:
    engine, _ = make_engine(two_parallel_tools, streaming=True)

    events, result = await streamed(engine, "c1", QUESTION)

    kinds = [type(event) for event in events]
    assert kinds == [OperationDone, OperationDone, *[AnswerDelta] * (len(events) - 3), TurnDone]
    # Parallel tool calls finish in any order: the events follow completion, the result the calls' order.
    assert by_id(event.operation for event in events[:2]) == by_id(result.operations)
    assert len(deltas(events)) >= 2 and "".join(deltas(events)) == result.answer
    assert result.recorded and memory_store.history("c1")[-1].content == result.answer
    assert result.first_answer_ms is not None and 0 < result.first_answer_ms <= result.total_ms
    assert engine.ask("c2", QUESTION, DEMO_CALLER).first_answer_ms is None  # no reader, no time measured
    assert (await engine.aask("c3", QUESTION, DEMO_CALLER)).first_answer_ms is None


async def test_replayed_history_yields_no_operation_events(make_engine: Any) -> None:
    engine, _ = make_engine(two_parallel_tools, streaming=True, policy="full_history")
    await streamed(engine, "c1", QUESTION)

    events, result = await streamed(engine, "c1", QUESTION)  # the first turn's tool results are replayed

    operations = [event.operation for event in events if isinstance(event, OperationDone)]
    assert by_id(operations) == by_id(result.operations) and len(operations) == 2


async def test_text_written_before_tool_calls_is_streamed_and_the_result_supersedes_it(
    make_engine: Any, memory_store: Any
) -> None:
    preamble = ask_tools(call("ventas_anuales", anio=2025), text="Voy a consultar. ")
    engine, _ = make_engine(then_answer(preamble, "Vendimos 850000000."), streaming=True)

    events, result = await streamed(engine, "c1", "¿Cuánto vendimos en 2025?")

    assert "".join(deltas(events)) == "Voy a consultar.\n\nVendimos 850000000."
    assert result.answer == "Vendimos 850000000."
    assert result.first_answer_call == FirstAnswerCall(
        call=1, prefix=""
    )  # the kept text's step, not the preamble's
    assert memory_store.history("c1")[-1].content == "Vendimos 850000000."


async def test_the_offline_model_streams_its_answer_in_several_deltas(demo_engine: Any) -> None:
    engine = demo_engine(OfflineSalesModel(latency_profile="gpu-8b"))

    events, result = await streamed(engine, "c1", "¿Cuánto vendimos en 2025?")

    assert len(deltas(events)) >= 2 and "".join(deltas(events)) == result.answer
    assert result.first_answer_call is not None and result.first_answer_call.call == result.model_calls - 1


@pytest.mark.parametrize("strategy", ["provider", "tool"])
async def test_a_structured_answer_streams_only_its_respuesta(
    demo_engine: Any, strategy: Literal["provider", "tool"]
) -> None:
    engine = demo_engine(OfflineSalesModel(), structured=True, structured_strategy=strategy)

    events, result = await streamed(engine, "c1", "¿Cuánto vendimos en 2025?")

    shown = "".join(deltas(events))
    assert result.failure is None and result.state["tema"] == "ventas"  # the structured answer's estado
    assert shown == result.answer and "memoria" not in shown


# -- streams that end early ---------------------------------------------------------------------------


async def test_a_stream_that_breaks_midway_through_the_answer_records_nothing(
    make_engine: Any, memory_store: Any
) -> None:
    engine, _ = make_engine(two_parallel_tools, break_after=3)

    events, result = await streamed(engine, "c1", QUESTION)

    assert "".join(deltas(events)) == "En 2025 vendimos"  # the user saw part of the answer…
    assert (result.failure, result.answer) == ("provider", user_message("provider"))  # …which this replaces
    assert not result.recorded and memory_store.get_conversation("c1") is None
    assert len(result.operations) == 2 and result.model_calls == 2


@pytest.mark.parametrize("driver", ["ask", "astream"])
async def test_a_dropped_connection_of_the_offline_model_ends_the_turn_with_or_without_a_reader(
    demo_engine: Any, memory_store: Any, driver: str
) -> None:
    engine = demo_engine(OfflineSalesModel(faults="stream_break"))

    result = await run_turn(engine, driver, "c1", "¿Cuánto vendimos en 2025?")

    assert result.failure == "provider" and not result.recorded
    assert result.model_calls == 1 and result.input_tokens > 0
    assert memory_store.get_conversation("c1") is None


async def test_an_answer_cut_by_a_dropped_connection_has_no_answering_call(demo_engine: Any) -> None:
    faults = FaultConfig(mode="stream_break", rate=0.5, seed=0)
    assert not faults.strikes(0) and faults.strikes(1)  # the tool step completes; the answer breaks
    model = OfflineSalesModel(latency_profile="gpu-8b", faults=faults)
    engine = demo_engine(model)

    events, result = await streamed(engine, "c1", "¿Cuánto vendimos en 2025?")

    assert deltas(events)
    assert result.failure == "provider" and not result.recorded
    assert result.first_answer_ms is not None  # the reader did see text…
    assert result.first_answer_call is None  # …but no answer was written (ask would see none)


async def test_a_consumer_that_stops_reading_before_the_result_records_nothing(
    make_engine: Any, memory_store: Any
) -> None:
    engine, _ = make_engine(two_parallel_tools, streaming=True)

    async with aclosing(engine.astream("c1", QUESTION, DEMO_CALLER)) as events:
        async for event in events:
            if isinstance(event, AnswerDelta):
                break

    assert memory_store.get_conversation("c1") is None


# -- threads and the event loop ----------------------------------------------------------------------------


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
            engine.ask(conversation_id, f"{conversation_id} turno {t} {year}", DEMO_CALLER) for t in range(3)
        ]

    with ThreadPoolExecutor(max_workers=len(years)) as pool:
        results = dict(zip(years, pool.map(converse, years), strict=True))

    assert len(model.calls) == 2 * 3 * len(years)
    for conversation_id, turns in results.items():
        year = years[conversation_id]
        questions = [f"{conversation_id} turno {turn} {year}" for turn in range(3)]
        for question, result in zip(questions, turns, strict=True):
            assert result.answer == f"{question}: {for_model(YEAR_TOTALS[year])}"
            assert result.model_calls == 2 and result.errors == [] and result.recorded
            assert [op.parameters for op in result.operations] == [{"anio": year}]
        history = memory_store.history(conversation_id)
        assert [m.content for m in history if m.role == "user"] == questions
        assert [m.role for m in history] == ["user", "assistant", "tool", "assistant"] * 3


TENANT: contextvars.ContextVar[str] = contextvars.ContextVar("tenant", default="none")


async def test_ask_inside_a_running_event_loop_runs_the_turn_elsewhere_with_the_callers_context(
    make_engine: Any,
) -> None:
    engine, _ = make_engine(lambda messages, info: f"Inquilino {TENANT.get()}.")
    TENANT.set("acme")

    results = [
        engine.ask("c1", "hola", DEMO_CALLER),
        await asyncio.to_thread(engine.ask, "c1", "hola", DEMO_CALLER),
    ]

    assert [result.answer for result in results] == ["Inquilino acme.", "Inquilino acme."]


async def test_tools_and_storage_run_outside_the_event_loop_thread(
    make_engine: Any, memory_store: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    threads: dict[str, int] = {}

    def sales(_session: Any, params: YearParams) -> YearTotal:
        threads["tool"] = threading.get_ident()
        return YearTotal(anio=params.anio, total=YEAR_TOTALS[params.anio])

    record_turn = memory_store.record_turn

    def recording(*args: Any, **kwargs: Any) -> Any:
        threads["record_turn"] = threading.get_ident()
        return record_turn(*args, **kwargs)

    monkeypatch.setattr(memory_store, "record_turn", recording)
    registry = OperationRegistry(
        [Operation("ventas_anuales", "Total vendido.", YearParams, YearTotal, sales)]
    )
    engine, _ = make_engine(
        then_answer(ask_tools(call("ventas_anuales", anio=2025))), streaming=True, registry=registry
    )

    result = await engine.aask("c1", "¿Cuánto vendimos en 2025?", DEMO_CALLER)

    assert result.recorded and result.operations[0].ok
    loop_thread = threading.get_ident()
    assert threads["tool"] != loop_thread and threads["record_turn"] != loop_thread


async def test_a_turn_planned_before_another_turn_was_recorded_is_flagged_stale(
    make_engine: Any, memory_store: Any
) -> None:
    engine, _ = make_engine(two_parallel_tools, streaming=True)
    engine.ask("c1", QUESTION, DEMO_CALLER)  # the conversation exists

    async with aclosing(engine.astream("c1", QUESTION, DEMO_CALLER)) as events:
        first = await anext(events)  # this turn read its context; now another turn lands first
        assert isinstance(first, OperationDone)
        other = await asyncio.to_thread(engine.ask, "c1", QUESTION, DEMO_CALLER)
        rest = [event async for event in events]

    late = rest[-1].result
    assert not other.stale_state
    assert late.recorded and late.stale_state
    contents = [message.content for message in memory_store.history("c1")]
    assert contents.count(QUESTION) == 3  # nothing lost: both concurrent turns recorded, whole


# -- callbacks and logging -----------------------------------------------------------------------------------


@pytest.mark.parametrize("driver", ["ask", "aask", "astream"])
async def test_callbacks_see_exactly_the_turns_model_calls_under_one_turn_run(
    demo_engine: Any, driver: str
) -> None:
    engine = demo_engine(OfflineSalesModel())
    tree = RunRecorder()
    config: Any = {"callbacks": [tree], "tags": ["erp-web"], "metadata": {"tenant": "acme"}}
    question = "¿Cuánto compró nuestro mejor cliente en 2025?"  # two dependent steps: three model calls

    result = await run_turn(engine, driver, "c1", question, config=config)

    assert result.model_calls == 3 and len(tree.models) == 3
    [root] = tree.roots()
    assert root.name == "toolcalling turn" and "erp-web" in root.tags and root.metadata["tenant"] == "acme"
    assert {tree.root_of(model.parent) for model in tree.models} == {root.run_id}
    agent_runs = [chain.name for chain in tree.chains if chain.parent == root.run_id]
    assert agent_runs == ["toolcalling"]  # the compiled agent graph, whose descendants are the calls
    assert root.outputs["answer"] == result.answer and root.outputs["failure"] is None


async def test_run_name_names_the_turn_run(make_engine: Any) -> None:
    engine, _ = make_engine(two_parallel_tools, streaming=True)
    tree = RunRecorder()

    await engine.aask("c1", QUESTION, DEMO_CALLER, config={"callbacks": [tree], "run_name": "pedido 42"})

    assert [root.name for root in tree.roots()] == ["pedido 42"]


@pytest.mark.parametrize(("driver", "break_after"), [("ask", None), ("astream", None), ("astream", 3)])
async def test_every_finished_turn_is_logged_once_a_failed_one_as_a_warning(
    make_engine: Any, caplog: pytest.LogCaptureFixture, driver: str, break_after: int | None
) -> None:
    engine, _ = make_engine(two_parallel_tools, streaming=True, break_after=break_after)
    ana = Caller(user_id="ana", roles=frozenset({"gerente"}), name="Ana")
    caplog.set_level(logging.INFO, logger="toolcalling_mode")

    await run_turn(engine, driver, "c1", QUESTION, ana)

    [record] = [r for r in caplog.records if r.name == "toolcalling_mode"]
    fields = getattr(record, "erp_ai")  # noqa: B009 (set through ``extra``)
    assert fields["conversation_id"] == "c1" and fields["user_id"] == "ana"
    assert fields["mode"] == "toolcalling" and fields["model_calls"] == 2
    if break_after is None:
        assert record.levelno == logging.INFO
        assert fields["failure"] is None and fields["recorded"] is True
    else:
        assert record.levelno == logging.WARNING
        assert fields["failure"] == "provider" and fields["recorded"] is False
    assert QUESTION not in record.getMessage()  # question and answer texts are never logged


# -- what a streaming reader never reads -----------------------------------------------------------------


def cut_text_call(messages: list[BaseMessage], info: CallInfo) -> AIMessage:
    """A tool call written as text, cut at the output cap while the model wrote it."""
    return AIMessage(
        content='{"name": "ventas_anuales", "arguments": {"anio": 20',
        response_metadata={"finish_reason": "length"},
    )


@pytest.mark.parametrize(
    "function",
    [
        cut_text_call,
        lambda _m, _i: '{"name": "clima de mañana", "arguments": {"ciudad": "Asunción"}}',  # no tool's name
        lambda _m, _i: '[{"products": [{"name": "Taladro", "total": 1}]}]',  # JSON alone
    ],
    ids=["cut-call", "call-to-no-tool", "json-alone"],
)
async def test_held_back_call_text_or_json_never_reaches_a_reader(make_engine: Any, function: Any) -> None:
    engine, _ = make_engine(function, streaming=True)

    events, result = await streamed(engine, "c1", "¿Cómo va a estar el clima?")

    assert deltas(events) == []  # nothing held back was flushed: the failure's message is all the reader gets
    assert result.failure == "model_output" and not result.recorded


def text_calls(count: int, *, cut: bool = False) -> ModelFunction:
    """A reply of ``count`` ``ventas_anuales`` calls written as text (``cut``: stopped at the output cap)."""
    written = json.dumps([{"name": "ventas_anuales", "arguments": {"anio": 2000 + n}} for n in range(count)])
    metadata = {"finish_reason": "length"} if cut else {}
    return then_answer(AIMessage(content=written, response_metadata=metadata), "Listo.")


@pytest.mark.parametrize(
    ("function", "failure", "recovered"),
    [(text_calls(2), None, 2), (text_calls(9), "limit", 0), (text_calls(1, cut=True), "model_output", 0)],
    ids=["two-that-run", "past-the-operation-cap", "cut-at-the-output-cap"],
)
def test_a_recovered_call_counts_once_it_is_sure_to_run(
    make_engine: Any, function: Any, failure: str | None, recovered: int
) -> None:
    engine, _ = make_engine(function)

    result = engine.ask("c1", "¿Cuánto vendimos?", DEMO_CALLER)

    assert (result.failure, result.recovered_tool_calls) == (failure, recovered)
    assert len(result.operations) == recovered
