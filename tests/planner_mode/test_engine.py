"""PlannerEngine over a toy registry (scripted fake model) and the demo ERP (offline model).

Pinned here: the flow, the recording policy and the two-call bound; the failure contract; the three entry
points (``aask`` and ``astream`` give ``ask``'s result on the default suite); the events of a streamed turn;
a stream that fails or is abandoned midway records nothing; callbacks see exactly the turn's model calls
under one parent run; one log record per finished turn; which call wrote the answer; grounded figures; the
prompt-cache hits of both calls.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Literal, get_args
from uuid import UUID

import httpx
import pytest
from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult, LLMResult
from langchain_core.runnables import RunnableConfig
from sqlalchemy import func, select

from benchmarks.scenario import Scenario, default_scenarios_dir, load_file
from benchmarks.serving import ServerThread
from benchmarks.stand_ins.faults import FaultConfig, FaultMode
from benchmarks.stand_ins.offline import OfflineSalesModel
from planner_mode import AIClient, HttpAIClient, InProcessAIClient, PlannerAI, PlannerEngine, PlannerLimits
from planner_mode.bookkeeping import ANSWER_PREFIX, DIRECT_ANSWER_PREFIX
from planner_mode.engine import NOT_RECORDED_NOTE
from planner_mode.plan import Answer, Plan
from planner_mode.server import create_app
from planner_mode.wire import AnalyzeResponse, CallUsage, RespondResponse
from shared.engine import AssistantEngine
from shared.erp.database import Erp
from shared.erp.users import caller_for
from shared.errors import ConversationAccessDenied, StorageError
from shared.events import AnswerDelta, OperationDone, PlanReady, TurnDone, TurnEvent
from shared.failures import is_recorded, user_message
from shared.llm import build_chat_model
from shared.llm.usage import UsageTracker
from shared.memory.store import MemoryStore
from shared.memory.tables import Conversation
from shared.operations import sales_registry
from shared.operations.registry import OperationRegistry
from shared.security import DEMO_CALLER, Caller
from shared.turn import FirstAnswerCall, TurnResult
from tests.fakes import CallInfo, FunctionChatModel, ModelFunction
from tests.planner_mode.planner_fakes import is_plan_request, results_of, scripted, text_model

Entry = Literal["ask", "aask", "astream"]
ENTRIES: tuple[Entry, ...] = ("ask", "aask", "astream")

TIMINGS = {"model_ms", "harness_ms", "total_ms", "first_answer_ms"}
"""What differs between two runs of one turn: measured times (and ``first_answer_ms``, ``astream``'s own)."""

TWO_OPERATIONS = "¿Cuánto vendimos en 2025 y cuál fue nuestro mejor cliente?"


def comparable(result: TurnResult) -> dict[str, Any]:
    """A turn's result without its timings: what must not depend on the entry point."""
    data = result.model_dump(exclude=TIMINGS)
    for operation in data["operations"]:
        del operation["duration_ms"]
    return data


async def streamed(
    engine: PlannerEngine, conversation_id: str, message: str, caller: Caller = DEMO_CALLER, **options: Any
) -> tuple[list[TurnEvent], TurnResult]:
    """Every event of a streamed turn, which ends in exactly one ``TurnDone``, and that turn's result."""
    events = [event async for event in engine.astream(conversation_id, message, caller, **options)]
    assert [type(event) for event in events].count(TurnDone) == 1
    assert isinstance(events[-1], TurnDone)
    return events, events[-1].result


async def run_turn(
    engine: PlannerEngine,
    entry: Entry,
    conversation_id: str,
    message: str,
    caller: Caller = DEMO_CALLER,
    **options: Any,
) -> TurnResult:
    if entry == "ask":
        return engine.ask(conversation_id, message, caller, **options)
    if entry == "aask":
        return await engine.aask(conversation_id, message, caller, **options)
    _events, result = await streamed(engine, conversation_id, message, caller, **options)
    return result


def deltas(events: Sequence[TurnEvent]) -> list[str]:
    return [event.text for event in events if isinstance(event, AnswerDelta)]


def offline_engine(
    registry: OperationRegistry,
    erp: Erp,
    store: MemoryStore,
    answer_model: BaseChatModel | None = None,
    **options: Any,
) -> PlannerEngine:
    return PlannerEngine(
        registry, erp, store, PlannerAI(build_chat_model("offline", **options), answer_model)
    )


TWO_OPS = {
    "operaciones": [
        {"funcion": "ventas_anuales", "parametros": {"anio": 2025}},
        {"funcion": "mejor_cliente", "parametros": {"anio": 2025}},
    ],
    "pregunta": "¿Cuánto vendimos en 2025 y cuál fue nuestro mejor cliente?",
}
DEPENDENT = {
    "operaciones": [
        {"id": "op1", "funcion": "mejor_cliente", "parametros": {"anio": 2025}},
        {
            "id": "op2",
            "funcion": "compras_cliente",
            "parametros": {"cliente": {"$ref": "op1.cliente"}, "anio": 2025},
        },
    ]
}


def answer_from(results: list[dict[str, Any]]) -> str:
    """Call 2 of the fake: echo totals and errors; remember the best customer."""
    parts = [
        f"{r['funcion']}={r['resultado'].get('total')}" if "resultado" in r else f"ERROR {r['error']}"
        for r in results
    ]
    return json.dumps(
        {
            "respuesta": "; ".join(parts) or "Nada que consultar.",
            "memoria": [{"contenido": "Hablamos de ventas de 2025.", "importancia": 0.8}],
            "estado": {"tema": "ventas", "anio": 2025, "cliente_actual": "Empresa ABC"},
        }
    )


def make_engine(
    reply: ModelFunction, registry: OperationRegistry, erp: Erp, store: MemoryStore, **limits: Any
) -> tuple[PlannerEngine, FunctionChatModel]:
    model = text_model(reply)
    engine = PlannerEngine(registry, erp, store, InProcessAIClient(PlannerAI(model)), PlannerLimits(**limits))
    return engine, model


def snapshot_store(store: MemoryStore, conversation_id: str) -> tuple[Any, ...]:
    return (
        [(m.role, m.content, m.metadata) for m in store.history(conversation_id)],
        store.get_state(conversation_id),
        store.memories(conversation_id),
    )


def test_engine_is_an_assistant_engine(
    toy_registry: OperationRegistry, toy_erp: Erp, memory_store: MemoryStore
) -> None:
    engine, _ = make_engine(scripted(TWO_OPS), toy_registry, toy_erp, memory_store)
    assert isinstance(engine, AssistantEngine)
    assert engine.mode == "planner"


def test_two_operations_one_plan_two_calls_and_an_atomic_record(
    toy_registry: OperationRegistry, toy_erp: Erp, memory_store: MemoryStore
) -> None:
    engine, model = make_engine(scripted(TWO_OPS, answer_from), toy_registry, toy_erp, memory_store)
    result = engine.ask("c1", "¿Cuánto vendimos en 2025 y cuál fue nuestro mejor cliente?", DEMO_CALLER)

    assert model.call_count == result.model_calls == 2
    assert result.answer == "ventas_anuales=850000000; mejor_cliente=120000000"
    assert [op.function for op in result.operations] == ["ventas_anuales", "mejor_cliente"]
    assert all(op.ok for op in result.operations)
    assert result.plan is not None and result.plan["operaciones"][0]["funcion"] == "ventas_anuales"
    assert result.errors == [] and result.recorded
    # The model's estado, and whatever the ERP derives itself (shared.state) beside it.
    assert result.state.items() >= {"tema": "ventas", "anio": 2025, "cliente_actual": "Empresa ABC"}.items()
    assert result.memories == ["Hablamos de ventas de 2025."]
    assert (result.input_tokens, result.output_tokens) == (200, 20)
    assert result.total_ms == pytest.approx(result.model_ms + result.harness_ms)

    user, assistant = memory_store.history("c1")
    assert (user.role, user.content) == ("user", "¿Cuánto vendimos en 2025 y cuál fue nuestro mejor cliente?")
    assert (assistant.role, assistant.content) == ("assistant", result.answer)
    assert assistant.is_final_answer
    assert assistant.metadata["plan"] == result.plan
    assert [op["result"]["total"] for op in assistant.metadata["operations"]] == [850_000_000, 120_000_000]
    assert memory_store.get_state("c1")["cliente_actual"] == "Empresa ABC"


def test_the_next_turn_sees_the_stored_context(
    toy_registry: OperationRegistry, toy_erp: Erp, memory_store: MemoryStore
) -> None:
    engine, model = make_engine(scripted(TWO_OPS, answer_from), toy_registry, toy_erp, memory_store)
    engine.ask("c1", "¿Cuál fue mi mejor cliente?", DEMO_CALLER)
    engine.ask("c1", "¿Y cuánto compró?", DEMO_CALLER)
    human = str(model.prompts[2][1].content)  # call 1 of turn 2
    assert "- cliente_actual: Empresa ABC" in human
    assert "Usuario: ¿Cuál fue mi mejor cliente?" in human
    assert "- Hablamos de ventas de 2025." in human
    assert human.endswith("Nueva pregunta:\n¿Y cuánto compró?")


def test_dependent_plan_with_ref_still_costs_two_calls(
    toy_registry: OperationRegistry, toy_erp: Erp, memory_store: MemoryStore
) -> None:
    engine, model = make_engine(scripted(DEPENDENT, answer_from), toy_registry, toy_erp, memory_store)
    result = engine.ask("c1", "¿Cuánto compró nuestro mejor cliente de 2025?", DEMO_CALLER)
    assert model.call_count == result.model_calls == 2
    assert result.operations[1].parameters == {"cliente": "Empresa ABC", "anio": 2025}
    assert result.answer == "mejor_cliente=120000000; compras_cliente=120000000"


def test_small_talk_costs_one_call_and_keeps_the_state(
    toy_registry: OperationRegistry, toy_erp: Erp, memory_store: MemoryStore
) -> None:
    memory_store.ensure_conversation("c1", user_id="gerente")  # the demo caller owns it
    memory_store.merge_state("c1", {"anio": 2024})
    engine, model = make_engine(
        scripted({"operaciones": [], "respuesta_directa": "¡Hola! ¿En qué puedo ayudarle?"}),
        toy_registry,
        toy_erp,
        memory_store,
    )
    result = engine.ask("c1", "Hola", DEMO_CALLER)
    assert model.call_count == result.model_calls == 1
    assert result.answer == "¡Hola! ¿En qué puedo ayudarle?"
    assert result.operations == [] and result.recorded
    assert result.state == {"anio": 2024}
    assert [m.content for m in memory_store.history("c1")] == ["Hola", "¡Hola! ¿En qué puedo ayudarle?"]


def test_a_plan_without_operations_or_direct_answer_still_gets_an_answer(
    toy_registry: OperationRegistry, toy_erp: Erp, memory_store: MemoryStore
) -> None:
    engine, model = make_engine(
        scripted({"operaciones": []}, answer_from), toy_registry, toy_erp, memory_store
    )
    result = engine.ask("c1", "¿Qué tiempo hace?", DEMO_CALLER)
    assert model.call_count == 2
    assert result.answer == "Nada que consultar."


@pytest.mark.parametrize(
    ("plan", "expected_error"),
    [
        ({"operaciones": [{"funcion": "consultar_ventas_totales", "parametros": {}}]}, "no existe"),
        ({"operaciones": [{"funcion": "ventas_anuales", "parametros": {"anio": "dos mil"}}]}, "anio"),
        (
            {
                "operaciones": [
                    {
                        "funcion": "compras_cliente",
                        "parametros": {"cliente": {"$ref": "op7.cliente"}, "anio": 1},
                    }
                ]
            },
            "dangling $ref",
        ),
        (
            {
                "operaciones": [
                    {
                        "id": "a",
                        "funcion": "compras_cliente",
                        "parametros": {"cliente": {"$ref": "b.cliente"}, "anio": 1},
                    },
                    {
                        "id": "b",
                        "funcion": "compras_cliente",
                        "parametros": {"cliente": {"$ref": "a.cliente"}, "anio": 1},
                    },
                ]
            },
            "cycle",
        ),
        ({"operaciones": [{"funcion": "ventas_anuales", "parametros": {"anio": 2025}}] * 3}, "at most 2"),
    ],
    ids=["unknown", "wrong-types", "dangling-ref", "cycle", "too-many"],
)
def test_invalid_plans_run_nothing_and_reach_call_two_as_errors(
    toy: Any,
    toy_registry: OperationRegistry,
    toy_erp: Erp,
    memory_store: MemoryStore,
    plan: dict[str, Any],
    expected_error: str,
) -> None:
    engine, model = make_engine(
        scripted(plan, answer_from), toy_registry, toy_erp, memory_store, max_operations=2
    )
    result = engine.ask("c1", "pregunta", DEMO_CALLER)
    assert toy.log == []  # nothing executed
    assert model.call_count == result.model_calls == 2
    assert result.answer.startswith("ERROR") and expected_error in result.answer
    assert any(expected_error in error for error in result.errors)
    assert result.recorded and all(op.error for op in result.operations)
    assert memory_store.history("c1")[-1].metadata["errors"] == result.errors


def test_operation_errors_reach_call_two(
    toy_registry: OperationRegistry, toy_erp: Erp, memory_store: MemoryStore
) -> None:
    plan = {"operaciones": [{"funcion": "compras_cliente", "parametros": {"cliente": "Nadie", "anio": 2025}}]}
    engine, model = make_engine(scripted(plan, answer_from), toy_registry, toy_erp, memory_store)
    result = engine.ask("c1", "¿Cuánto compró Nadie?", DEMO_CALLER)
    assert model.call_count == 2
    assert "Nadie" in result.answer and result.answer.startswith("ERROR")
    assert result.errors == ["compras_cliente: No customer matches 'Nadie'."]


def failing_call(
    which: int, exc: Exception | None = None, text: str | None = None
) -> Callable[..., ModelFunction]:
    """A reply function whose call number ``which`` (1 or 2) raises ``exc`` or returns ``text``."""

    def reply(messages: list[BaseMessage], info: CallInfo) -> AIMessage | str:
        call = 1 if is_plan_request(messages) else 2
        if call == which:
            if exc is not None:
                raise exc
            return text or ""
        return scripted(TWO_OPS, answer_from)(messages, info)

    return lambda: reply


@pytest.mark.parametrize(
    ("reply", "calls", "kind"),
    [
        (failing_call(1, exc=TimeoutError("read timed out")), 1, "timeout"),
        (failing_call(1, exc=ConnectionError("refused")), 1, "provider"),
        (failing_call(1, text="no es JSON"), 1, "model_output"),
        (failing_call(1, text='{"respuesta": "Vendimos mucho."}'), 1, "model_output"),
        (failing_call(2, exc=ConnectionError("reset")), 2, "provider"),
        (failing_call(2, text='{"respuesta": '), 2, "model_output"),
    ],
    ids=[
        "call1-timeout",
        "call1-provider",
        "call1-garbage",
        "call1-ignores-the-plan-schema",
        "call2-provider",
        "call2-garbage",
    ],
)
def test_model_failures_answer_clearly_and_leave_the_store_untouched(
    toy_registry: OperationRegistry,
    toy_erp: Erp,
    memory_store: MemoryStore,
    reply: Callable[[], ModelFunction],
    calls: int,
    kind: str,
) -> None:
    good, _ = make_engine(scripted(TWO_OPS, answer_from), toy_registry, toy_erp, memory_store)
    good.ask("c1", "primera pregunta", DEMO_CALLER)
    before = snapshot_store(memory_store, "c1")

    engine, model = make_engine(reply(), toy_registry, toy_erp, memory_store)
    result = engine.ask("c1", "segunda pregunta", DEMO_CALLER)

    assert model.call_count == result.model_calls == calls
    assert (result.failure, result.answer) == (kind, user_message(kind))  # type: ignore[arg-type]
    assert not result.recorded and result.errors
    assert result.state == before[1]
    assert snapshot_store(memory_store, "c1") == before


def test_unknown_conversation_is_created(
    toy_registry: OperationRegistry, toy_erp: Erp, memory_store: MemoryStore
) -> None:
    engine, _ = make_engine(scripted(TWO_OPS, answer_from), toy_registry, toy_erp, memory_store)
    assert memory_store.get_conversation("nueva") is None
    assert engine.ask("nueva", "x", DEMO_CALLER).conversation_id == "nueva"
    assert memory_store.get_conversation("nueva") is not None


def test_a_planner_ai_is_accepted_directly(
    toy_registry: OperationRegistry, toy_erp: Erp, memory_store: MemoryStore
) -> None:
    model = text_model(scripted(TWO_OPS, answer_from))
    engine = PlannerEngine(toy_registry, toy_erp, memory_store, PlannerAI(model))
    assert engine.ask("c1", "x", DEMO_CALLER).model_calls == 2


def one_operation(parametros: str) -> str:
    """A call-1 reply planning ``ventas_anuales`` with the JSON text ``parametros`` pasted in verbatim."""
    return '{"operaciones": [{"funcion": "ventas_anuales", "parametros": ' + parametros + "}]}"


def deep_list(depth: int) -> str:
    return "[" * depth + "]" * depth


HOSTILE_PLANS = {
    "params-past-serialisation-depth": one_operation('{"anio": 2025, "x": ' + deep_list(300) + "}"),
    "params-past-recursion-limit": one_operation('{"x": ' + deep_list(5_000) + "}"),
    "huge-integer": one_operation('{"anio": ' + "9" * 5_000 + "}"),
    "non-dict-parametros": one_operation("[2025]"),
    "non-string-funcion": '{"operaciones": [{"funcion": {"a": 1}}]}',
    "ten-thousand-operations": json.dumps({"operaciones": [{"funcion": "ventas_anuales"}] * 10_000}),
    "a-list-not-a-plan": '[{"funcion": "ventas_anuales"}]',
}


@pytest.mark.parametrize("plan_text", HOSTILE_PLANS.values(), ids=HOSTILE_PLANS.keys())
def test_hostile_plans_get_a_clean_answer_within_two_calls(
    toy_registry: OperationRegistry, toy_erp: Erp, memory_store: MemoryStore, plan_text: str
) -> None:
    engine, model = make_engine(scripted(plan_text, answer_from), toy_registry, toy_erp, memory_store)
    result = engine.ask("c1", "pregunta", DEMO_CALLER)
    assert model.call_count == result.model_calls <= 2
    assert result.answer.strip()
    result.model_dump_json()  # the turn record stays serialisable (CLI --json, benchmark results)
    if result.recorded:
        assert [m.role for m in memory_store.history("c1")] == ["user", "assistant"]
    else:
        assert memory_store.history("c1") == []


def test_concurrent_conversations_on_one_engine_do_not_mix(
    toy_registry: OperationRegistry, toy_erp: Erp, memory_store: MemoryStore
) -> None:
    def reply(messages: list[BaseMessage], _info: CallInfo) -> str:
        if is_plan_request(messages):
            year = int(str(messages[-1].content).rsplit(" ", 1)[1])
            operations = [
                {"funcion": "ventas_anuales", "parametros": {"anio": year}},
                {"funcion": "mejor_cliente", "parametros": {"anio": year}},
            ]
            return json.dumps({"operaciones": operations})
        year = results_of(messages)[0]["resultado"]["anio"]
        return json.dumps({"respuesta": f"anio {year}", "estado": {"anio": year}})

    engine, model = make_engine(reply, toy_registry, toy_erp, memory_store)

    def turn(index: int) -> tuple[int, TurnResult]:
        return index, engine.ask(f"c{index % 4}", f"ventas de {2000 + index}", DEMO_CALLER)

    with ThreadPoolExecutor(max_workers=8) as pool:
        turns = list(pool.map(turn, range(40)))

    assert all(r.answer == f"anio {2000 + i}" and r.model_calls == 2 and r.recorded for i, r in turns)
    assert model.call_count == 80
    for conversation in range(4):
        history = memory_store.history(f"c{conversation}")
        assert len(history) == 20
        for question, answer in zip(history[::2], history[1::2], strict=True):
            assert answer.content == "anio " + question.content.rsplit(" ", 1)[1]


def http_engine(
    handler: Callable[[httpx.Request], httpx.Response],
    registry: OperationRegistry,
    erp: Erp,
    store: MemoryStore,
) -> PlannerEngine:
    client = HttpAIClient(["http://a.test", "http://b.test"], transport=httpx.MockTransport(handler))
    return PlannerEngine(registry, erp, store, client)


USAGE = {"model_calls": 1, "input_tokens": 5, "output_tokens": 1, "model_ms": 1.0}
PLAN_BODY = {
    "plan": {"operaciones": [{"funcion": "ventas_anuales", "parametros": {"anio": 2025}}]},
    "usage": USAGE,
}


def test_over_http_unreachable_servers_cost_no_call_and_record_nothing(
    toy_registry: OperationRegistry, toy_erp: Erp, memory_store: MemoryStore
) -> None:
    def refuse(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("connection refused", request=request)

    result = http_engine(refuse, toy_registry, toy_erp, memory_store).ask(
        "c1", "¿Cuánto vendimos?", DEMO_CALLER
    )
    assert (result.model_calls, result.answer, result.failure) == (0, user_message("provider"), "provider")
    assert not result.recorded and memory_store.history("c1") == []


def test_over_http_a_failed_call_two_counts_both_calls_and_records_nothing(
    toy_registry: OperationRegistry, toy_erp: Erp, memory_store: MemoryStore
) -> None:
    def serve(request: httpx.Request) -> httpx.Response:
        if request.url.path == "/ai/analyze":
            return httpx.Response(200, json=PLAN_BODY)
        return httpx.Response(502, json={"error": "bad JSON", "kind": "model_output", "usage": USAGE})

    result = http_engine(serve, toy_registry, toy_erp, memory_store).ask(
        "c1", "¿Cuánto vendimos?", DEMO_CALLER
    )
    expected = (2, user_message("model_output"), "model_output")
    assert (result.model_calls, result.answer, result.failure) == expected
    assert result.operations[0].ok
    assert not result.recorded and memory_store.history("c1") == []


# -- the failure contract: input and storage before any call, operation errors, storage after the answer ----


@pytest.mark.parametrize(
    ("conversation_id", "question"),
    [("", "hola"), ("c" * 65, "hola"), ("c1", "   "), ("c1", "x" * 4001), ("c1", "hola \udcff")],
    ids=["empty-id", "long-id", "blank-question", "oversized-question", "lone-surrogate"],
)
async def test_bad_input_is_refused_with_no_model_call_and_nothing_written(
    toy_registry: OperationRegistry,
    toy_erp: Erp,
    memory_store: MemoryStore,
    conversation_id: str,
    question: str,
) -> None:
    engine, model = make_engine(scripted(TWO_OPS, answer_from), toy_registry, toy_erp, memory_store)
    events, result = await streamed(engine, conversation_id, question)

    assert [event.type for event in events] == ["turn"]
    assert (result.failure, result.recorded, model.call_count) == ("input", False, 0)
    assert result.answer.startswith("No pude procesar el mensaje:") and result.errors
    with memory_store.engine.connect() as connection:
        assert connection.execute(select(func.count()).select_from(Conversation)).scalar() == 0


def test_a_store_that_cannot_be_read_costs_no_model_call(
    toy_registry: OperationRegistry, toy_erp: Erp, memory_store: MemoryStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    def locked(*_args: Any, **_kwargs: Any) -> None:
        raise StorageError("The conversation memory is locked by another process (waited 30 s).")

    monkeypatch.setattr(memory_store, "build_context", locked)
    engine, model = make_engine(scripted(TWO_OPS, answer_from), toy_registry, toy_erp, memory_store)
    result = engine.ask("c1", "¿Cuánto vendimos?", DEMO_CALLER)

    assert (result.failure, result.recorded, model.call_count) == ("storage", False, 0)
    assert result.answer == user_message("storage") and "locked" in result.errors[0]


def test_an_answer_the_store_could_not_record_is_still_shown_with_a_note(
    toy_registry: OperationRegistry, toy_erp: Erp, memory_store: MemoryStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    def full(*_args: Any, **_kwargs: Any) -> None:
        raise StorageError("The disk is full.")

    monkeypatch.setattr(memory_store, "record_turn", full)
    engine, _ = make_engine(scripted(TWO_OPS, answer_from), toy_registry, toy_erp, memory_store)
    result = engine.ask("c1", "¿Cuánto vendimos?", DEMO_CALLER)

    assert (result.failure, result.recorded, result.model_calls) == ("storage", False, 2)
    assert result.answer.startswith("ventas_anuales=850000000") and result.answer.endswith(NOT_RECORDED_NOTE)


def test_an_operation_that_breaks_is_an_operation_error_whose_text_never_reaches_the_model(
    toy_registry: OperationRegistry, toy_erp: Erp, memory_store: MemoryStore
) -> None:
    def corrupt(*_args: Any) -> Any:
        raise RuntimeError("database disk image is malformed [SQL: SELECT total FROM facturas WHERE anio=?]")

    toy_registry.get("ventas_anuales").__dict__["handler"] = corrupt  # frozen dataclass: patch for this test
    engine, model = make_engine(scripted(TWO_OPS, answer_from), toy_registry, toy_erp, memory_store)
    result = engine.ask("c1", "¿Cuánto vendimos?", DEMO_CALLER)

    prompts = " ".join(str(m.content) for call in model.calls for m in call.messages)
    assert "SELECT" not in prompts and "malformed" not in prompts
    assert "SELECT" not in result.answer and "error interno (ref " in result.answer
    assert (result.failure, result.recorded) == ("operation_error", True)  # call 2 explained it
    assert [op.error_kind for op in result.operations] == ["internal", None]


def test_a_plan_with_a_placeholder_operation_is_an_invalid_plan_that_runs_nothing(
    toy_registry: OperationRegistry, toy_erp: Erp, memory_store: MemoryStore, toy: Any
) -> None:
    placeholder = {"operaciones": [{"funcion": "nombre_de_operacion", "parametros": {"parametro": "valor"}}]}
    engine, _ = make_engine(scripted(placeholder, answer_from), toy_registry, toy_erp, memory_store)
    result = engine.ask("c1", "¿Cuánto vendimos?", DEMO_CALLER)

    assert (result.failure, result.recorded) == ("invalid_plan", True)
    assert toy.log == [] and [op.error_kind for op in result.operations] == ["invalid"]


# -- on the demo ERP with the offline model ------------------------------------------------------------------


def test_the_articles_dialogue_verbatim(
    registry: OperationRegistry, erp: Erp, memory_store: MemoryStore
) -> None:
    engine = offline_engine(registry, erp, memory_store)

    first = engine.ask("articulo", "¿Cuánto vendimos en 2025?", DEMO_CALLER)
    assert first.plan is not None
    assert first.plan["operaciones"] == [
        {"id": first.plan["operaciones"][0]["id"], "funcion": "ventas_anuales", "parametros": {"anio": 2025}}
    ]
    assert "₲850.000.000" in first.answer
    assert first.model_calls == 2

    second = engine.ask("articulo", "¿Cuánto vendimos en 2025 y cuál fue nuestro mejor cliente?", DEMO_CALLER)
    assert [op.function for op in second.operations] == ["ventas_anuales", "mejor_cliente"]
    assert all(op.ok for op in second.operations)
    assert "₲850.000.000" in second.answer and "Empresa ABC" in second.answer
    assert second.model_calls == 2

    third = engine.ask("articulo", "¿Cuál fue mi mejor cliente?", DEMO_CALLER)
    assert "Empresa ABC" in third.answer
    assert memory_store.get_state("articulo")["cliente_actual"] == "Empresa ABC"

    fourth = engine.ask("articulo", "¿Y cuánto compró?", DEMO_CALLER)
    [operation] = fourth.operations
    assert operation.function == "compras_cliente"
    assert operation.parameters == {"cliente": "Empresa ABC", "anio": 2025}  # from the stored state, no $ref
    assert "₲120.000.000" in fourth.answer
    assert fourth.model_calls == 2
    assert [m.role for m in memory_store.history("articulo")] == ["user", "assistant"] * 4


@pytest.mark.parametrize("mode", get_args(FaultMode))
def test_every_fault_mode_gives_a_clean_answer_within_two_calls_and_a_consistent_store(
    registry: OperationRegistry, erp: Erp, memory_store: MemoryStore, mode: FaultMode
) -> None:
    offline_engine(registry, erp, memory_store).ask("f", "¿Cuánto vendimos en 2025?", DEMO_CALLER)
    before = [(m.role, m.content) for m in memory_store.history("f")]
    state_before = memory_store.get_state("f")

    faulty = offline_engine(registry, erp, memory_store, faults=FaultConfig(mode=mode))
    result = faulty.ask("f", "¿Cuál fue nuestro mejor cliente en 2024?", DEMO_CALLER)

    assert 1 <= result.model_calls <= 2
    assert result.answer.strip() and "Traceback" not in result.answer
    after = [(m.role, m.content) for m in memory_store.history("f")]
    assert (result.failure == "provider") == (mode in ("provider_error", "stream_break"))
    assert result.recorded == is_recorded(result.failure)  # the one recording policy of both modes
    if result.recorded:
        assert after == [
            *before,
            ("user", "¿Cuál fue nuestro mejor cliente en 2024?"),
            ("assistant", result.answer),
        ]
    else:
        assert result.errors
        assert after == before and memory_store.get_state("f") == state_before

    healthy = offline_engine(registry, erp, memory_store).ask("f", "¿Cuánto vendimos en 2025?", DEMO_CALLER)
    assert "₲850.000.000" in healthy.answer


def test_intermittent_faults_never_exceed_two_calls(
    registry: OperationRegistry, erp: Erp, memory_store: MemoryStore
) -> None:
    questions = [
        "¿Cuánto vendimos en 2025?",
        "¿Cuál fue mi mejor cliente?",
        "¿Y cuánto compró?",
        "Hola",
        "gracias",
    ]
    for seed, mode in enumerate(get_args(FaultMode)):
        engine = offline_engine(
            registry, erp, memory_store, faults=FaultConfig(mode=mode, rate=0.5, seed=seed)
        )
        for question in questions:
            result = engine.ask(f"intermitente-{mode}", question, DEMO_CALLER)
            assert 1 <= result.model_calls <= 2, (mode, question, result)
            assert result.answer.strip()


# -- the same turn, whichever entry point runs it -----------------------------------------------------------


async def run_scenarios(
    entry: Entry, scenarios: Sequence[Scenario], registry: OperationRegistry, erp: Erp, store: MemoryStore
) -> list[dict[str, Any] | str]:
    """Every turn of ``scenarios`` through one entry point, each conversation as its scenario's users."""
    engine = offline_engine(registry, erp, store)
    outcomes: list[dict[str, Any] | str] = []
    for scenario in scenarios:
        for turn in scenario.turns:
            user = turn.as_user or scenario.user
            caller = DEMO_CALLER if user is None else caller_for(erp, user)
            try:
                if entry == "astream":
                    events, result = await streamed(engine, scenario.id, turn.user, caller)
                    if result.recorded:  # a model-written answer arrives whole through the deltas
                        assert "".join(deltas(events)) == result.answer
                else:
                    result = await run_turn(engine, entry, scenario.id, turn.user, caller)
            except ConversationAccessDenied:
                outcomes.append(f"denied: {scenario.id} to {caller.user_id}")
                continue
            outcomes.append(comparable(result))
    return outcomes


@pytest.mark.parametrize(
    "path", sorted(default_scenarios_dir().glob("*.yaml")), ids=lambda path: Path(path).stem
)
async def test_aask_and_astream_give_asks_turn_results_on_the_default_suite(
    path: Path, registry: OperationRegistry, erp: Erp, fresh_db_url: Callable[[], str]
) -> None:
    scenarios = load_file(path)
    results: dict[Entry, list[dict[str, Any] | str]] = {}
    for entry in ENTRIES:
        store = MemoryStore(fresh_db_url())
        try:
            results[entry] = await run_scenarios(entry, scenarios, registry, erp, store)
        finally:
            store.close()
    assert len(results["ask"]) == sum(len(s.turns) for s in scenarios)
    assert results["aask"] == results["ask"]
    assert results["astream"] == results["ask"]


async def test_concurrent_aask_turns_on_one_engine_do_not_mix(
    registry: OperationRegistry, erp: Erp, memory_store: MemoryStore
) -> None:
    engine = offline_engine(registry, erp, memory_store)
    questions = [
        TWO_OPERATIONS,
        "¿Cuánto vendimos en 2024?",
        "Hola",
        "¿Cuánto compró Empresa ABC en 2025?",
    ] * 2
    results = await asyncio.gather(*(engine.aask(f"c{i}", q, DEMO_CALLER) for i, q in enumerate(questions)))
    for index, (question, result) in enumerate(zip(questions, results, strict=True)):
        assert result.conversation_id == f"c{index}" and result.question == question and result.recorded
        assert [m.content for m in memory_store.history(f"c{index}")] == [question, result.answer]
    assert results[0].answer == results[4].answer and "Empresa ABC" in results[0].answer


# -- the events of a streamed turn ---------------------------------------------------------------------------


async def test_astream_yields_the_plan_each_operation_then_the_answer_in_deltas(
    registry: OperationRegistry, erp: Erp, memory_store: MemoryStore
) -> None:
    events, result = await streamed(offline_engine(registry, erp, memory_store), "s1", TWO_OPERATIONS)

    kinds = [event.type for event in events]
    assert kinds[:3] == ["plan", "operation", "operation"]
    assert kinds[3:-1] == ["answer_delta"] * (len(kinds) - 4) and len(kinds) - 4 >= 2
    assert isinstance(events[0], PlanReady) and events[0].plan == result.plan
    streamed_ops = [event.operation for event in events if isinstance(event, OperationDone)]
    assert sorted(streamed_ops, key=lambda op: op.function) == sorted(
        result.operations, key=lambda op: op.function
    )
    assert "".join(deltas(events)) == result.answer
    assert "₲850.000.000" in result.answer and "Empresa ABC" in result.answer
    assert result.recorded and result.failure is None and result.model_calls == 2
    assert result.first_answer_ms is not None and 0 < result.first_answer_ms <= result.total_ms
    assert [m.content for m in memory_store.history("s1")] == [TWO_OPERATIONS, result.answer]


async def test_a_direct_answer_streams_as_call_one_writes_it_before_the_plan(
    registry: OperationRegistry, erp: Erp, memory_store: MemoryStore
) -> None:
    recorder = Recorder()
    engine = offline_engine(registry, erp, memory_store)
    events: list[TurnEvent] = []
    calls_ended_at_first_delta: int | None = None
    async for event in engine.astream("s1", "Hola", DEMO_CALLER, config={"callbacks": [recorder]}):
        if isinstance(event, AnswerDelta) and calls_ended_at_first_delta is None:
            calls_ended_at_first_delta = len(recorder.model_ends)
        events.append(event)
    assert calls_ended_at_first_delta == 0, "the first delta comes while call 1 is still being written"
    types = [event.type for event in events]
    assert types[-2:] == ["plan", "turn"] and set(types[:-2]) == {"answer_delta"} and len(types) >= 4
    result = events[-1].result if isinstance(events[-1], TurnDone) else None
    assert result is not None and result.answer.startswith("¡Hola!")
    assert "".join(deltas(events)) == result.answer
    assert result.model_calls == 1 and result.recorded and result.plan_valid is True


@pytest.mark.parametrize(
    "reply, before_plan",
    [
        ('{"respuesta_directa": "  ¡Hola! ¿Qué consultamos?  "}', ["¡Hola! ¿Qué consultamos?"]),
        (
            '<think>saludo</think>```json\n{"respuesta_directa":"¡Hola! ¿Qué consultamos?"}\n```',
            ["¡Hola! ¿Qué consultamos?"],
        ),
        ('{"operaciones": [], "respuesta_directa": "¡Hola! ¿Qué consultamos?"}', []),
    ],
    ids=["first-key", "after-reasoning-and-fence", "after-empty-operations"],
)
async def test_only_a_reply_that_starts_with_its_direct_answer_streams_it_before_the_plan(
    toy_registry: OperationRegistry,
    toy_erp: Erp,
    memory_store: MemoryStore,
    reply: str,
    before_plan: list[str],
) -> None:
    """A direct answer written after another key is not streamed: it arrives whole once call 1 is parsed."""
    engine = PlannerEngine(toy_registry, toy_erp, memory_store, PlannerAI(text_model(lambda _m, _i: reply)))
    events, result = await streamed(engine, "s1", "Hola")
    plan_at = [event.type for event in events].index("plan")
    assert deltas(events[:plan_at]) == before_plan
    assert "".join(deltas(events)) == result.answer == "¡Hola! ¿Qué consultamos?"
    assert result.model_calls == 1 and result.recorded and result.plan_valid is True


def answering_si(plan: str, registry: OperationRegistry, erp: Erp, store: MemoryStore) -> PlannerEngine:
    """An engine whose call 1 writes ``plan`` and whose call 2 answers "Sí."."""
    model = text_model(scripted(plan, lambda _results: '{"respuesta":"Sí."}'))
    return PlannerEngine(registry, erp, store, PlannerAI(model))


async def test_the_direct_answer_of_a_reply_that_starts_with_operations_is_never_shown(
    toy_registry: OperationRegistry, toy_erp: Erp, memory_store: MemoryStore
) -> None:
    plan = (
        '{"operaciones":[{"funcion":"ventas_anuales","parametros":{"anio":2025}}],"respuesta_directa":"NO"}'
    )
    engine = answering_si(plan, toy_registry, toy_erp, memory_store)
    events, result = await streamed(engine, "s1", "¿Cuánto vendimos en 2025?")
    assert [e.type for e in events] == ["plan", "operation", "answer_delta", "turn"]
    assert deltas(events) == ["Sí."] == [result.answer]


async def test_a_direct_answer_followed_by_operations_is_a_preamble_call_twos_answer_supersedes(
    toy_registry: OperationRegistry, toy_erp: Erp, memory_store: MemoryStore
) -> None:
    """The prompt forbids both; a reply that writes its direct answer first and then operations anyway has
    shown that text already: the operations run, call 2's answer follows it, and is the turn's answer."""
    plan = json.dumps(
        {
            "respuesta_directa": "Consulto.",
            "operaciones": [{"funcion": "ventas_anuales", "parametros": {"anio": 2025}}],
        }
    )
    engine = answering_si(plan, toy_registry, toy_erp, memory_store)
    events, result = await streamed(engine, "s1", "¿Cuánto vendimos en 2025?")
    assert [e.type for e in events] == ["answer_delta", "plan", "operation", "answer_delta", "turn"]
    assert deltas(events) == ["Consulto.", "\n\nSí."]
    assert result.answer == "Sí." and result.model_calls == 2 and result.plan_valid is True
    assert [op.function for op in result.operations] == ["ventas_anuales"] and result.recorded
    assert [m.content for m in memory_store.history("s1")] == ["¿Cuánto vendimos en 2025?", "Sí."]


async def test_a_direct_answer_whose_stream_breaks_midway_records_nothing(
    registry: OperationRegistry, erp: Erp, memory_store: MemoryStore
) -> None:
    engine = offline_engine(registry, erp, memory_store, faults=FaultConfig(mode="stream_break"))
    events, result = await streamed(engine, "s1", "Hola")
    assert deltas(events), "some of the direct answer was shown before the connection dropped"
    assert [e.type for e in events][-1] == "turn" and "plan" not in [e.type for e in events]
    assert result.failure == "provider" and not result.recorded and result.plan_valid is None
    assert result.answer != "".join(deltas(events))  # the failure message supersedes the partial text
    assert memory_store.history("s1") == []


async def test_a_rejected_plan_streams_its_refused_operations_then_the_explanation(
    toy_registry: OperationRegistry, toy_erp: Erp, memory_store: MemoryStore
) -> None:
    plan = {"operaciones": [{"funcion": "ventas_totales", "parametros": {}}, {"funcion": "mejor_cliente"}]}
    engine = PlannerEngine(toy_registry, toy_erp, memory_store, PlannerAI(text_model(scripted(plan))))
    events, result = await streamed(engine, "s1", "¿Cuánto vendimos?")
    assert [event.type for event in events][:3] == ["plan", "operation", "operation"]
    refused = [event.operation for event in events if isinstance(event, OperationDone)]
    assert refused == result.operations and all(op.error_kind == "invalid" for op in refused)
    assert result.failure == "invalid_plan" and result.recorded
    assert "".join(deltas(events)) == result.answer


async def test_a_failed_call_one_streams_only_the_result(
    registry: OperationRegistry, erp: Erp, memory_store: MemoryStore
) -> None:
    engine = offline_engine(registry, erp, memory_store, faults=FaultConfig(mode="timeout"))
    events, result = await streamed(engine, "s1", TWO_OPERATIONS)
    assert [event.type for event in events] == ["turn"]
    assert result.failure == "timeout" and not result.recorded and result.first_answer_ms is None
    assert memory_store.history("s1") == []


async def test_another_users_conversation_is_refused_before_the_first_event(
    registry: OperationRegistry, erp: Erp, memory_store: MemoryStore
) -> None:
    memory_store.ensure_conversation("ajena", user_id="ana")
    stream = offline_engine(registry, erp, memory_store).astream(
        "ajena", TWO_OPERATIONS, caller_for(erp, "bruno")
    )
    with pytest.raises(ConversationAccessDenied):
        await anext(stream)


# -- a stream that fails midway records nothing --------------------------------------------------------------


class BreakingStream(BaseChatModel):
    """Streams ``reply`` six characters at a time and breaks off (a reset connection) after ``break_after``
    chunks; a reply that is not cut ends with ``finish_reason`` in its last chunk."""

    reply: str
    break_after: int | None = None
    finish_reason: str = "stop"

    @property
    def _llm_type(self) -> str:
        return "breaking-stream"

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: Any = None,
        **kwargs: Any,
    ) -> ChatResult:
        raise AssertionError("the answer is only ever streamed here")

    async def _astream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: Any = None,
        **kwargs: Any,
    ) -> AsyncIterator[ChatGenerationChunk]:
        pieces = [self.reply[i : i + 6] for i in range(0, len(self.reply), 6)]
        for index, piece in enumerate(pieces):
            if index == self.break_after:
                raise ConnectionResetError("connection reset by peer")
            yield ChatGenerationChunk(message=AIMessageChunk(content=piece))
        yield ChatGenerationChunk(
            message=AIMessageChunk(
                content="",
                response_metadata={"finish_reason": self.finish_reason},
                usage_metadata={"input_tokens": 100, "output_tokens": 30, "total_tokens": 130},
                chunk_position="last",
            )
        )


ANSWER_JSON = json.dumps(
    {
        "respuesta": "En 2025 vendimos ₲850.000.000 en total.",
        "memoria": [{"contenido": "Interesan las ventas de 2025.", "importancia": 0.7}],
        "estado": {"tema": "ventas"},
    },
    ensure_ascii=False,
)
ONE_OPERATION = {"operaciones": [{"funcion": "ventas_anuales", "parametros": {"anio": 2025}}]}


def breaking_engine(
    registry: OperationRegistry, erp: Erp, store: MemoryStore, answer_model: BaseChatModel
) -> PlannerEngine:
    return PlannerEngine(registry, erp, store, PlannerAI(text_model(scripted(ONE_OPERATION)), answer_model))


async def test_a_healthy_stream_of_the_fake_model_reaches_the_store(
    toy_registry: OperationRegistry, toy_erp: Erp, memory_store: MemoryStore
) -> None:
    engine = breaking_engine(toy_registry, toy_erp, memory_store, BreakingStream(reply=ANSWER_JSON))
    events, result = await streamed(engine, "s1", "¿Cuánto vendimos en 2025?")
    assert len(deltas(events)) >= 3 and "".join(deltas(events)) == result.answer
    assert result.recorded and result.memories == ["Interesan las ventas de 2025."]
    assert result.output_tokens == 10 + 30  # the streamed call is counted: usage from its last chunk


@pytest.mark.parametrize(
    "answer_model, failure",
    [
        (BreakingStream(reply=ANSWER_JSON, break_after=6), "provider"),
        (BreakingStream(reply=ANSWER_JSON[:-40], finish_reason="length"), "model_output"),
        (BreakingStream(reply=ANSWER_JSON.replace('"respuesta"', '"respuesta" ', 1)[:-3]), "model_output"),
    ],
    ids=["connection-reset", "cut-at-the-cap", "unparsable"],
)
async def test_a_stream_that_fails_after_some_deltas_records_nothing(
    toy_registry: OperationRegistry,
    toy_erp: Erp,
    memory_store: MemoryStore,
    answer_model: BaseChatModel,
    failure: str,
) -> None:
    engine = breaking_engine(toy_registry, toy_erp, memory_store, answer_model)
    memory_store.ensure_conversation("s1", user_id=DEMO_CALLER.user_id)
    events, result = await streamed(engine, "s1", "¿Cuánto vendimos en 2025?")
    assert deltas(events), "some of the answer was shown before the failure"
    assert result.failure == failure and not result.recorded and result.model_calls == 2
    assert result.answer not in "".join(deltas(events))  # the failure message supersedes the partial text
    assert memory_store.history("s1") == [] and memory_store.get_state("s1") == {}
    assert memory_store.memories("s1") == []


async def test_the_offline_models_dropped_connection_midway_records_nothing(
    registry: OperationRegistry, erp: Erp, memory_store: MemoryStore
) -> None:
    broken = build_chat_model("offline", faults=FaultConfig(mode="stream_break"))
    engine = offline_engine(registry, erp, memory_store, answer_model=broken)
    events, result = await streamed(engine, "s1", TWO_OPERATIONS)
    assert [event.type for event in events][:3] == ["plan", "operation", "operation"]
    assert deltas(events) and result.failure == "provider" and not result.recorded
    assert result.model_calls == 2 and result.output_tokens > 0  # the broken call still counts
    assert memory_store.history("s1") == []
    healthy = await offline_engine(registry, erp, memory_store).aask("s1", TWO_OPERATIONS, DEMO_CALLER)
    assert healthy.recorded and [m.content for m in memory_store.history("s1")] == [
        TWO_OPERATIONS,
        healthy.answer,
    ]


async def test_a_stream_its_reader_abandons_records_nothing_and_ends_its_runs(
    registry: OperationRegistry, erp: Erp, memory_store: MemoryStore
) -> None:
    recorder = Recorder()
    engine = offline_engine(registry, erp, memory_store)
    stream = engine.astream("s1", TWO_OPERATIONS, DEMO_CALLER, config={"callbacks": [recorder]})
    async for event in stream:
        if isinstance(event, AnswerDelta):
            break
    await stream.aclose()
    assert memory_store.history("s1") == []
    # Call 2's run ends once the reader leaves, and so does the turn's. The model's stream may be finalised a
    # few loop iterations after aclose() returns (its own cleanup runs on the loop), so wait for it, bounded.
    call_one, call_two = (run["run_id"] for run in recorder.models)
    for _ in range(200):
        if call_two in recorder.model_errors and recorder.chain_errors:
            break
        await asyncio.sleep(0.01)
    assert recorder.model_ends == [call_one] and list(recorder.model_errors) == [call_two]
    assert [run["run_id"] for run in recorder.chains] == list(recorder.chain_errors)


# -- callbacks: exactly the turn's model calls, under one parent run -----------------------------------------


class Recorder(BaseCallbackHandler):
    """Records chain and chat-model runs as a tracing handler (LangSmith, OpenTelemetry) sees them."""

    def __init__(self) -> None:
        self.chains: list[dict[str, Any]] = []
        self.chain_outputs: dict[UUID, dict[str, Any]] = {}
        self.models: list[dict[str, Any]] = []
        self.model_ends: list[UUID] = []
        self.model_errors: dict[UUID, BaseException] = {}
        self.chain_errors: dict[UUID, BaseException] = {}

    def on_chain_start(
        self, serialized: dict[str, Any] | None, inputs: dict[str, Any], *, run_id: UUID, **kwargs: Any
    ) -> None:
        self.chains.append({"run_id": run_id, "inputs": inputs, **kwargs})

    def on_chain_end(self, outputs: dict[str, Any], *, run_id: UUID, **kwargs: Any) -> None:
        self.chain_outputs[run_id] = outputs

    def on_chat_model_start(
        self, serialized: dict[str, Any], messages: list[list[BaseMessage]], *, run_id: UUID, **kwargs: Any
    ) -> None:
        self.models.append({"run_id": run_id, **kwargs})

    def on_llm_end(self, response: Any, *, run_id: UUID, **kwargs: Any) -> None:
        self.model_ends.append(run_id)

    def on_llm_error(self, error: BaseException, *, run_id: UUID, **kwargs: Any) -> None:
        self.model_errors[run_id] = error

    def on_chain_error(self, error: BaseException, *, run_id: UUID, **kwargs: Any) -> None:
        self.chain_errors[run_id] = error


@pytest.mark.parametrize("entry", ENTRIES)
@pytest.mark.parametrize(
    "question, calls", [(TWO_OPERATIONS, 2), ("Hola", 1)], ids=["two-calls", "small-talk"]
)
async def test_callbacks_see_exactly_the_turns_model_calls_under_one_parent_run(
    registry: OperationRegistry, erp: Erp, memory_store: MemoryStore, entry: Entry, question: str, calls: int
) -> None:
    recorder = Recorder()
    config: RunnableConfig = {"callbacks": [recorder], "tags": ["erp-web"], "metadata": {"tenant": "acme"}}
    result = await run_turn(offline_engine(registry, erp, memory_store), entry, "cb", question, config=config)

    [turn] = recorder.chains
    assert turn["name"] == "planner turn" and turn["parent_run_id"] is None
    assert turn["inputs"] == {"conversation_id": "cb", "question": question}
    assert "erp-web" in turn["tags"] and turn["metadata"]["tenant"] == "acme"
    assert len(recorder.models) == calls == result.model_calls
    for model_run in recorder.models:
        assert model_run["parent_run_id"] == turn["run_id"]
        assert "erp-web" in model_run["tags"] and model_run["metadata"]["tenant"] == "acme"
    assert sorted(map(str, recorder.model_ends)) == sorted(str(run["run_id"]) for run in recorder.models)
    assert recorder.chain_outputs[turn["run_id"]] == {"answer": result.answer, "failure": None}


@pytest.mark.parametrize("entry", ENTRIES)
async def test_a_run_name_names_the_turn_and_a_failed_turn_reports_its_failure(
    registry: OperationRegistry, erp: Erp, memory_store: MemoryStore, entry: Entry
) -> None:
    recorder = Recorder()
    engine = offline_engine(registry, erp, memory_store, faults=FaultConfig(mode="provider_error"))
    config: RunnableConfig = {"callbacks": [recorder], "run_name": "pregunta web"}
    result = await run_turn(engine, entry, "cb", TWO_OPERATIONS, config=config)
    [turn] = recorder.chains
    assert turn["name"] == "pregunta web" and len(recorder.models) == 1
    assert recorder.chain_outputs[turn["run_id"]] == {"answer": result.answer, "failure": "provider"}


# -- logging: one record per finished turn ---------------------------------------------------------------


@pytest.mark.parametrize("entry", ENTRIES)
async def test_each_finished_turn_is_logged_once_with_its_fields(
    registry: OperationRegistry,
    erp: Erp,
    memory_store: MemoryStore,
    entry: Entry,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="planner_mode")
    healthy = offline_engine(registry, erp, memory_store)
    failing = offline_engine(registry, erp, memory_store, faults=FaultConfig(mode="timeout"))
    ok = await run_turn(healthy, entry, "log", TWO_OPERATIONS)
    failed = await run_turn(failing, entry, "log", TWO_OPERATIONS)

    records = [r for r in caplog.records if r.name == "planner_mode"]
    assert [r.levelno for r in records] == [logging.INFO, logging.WARNING]
    fields = [r.__dict__["erp_ai"] for r in records]
    assert fields[0] | {"total_ms": 0, "model_ms": 0} == {
        "conversation_id": "log",
        "user_id": "gerente",
        "mode": "planner",
        "model_calls": 2,
        "input_tokens": ok.input_tokens,
        "output_tokens": ok.output_tokens,
        "total_ms": 0,
        "model_ms": 0,
        "failure": None,
        "recorded": True,
    }
    assert (fields[1]["failure"], fields[1]["recorded"]) == (failed.failure, False) == ("timeout", False)
    assert all(TWO_OPERATIONS not in r.getMessage() and ok.answer not in r.getMessage() for r in records)


async def test_a_conversation_refused_to_its_caller_is_not_logged_as_a_turn(
    registry: OperationRegistry, erp: Erp, memory_store: MemoryStore, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="planner_mode")
    memory_store.ensure_conversation("ajena", user_id="ana")
    with pytest.raises(ConversationAccessDenied):
        await offline_engine(registry, erp, memory_store).aask("ajena", "Hola", caller_for(erp, "bruno"))
    assert [r for r in caplog.records if r.name == "planner_mode"] == []


# -- time to the first answer token -------------------------------------------------------------------------


class FixedClient:
    """An AI client that answers with a fixed plan and answer, each call costing a fixed usage."""

    def __init__(self, plan: Plan, plan_usage: CallUsage, answer_usage: CallUsage) -> None:
        self.fixed_plan, self.plan_usage, self.answer_usage = plan, plan_usage, answer_usage

    async def plan(self, *_args: Any, **_kwargs: Any) -> AsyncIterator[str | AnalyzeResponse]:
        if self.fixed_plan.is_direct:
            yield self.fixed_plan.direct_answer or ""
        yield AnalyzeResponse(plan=self.fixed_plan, usage=self.plan_usage)

    async def answer(self, *_args: Any, **_kwargs: Any) -> AsyncIterator[str | RespondResponse]:
        yield "Vendimos "
        yield "₲850.000.000."
        yield RespondResponse(answer=Answer(respuesta="Vendimos ₲850.000.000."), usage=self.answer_usage)


@pytest.mark.parametrize("entry", ENTRIES)
@pytest.mark.parametrize(
    "plan, expected",
    [
        (ONE_OPERATION, FirstAnswerCall(call=1, prefix=ANSWER_PREFIX)),
        ({"respuesta_directa": "¡Hola!"}, FirstAnswerCall(call=0, prefix=DIRECT_ANSWER_PREFIX)),
    ],
    ids=["call-2-writes-the-answer", "call-1-writes-a-direct-answer"],
)
async def test_the_result_says_which_call_wrote_the_answer_and_what_came_before_it(
    toy_registry: OperationRegistry,
    toy_erp: Erp,
    memory_store: MemoryStore,
    entry: Entry,
    plan: dict[str, Any],
    expected: FirstAnswerCall,
) -> None:
    one_call = CallUsage(model_calls=1)
    client = FixedClient(Plan.model_validate(plan), one_call, one_call)
    result = await run_turn(
        PlannerEngine(toy_registry, toy_erp, memory_store, client), entry, "t", "¿Ventas?"
    )
    assert result.recorded
    assert result.first_answer_call == expected
    assert (result.first_answer_ms is not None) == (entry == "astream")


def test_the_fixed_client_is_an_ai_client() -> None:
    assert isinstance(FixedClient(Plan.model_validate(ONE_OPERATION), CallUsage(), CallUsage()), AIClient)


# -- over HTTP -----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("entry", ENTRIES)
async def test_over_http_each_entry_point_gives_the_in_process_turn(
    registry: OperationRegistry, erp: Erp, memory_store: MemoryStore, tmp_path: Path, entry: Entry
) -> None:
    in_process = offline_engine(registry, erp, MemoryStore(f"sqlite:///{tmp_path / 'local.sqlite3'}"))
    expected = comparable(in_process.ask("h", TWO_OPERATIONS, DEMO_CALLER))
    with ServerThread(create_app(build_chat_model("offline"), token="k")) as server:
        client = HttpAIClient([server.url], token="k", timeout=30)
        try:
            engine = PlannerEngine(registry, erp, memory_store, client)
            if entry == "astream":
                events, result = await streamed(engine, "h", TWO_OPERATIONS)
                assert len(deltas(events)) >= 2 and "".join(deltas(events)) == result.answer
            else:
                result = await run_turn(engine, entry, "h", TWO_OPERATIONS)
        finally:
            client.close()
    assert comparable(result) == expected


# -- faults -------------------------------------------------------------------------------------------------


async def test_a_turn_planned_before_another_turn_was_recorded_is_flagged_stale(
    registry: OperationRegistry, erp: Erp, memory_store: MemoryStore
) -> None:
    engine = offline_engine(registry, erp, memory_store)
    question = "¿Cuánto vendimos en 2025?"
    assert not engine.ask("c1", question, DEMO_CALLER).stale_state

    events = engine.astream("c1", question, DEMO_CALLER)
    first = await anext(events)  # call 1 planned on the context it read; now another turn lands first
    assert isinstance(first, PlanReady)
    other = await asyncio.to_thread(engine.ask, "c1", question, DEMO_CALLER)
    late = [event async for event in events][-1].result

    assert not other.stale_state
    assert late.recorded and late.stale_state
    contents = [message.content for message in memory_store.history("c1")]
    assert contents.count(question) == 3  # both concurrent turns recorded, whole


# -- grounding: a figure the ERP did not return is never shown as its truth ---------------------------------


def answering(text: str, *memories: str) -> Any:
    def answer(_results: list[dict[str, Any]]) -> str:
        items = [{"contenido": item, "importancia": 0.8} for item in memories]
        return json.dumps({"respuesta": text, "memoria": items, "estado": {}})

    return scripted(ONE_OPERATION, answer)


def grounding_engine(reply: Any, registry: Any, erp: Any, store: Any, **options: Any) -> PlannerEngine:
    return PlannerEngine(registry, erp, store, InProcessAIClient(PlannerAI(text_model(reply))), **options)


def test_an_invented_figure_is_refused_with_the_erps_own_results_and_nothing_is_stored(
    registry: Any, erp: Any, memory_store: Any
) -> None:
    planner = grounding_engine(answering("En 2025 vendimos ₲987.654.321."), registry, erp, memory_store)
    result = planner.ask("c1", "¿Cuánto vendimos en 2025?", DEMO_CALLER)
    assert result.failure == "ungrounded" and result.ungrounded_figures == ["987.654.321"]
    assert not result.recorded and memory_store.history("c1") == []
    assert "987.654.321" in result.answer and "ventas_anuales(anio=2025)" in result.answer
    total = result.operations[0].result["total"]
    assert f"total: {total:,}".replace(",", ".") in result.answer  # the ERP's figure, shown as such


def test_a_figure_the_erp_returned_passes_however_it_is_written(
    registry: Any, erp: Any, memory_store: Any
) -> None:
    total = PlannerEngine(registry, erp, memory_store, PlannerAI(text_model(scripted(ONE_OPERATION))))
    truth = total.ask("c0", "¿Cuánto vendimos en 2025?", DEMO_CALLER).operations[0].result["total"]
    written = f"En 2025 vendimos ₲{truth:,}".replace(",", ".")
    result = grounding_engine(answering(written), registry, erp, memory_store).ask(
        "c1", "¿Y en 2025?", DEMO_CALLER
    )
    assert result.failure is None and result.ungrounded_figures == [] and result.recorded


def test_flag_shows_and_records_the_answer_but_never_remembers_an_invented_figure(
    registry: Any, erp: Any, memory_store: Any
) -> None:
    reply = answering("Vendimos ₲987.654.321.", "Ventas 2025: ₲987.654.321", "Hablamos de ventas.")
    result = grounding_engine(reply, registry, erp, memory_store, grounding="flag").ask(
        "c1", "¿Ventas 2025?", DEMO_CALLER
    )
    assert result.failure is None and result.recorded and result.answer == "Vendimos ₲987.654.321."
    assert result.ungrounded_figures == ["987.654.321"]
    assert result.memories == ["Hablamos de ventas."]


def test_off_does_not_check(registry: Any, erp: Any, memory_store: Any) -> None:
    reply = answering("Vendimos ₲987.654.321.", "Ventas 2025: ₲987.654.321")
    result = grounding_engine(reply, registry, erp, memory_store, grounding="off").ask(
        "c1", "¿Ventas 2025?", DEMO_CALLER
    )
    assert result.failure is None and result.ungrounded_figures == [] and len(result.memories) == 1


def test_an_unknown_policy_is_refused_at_construction(registry: Any, erp: Any, memory_store: Any) -> None:
    with pytest.raises(ValueError, match="grounding policy"):
        grounding_engine(answering("x"), registry, erp, memory_store, grounding="maybe")


def test_through_the_ai_server_the_erp_still_refuses_an_invented_figure(
    registry: Any, erp: Any, memory_store: Any
) -> None:
    model = text_model(answering("En 2025 vendimos ₲987.654.321.", "Ventas 2025: ₲987.654.321"))
    with ServerThread(create_app(model)) as server, HttpAIClient([server.url], timeout=30) as client:
        result = PlannerEngine(registry, erp, memory_store, client).ask(
            "c1", "¿Cuánto vendimos en 2025?", DEMO_CALLER
        )
    assert result.failure == "ungrounded" and result.ungrounded_figures == ["987.654.321"]
    assert not result.recorded and memory_store.history("c1") == [] and memory_store.memories("c1") == []
    assert f"total: {result.operations[0].result['total']:,}".replace(",", ".") in result.answer


# -- prompt-cache hits: each call's system message is the same every turn, so the next turn reuses it ------
# (the offline model's ``cache_read`` models a prefix cache by whole blocks: stand_ins.offline._cache)


FIRST = "¿Cuánto vendimos en 2025?"
SECOND = "¿Y en 2024?"


class CallUsages(BaseCallbackHandler):
    """``(input_tokens, cache_read)`` of every model call, in order."""

    def __init__(self) -> None:
        self.calls: list[tuple[int, int]] = []

    def on_llm_end(self, response: LLMResult, *, run_id: UUID, **kwargs: Any) -> None:
        for generations in response.generations:
            for generation in generations:
                usage = generation.message.usage_metadata if isinstance(generation, ChatGeneration) else None
                if usage:
                    self.calls.append((usage["input_tokens"], usage["input_token_details"]["cache_read"]))


def test_the_second_turn_reuses_both_calls_system_messages(
    registry: Any, erp: Any, memory_store: Any
) -> None:
    engine = PlannerEngine(registry, erp, memory_store, PlannerAI(OfflineSalesModel()))
    usages = CallUsages()
    first = engine.ask("c", FIRST, DEMO_CALLER, config={"callbacks": [usages]})
    second = engine.ask("c", SECOND, DEMO_CALLER, config={"callbacks": [usages]})

    assert [cached for _, cached in usages.calls[:2]] == [0, 0]  # call 1 and call 2 share no prefix
    assert first.cached_input_tokens == 0
    assert all(0 < cached < input_tokens for input_tokens, cached in usages.calls[2:])
    assert second.cached_input_tokens == sum(cached for _, cached in usages.calls[2:])
    assert second.model_calls == 2 and second.cached_input_tokens < second.input_tokens


def test_no_cache_no_cached_tokens(registry: Any, erp: Any, memory_store: Any) -> None:
    engine = PlannerEngine(registry, erp, memory_store, PlannerAI(OfflineSalesModel(prompt_cache_size=0)))
    assert [engine.ask("c", q, DEMO_CALLER).cached_input_tokens for q in (FIRST, SECOND)] == [0, 0]


def test_call_usage_carries_the_trackers_cached_tokens_and_adds_them_up() -> None:
    tracker = UsageTracker()
    model = OfflineSalesModel()
    for question in ("Hola", "Hola"):
        model.invoke(question, config={"callbacks": [tracker]})
    usage = CallUsage.from_tracker(tracker)
    assert usage.cached_input_tokens == tracker.cached_input_tokens > 0
    total = CallUsage.total([usage, CallUsage(input_tokens=10, cached_input_tokens=3)])
    assert total.cached_input_tokens == usage.cached_input_tokens + 3


def test_a_body_without_the_field_counts_no_cached_tokens() -> None:
    """A server that predates the field still talks to a newer client."""
    usage = CallUsage.model_validate_json('{"model_calls": 1, "input_tokens": 500, "output_tokens": 20}')
    assert usage.cached_input_tokens == 0


# -- plan_valid: call 1's output parsed as a plan and passed validation ------------------------------------
# True for a plan the ERP accepted (a direct answer and an empty plan included), False when call 1's output
# was no plan or validation rejected it, None when call 1 failed in the provider (no output was read).


def operation(funcion: str, **parametros: Any) -> dict[str, Any]:
    return {"funcion": funcion, "parametros": parametros}


VALID = {"operaciones": [operation("ventas_anuales", anio=2025)]}


@pytest.fixture
def sqlite_store(tmp_path: Path) -> Iterator[MemoryStore]:
    """``plan_valid`` is decided before anything is stored: these tests need no PostgreSQL variant."""
    memory = MemoryStore(f"sqlite:///{tmp_path / 'memory.sqlite3'}")
    yield memory
    memory.close()


@pytest.mark.parametrize("entry", ENTRIES)
@pytest.mark.parametrize(
    "plan, valid, failure",
    [
        ({"respuesta_directa": "¡Hola!"}, True, None),
        ({"operaciones": []}, True, None),
        (VALID, True, None),
        ({"operaciones": [operation("ventas_totales", anio=2025)]}, False, "invalid_plan"),
        ({"operaciones": [operation("ventas_anuales", anio="el año pasado")]}, False, "invalid_plan"),
        (
            {"operaciones": [operation("compras_cliente", cliente={"$ref": "op9.cliente"}, anio=2025)]},
            False,
            "invalid_plan",
        ),
        (
            {"operaciones": [operation("ventas_anuales", anio=2000 + i) for i in range(3)]},
            False,
            "invalid_plan",
        ),
        ("no es JSON", False, "model_output"),
        ({"respuesta": "Vendimos mucho."}, False, "model_output"),
    ],
    ids=[
        "direct-answer",
        "empty-plan",
        "valid-plan",
        "unknown-operation",
        "invalid-parameters",
        "dangling-ref",
        "too-many-operations",
        "not-json",
        "not-a-plan",
    ],
)
async def test_plan_valid_says_whether_call_one_wrote_a_plan_the_erp_accepts(
    toy_registry: OperationRegistry,
    toy_erp: Erp,
    sqlite_store: MemoryStore,
    entry: Entry,
    plan: dict[str, Any] | str,
    valid: bool,
    failure: str | None,
) -> None:
    engine, _ = make_engine(scripted(plan), toy_registry, toy_erp, sqlite_store, max_operations=2)
    result = await run_turn(engine, entry, "c1", "¿Cuánto vendimos?")
    assert (result.plan_valid, result.failure) == (valid, failure)


@pytest.mark.parametrize("entry", ENTRIES)
@pytest.mark.parametrize(
    "call, error, valid, failure",
    [
        (1, ConnectionError("reset"), None, "provider"),
        (1, TimeoutError("read timed out"), None, "timeout"),
        (2, ConnectionError("reset"), True, "provider"),
    ],
    ids=["call1-provider", "call1-timeout", "call2-provider"],
)
async def test_a_provider_failure_leaves_plan_valid_unknown_only_when_no_plan_was_read(
    toy_registry: OperationRegistry,
    toy_erp: Erp,
    sqlite_store: MemoryStore,
    entry: Entry,
    call: int,
    error: Exception,
    valid: bool | None,
    failure: str,
) -> None:
    engine, _ = make_engine(failing_call(call, exc=error)(), toy_registry, toy_erp, sqlite_store)
    result = await run_turn(engine, entry, "c1", "¿Cuánto vendimos?")
    assert (result.plan_valid, result.failure, result.recorded) == (valid, failure, False)


@pytest.mark.parametrize("entry", ENTRIES)
async def test_a_stream_cut_at_the_output_cap_is_an_invalid_plan_and_a_dropped_one_is_unknown(
    toy_registry: OperationRegistry, toy_erp: Erp, sqlite_store: MemoryStore, entry: Entry
) -> None:
    """The offline model's faults: a plan cut at its output cap was read (and is no plan); a connection that
    drops midway is the provider's failure."""
    question = "¿Cuánto vendimos en 2025 y cuál fue nuestro mejor cliente?"
    cut = PlannerEngine(
        toy_registry, toy_erp, sqlite_store, PlannerAI(build_chat_model("offline", max_tokens=5))
    )
    result = await run_turn(cut, entry, "c1", question)
    assert (result.plan_valid, result.failure) == (False, "model_output")
    broken = PlannerAI(build_chat_model("offline", faults=FaultConfig(mode="stream_break")))
    result = await run_turn(PlannerEngine(toy_registry, toy_erp, sqlite_store, broken), entry, "c2", question)
    assert (result.plan_valid, result.failure) == (None, "provider")


@pytest.mark.parametrize("entry", ENTRIES)
async def test_an_operation_refused_on_the_callers_data_scope_is_no_invalid_plan(
    erp: Erp, memory_store: MemoryStore, entry: Entry
) -> None:
    """Bruno may run ``compras_cliente`` but Empresa ABC is not his customer: the ERP refuses it when it
    runs; the plan was valid. An operation outside his catalog is, to the model, an unknown one."""
    registry = sales_registry()
    bruno = caller_for(erp, "bruno")
    plan = {"operaciones": [operation("compras_cliente", cliente="Empresa ABC", anio=2025)]}
    engine, _ = make_engine(scripted(plan), registry, erp, memory_store)
    refused = await run_turn(engine, entry, "c1", "¿Y ABC?", bruno)
    assert [op.error_kind for op in refused.operations] == ["refused"]
    assert refused.plan_valid is True
    forbidden = {"operaciones": [operation("ventas_por_categoria", anio=2025)]}
    assert "ventas_por_categoria" not in registry.names(bruno)
    engine, _ = make_engine(scripted(forbidden), registry, erp, memory_store)
    result = await run_turn(engine, entry, "c2", "¿Y?", bruno)
    assert (result.plan_valid, result.failure) == (False, "invalid_plan")


def test_the_offline_planner_writes_valid_plans_on_small_talk_and_questions(
    toy_registry: OperationRegistry, toy_erp: Erp, sqlite_store: MemoryStore
) -> None:
    engine = PlannerEngine(toy_registry, toy_erp, sqlite_store, PlannerAI(build_chat_model("offline")))
    for question in ("Hola", "¿Cuánto vendimos en 2025?", "¿Qué tiempo hará mañana?"):
        assert engine.ask("c1", question, DEMO_CALLER).plan_valid is True, question
