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
from functools import partial
from pathlib import Path
from typing import Any, get_args

import httpx
import pytest
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, UsageMetadata
from langchain_core.runnables import RunnableConfig
from sqlalchemy import func, select

from benchmarks.scenario import Scenario, default_scenarios_dir, load_file
from benchmarks.serving import ServerThread
from benchmarks.stand_ins import build_model
from benchmarks.stand_ins.faults import FaultConfig, FaultMode
from benchmarks.stand_ins.offline import OfflineSalesModel
from planner_mode import AIClient, HttpAIClient, InProcessAIClient, PlannerAI, PlannerEngine, PlannerLimits
from planner_mode.bookkeeping import ANSWER_PREFIX, DIRECT_ANSWER_PREFIX
from planner_mode.client import AnswerReply, PlanReply
from planner_mode.plan import Answer, Plan
from planner_mode.server import create_app
from shared.engine import AssistantEngine
from shared.erp.database import Erp
from shared.erp.users import caller_for
from shared.errors import ConversationAccessDenied, StorageError
from shared.events import AnswerDelta, OperationDone, PlanReady, TurnDone, TurnEvent
from shared.failures import NOT_RECORDED_NOTE, is_recorded, user_message
from shared.llm.usage import CallUsage, UsageTracker
from shared.memory.store import MemoryStore
from shared.memory.tables import Conversation
from shared.operations import sales_registry
from shared.operations.registry import OperationRegistry
from shared.security import DEMO_CALLER
from shared.turn import FirstAnswerCall, TurnResult
from tests.engine_backends import ENTRIES, SQLITE_ONLY, Entry, comparable, deltas, run_turn, streamed
from tests.fakes import CallInfo, FunctionChatModel, ModelFunction, RunRecorder, StreamingChatModel
from tests.planner_mode.planner_fakes import (
    is_plan_request,
    op,
    plan,
    ref,
    replace_handler,
    results_of,
    scripted,
    text_model,
)

TWO_OPERATIONS = "¿Cuánto vendimos en 2025 y cuál fue nuestro mejor cliente?"


def offline_engine(
    registry: OperationRegistry,
    erp: Erp,
    store: MemoryStore,
    answer_model: BaseChatModel | None = None,
    **options: Any,
) -> PlannerEngine:
    return PlannerEngine(registry, erp, store, PlannerAI(build_model("offline", **options), answer_model))


@pytest.fixture
def offline(registry: OperationRegistry, erp: Erp, memory_store: MemoryStore) -> Callable[..., PlannerEngine]:
    """:func:`offline_engine` over the demo ERP and the test's store."""
    return partial(offline_engine, registry, erp, memory_store)


ONE_OPERATION = plan(op("ventas_anuales", anio=2025))
TWO_OPS = {
    **plan(op("ventas_anuales", anio=2025), op("mejor_cliente", anio=2025)),
    "pregunta": TWO_OPERATIONS,
}
DEPENDENT = plan(
    op("mejor_cliente", "op1", anio=2025), op("compras_cliente", "op2", cliente=ref("op1.cliente"), anio=2025)
)


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
    reply: ModelFunction,
    registry: OperationRegistry,
    erp: Erp,
    store: MemoryStore,
    *,
    answer_model: BaseChatModel | None = None,
    grounding: Any = "refuse",
    **limits: Any,
) -> tuple[PlannerEngine, FunctionChatModel]:
    """An engine whose model answers ``reply`` as text (call 2 too, unless ``answer_model``); that model."""
    model = text_model(reply)
    client = InProcessAIClient(PlannerAI(model, answer_model))
    return PlannerEngine(registry, erp, store, client, PlannerLimits(**limits), grounding=grounding), model


Engines = Callable[..., tuple[PlannerEngine, FunctionChatModel]]


@pytest.fixture
def toy_engine(toy_registry: OperationRegistry, toy_erp: Erp, memory_store: MemoryStore) -> Engines:
    """:func:`make_engine` over the toy registry and ERP and the test's store."""
    return partial(make_engine, registry=toy_registry, erp=toy_erp, store=memory_store)


@pytest.fixture
def demo_engine(registry: OperationRegistry, erp: Erp, memory_store: MemoryStore) -> Engines:
    """:func:`make_engine` over the demo ERP and the test's store."""
    return partial(make_engine, registry=registry, erp=erp, store=memory_store)


def snapshot_store(store: MemoryStore, conversation_id: str) -> tuple[Any, ...]:
    return (
        [(m.role, m.content, m.metadata) for m in store.history(conversation_id)],
        store.get_state(conversation_id),
        store.memories(conversation_id),
    )


def test_the_engine_is_an_assistant_engine_that_takes_a_planner_ai_directly(
    toy_registry: OperationRegistry, toy_erp: Erp, memory_store: MemoryStore
) -> None:
    model = text_model(scripted(TWO_OPS, answer_from))
    engine = PlannerEngine(toy_registry, toy_erp, memory_store, PlannerAI(model))
    assert isinstance(engine, AssistantEngine) and engine.mode == "planner"
    assert engine.ask("c1", "x", DEMO_CALLER).model_calls == 2


def test_two_operations_one_plan_two_calls_and_an_atomic_record(
    toy_engine: Engines, memory_store: MemoryStore
) -> None:
    engine, model = toy_engine(scripted(TWO_OPS, answer_from))
    result = engine.ask("c1", TWO_OPERATIONS, DEMO_CALLER)

    assert model.call_count == result.model_calls == 2
    assert [call.role for call in result.calls] == ["plan", "answer"]
    assert sum(call.ms for call in result.calls) == pytest.approx(result.model_ms)
    assert result.answer == "ventas_anuales=850.000.000; mejor_cliente=120.000.000"
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
    assert (user.role, user.content) == ("user", TWO_OPERATIONS)
    assert (assistant.role, assistant.content) == ("assistant", result.answer)
    assert assistant.is_final_answer
    assert assistant.metadata["plan"] == result.plan
    assert [op["result"]["total"] for op in assistant.metadata["operations"]] == [850_000_000, 120_000_000]
    assert memory_store.get_state("c1")["cliente_actual"] == "Empresa ABC"


def test_the_next_turn_sees_the_stored_context(toy_engine: Engines) -> None:
    engine, model = toy_engine(scripted(TWO_OPS, answer_from))
    engine.ask("c1", "¿Cuál fue mi mejor cliente?", DEMO_CALLER)
    engine.ask("c1", "¿Y cuánto compró?", DEMO_CALLER)
    human = str(model.prompts[2][-1].content)  # call 1 of turn 2
    assert "- cliente_actual: Empresa ABC" in human
    assert "Usuario: ¿Cuál fue mi mejor cliente?" in human
    assert "- Hablamos de ventas de 2025." in human
    assert human.endswith("Nueva pregunta:\n¿Y cuánto compró?")


def test_dependent_plan_with_ref_still_costs_two_calls(toy_engine: Engines) -> None:
    engine, model = toy_engine(scripted(DEPENDENT, answer_from))
    result = engine.ask("c1", "¿Cuánto compró nuestro mejor cliente de 2025?", DEMO_CALLER)
    assert model.call_count == result.model_calls == 2
    assert result.operations[1].parameters == {"cliente": "Empresa ABC", "anio": 2025}
    assert result.answer == "mejor_cliente=120.000.000; compras_cliente=120.000.000"


def test_small_talk_costs_one_call_and_keeps_the_state(
    toy_engine: Engines, memory_store: MemoryStore
) -> None:
    memory_store.ensure_conversation("c1", user_id="gerente")  # the demo caller owns it
    memory_store.merge_state("c1", {"anio": 2024})
    engine, model = toy_engine(
        scripted({"operaciones": [], "respuesta_directa": "¡Hola! ¿En qué puedo ayudarle?"})
    )
    result = engine.ask("c1", "Hola", DEMO_CALLER)
    assert model.call_count == result.model_calls == 1
    assert result.answer == "¡Hola! ¿En qué puedo ayudarle?"
    assert result.operations == [] and result.recorded
    assert result.state == {"anio": 2024}
    assert [m.content for m in memory_store.history("c1")] == ["Hola", "¡Hola! ¿En qué puedo ayudarle?"]


def test_a_plan_without_operations_or_direct_answer_still_gets_an_answer(toy_engine: Engines) -> None:
    engine, model = toy_engine(scripted(plan(), answer_from))
    result = engine.ask("c1", "¿Qué tiempo hace?", DEMO_CALLER)
    assert model.call_count == 2
    assert result.answer == "Nada que consultar."


@pytest.mark.parametrize(
    ("invalid", "expected_error"),
    [
        (plan(op("consultar_ventas_totales")), "no existe"),
        (plan(op("ventas_anuales", anio="dos mil")), "anio"),
        (plan(op("compras_cliente", cliente=ref("op7.cliente"), anio=1)), "dangling $ref"),
        (
            plan(
                op("compras_cliente", "a", cliente=ref("b.cliente"), anio=1),
                op("compras_cliente", "b", cliente=ref("a.cliente"), anio=1),
            ),
            "cycle",
        ),
        (plan(*[op("ventas_anuales", anio=2025)] * 3), "at most 2"),
    ],
    ids=["unknown", "wrong-types", "dangling-ref", "cycle", "too-many"],
)
def test_invalid_plans_run_nothing_and_reach_call_two_as_errors(
    toy: Any, toy_engine: Engines, memory_store: MemoryStore, invalid: dict[str, Any], expected_error: str
) -> None:
    engine, model = toy_engine(scripted(invalid, answer_from), max_operations=2)
    result = engine.ask("c1", "pregunta", DEMO_CALLER)
    assert toy.log == []  # nothing executed
    assert model.call_count == result.model_calls == 2
    assert result.answer.startswith("ERROR") and expected_error in result.answer
    assert any(expected_error in error for error in result.errors)
    assert result.recorded and all(op.error for op in result.operations)
    assert memory_store.history("c1")[-1].metadata["errors"] == result.errors


def test_operation_errors_reach_call_two(toy_engine: Engines) -> None:
    engine, model = toy_engine(scripted(plan(op("compras_cliente", cliente="Nadie", anio=2025)), answer_from))
    result = engine.ask("c1", "¿Cuánto compró Nadie?", DEMO_CALLER)
    assert model.call_count == 2
    assert "Nadie" in result.answer and result.answer.startswith("ERROR")
    assert result.errors == ["compras_cliente: No customer matches 'Nadie'."]


def failing_call(which: int, exc: Exception | None = None, text: str | None = None) -> ModelFunction:
    """A reply function whose call number ``which`` (1 or 2) raises ``exc`` or returns ``text``."""

    def reply(messages: list[BaseMessage], info: CallInfo) -> AIMessage | str:
        call = 1 if is_plan_request(messages) else 2
        if call == which:
            if exc is not None:
                raise exc
            return text or ""
        return scripted(TWO_OPS, answer_from)(messages, info)

    return reply


@pytest.mark.parametrize("entry", ENTRIES)
@pytest.mark.parametrize(
    ("reply", "calls", "kind", "valid"),
    [
        (failing_call(1, exc=TimeoutError("read timed out")), 1, "timeout", None),
        (failing_call(1, exc=ConnectionError("refused")), 1, "provider", None),
        (failing_call(1, text="no es JSON"), 1, "model_output", False),
        (failing_call(1, text='{"respuesta": "Vendimos mucho."}'), 1, "model_output", False),
        (failing_call(2, exc=ConnectionError("reset")), 2, "provider", True),
        (failing_call(2, text='{"respuesta": '), 2, "model_output", True),
    ],
    ids=[
        *("call1-timeout", "call1-provider", "call1-garbage", "call1-ignores-the-plan-schema"),
        *("call2-provider", "call2-garbage"),
    ],
)
async def test_model_failures_answer_clearly_and_leave_the_store_untouched(
    toy_engine: Engines,
    memory_store: MemoryStore,
    entry: Entry,
    reply: ModelFunction,
    calls: int,
    kind: str,
    valid: bool | None,
) -> None:
    """``plan_valid`` is unknown (``None``) only when call 1 failed in the provider: no plan was read."""
    good, _ = toy_engine(scripted(TWO_OPS, answer_from))
    good.ask("c1", "primera pregunta", DEMO_CALLER)
    before = snapshot_store(memory_store, "c1")

    engine, model = toy_engine(reply)
    result = await run_turn(engine, entry, "c1", "segunda pregunta")

    assert model.call_count == result.model_calls == calls
    assert (result.failure, result.answer) == (kind, user_message(kind))  # type: ignore[arg-type]
    assert not result.recorded and result.errors and result.plan_valid is valid
    assert result.state == before[1]
    assert snapshot_store(memory_store, "c1") == before


def test_unknown_conversation_is_created(toy_engine: Engines, memory_store: MemoryStore) -> None:
    engine, _ = toy_engine(scripted(TWO_OPS, answer_from))
    assert memory_store.get_conversation("nueva") is None
    assert engine.ask("nueva", "x", DEMO_CALLER).conversation_id == "nueva"
    assert memory_store.get_conversation("nueva") is not None


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
    toy_engine: Engines, memory_store: MemoryStore, plan_text: str
) -> None:
    engine, model = toy_engine(scripted(plan_text, answer_from))
    result = engine.ask("c1", "pregunta", DEMO_CALLER)
    assert model.call_count == result.model_calls <= 2
    assert result.answer.strip()
    result.model_dump_json()  # the turn record stays serialisable (CLI --json, benchmark results)
    if result.recorded:
        assert [m.role for m in memory_store.history("c1")] == ["user", "assistant"]
    else:
        assert memory_store.history("c1") == []


def test_concurrent_conversations_on_one_engine_do_not_mix(
    toy_engine: Engines, memory_store: MemoryStore
) -> None:
    def reply(messages: list[BaseMessage], _info: CallInfo) -> str:
        if is_plan_request(messages):
            year = int(str(messages[-1].content).rsplit(" ", 1)[1])
            return json.dumps(plan(op("ventas_anuales", anio=year), op("mejor_cliente", anio=year)))
        year = results_of(messages)[0]["resultado"]["anio"]
        return json.dumps({"respuesta": f"anio {year}", "estado": {"anio": year}})

    engine, model = toy_engine(reply)

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


USAGE = {"model_calls": 1, "input_tokens": 5, "output_tokens": 1, "model_ms": 1.0}


def unreachable(request: httpx.Request) -> httpx.Response:
    raise httpx.ConnectError("connection refused", request=request)


def failing_call_two(request: httpx.Request) -> httpx.Response:
    if request.url.path == "/ai/analyze":
        return httpx.Response(200, json={"plan": ONE_OPERATION, "usage": USAGE})
    return httpx.Response(502, json={"error": "bad JSON", "kind": "model_output", "usage": USAGE})


@pytest.mark.parametrize(
    ("serve", "calls", "kind"),
    [(unreachable, 0, "provider"), (failing_call_two, 2, "model_output")],
    ids=["unreachable-servers-cost-no-call", "a-failed-call-two-counts-both"],
)
def test_over_http_a_failed_turn_counts_the_calls_that_reached_a_model_and_records_nothing(
    toy_registry: OperationRegistry,
    toy_erp: Erp,
    memory_store: MemoryStore,
    serve: Callable[[httpx.Request], httpx.Response],
    calls: int,
    kind: str,
) -> None:
    client = HttpAIClient(["http://a.test", "http://b.test"], transport=httpx.MockTransport(serve))
    result = PlannerEngine(toy_registry, toy_erp, memory_store, client).ask("c1", "¿Ventas?", DEMO_CALLER)
    assert (result.model_calls, result.failure) == (calls, kind)
    assert result.answer == user_message(kind)  # type: ignore[arg-type]
    assert [op.ok for op in result.operations] == ([True] if calls else [])
    assert not result.recorded and memory_store.history("c1") == []


# -- the failure contract: input and storage before any call, operation errors, storage after the answer ----


@pytest.mark.parametrize(
    ("conversation_id", "question"),
    [("", "hola"), ("c" * 65, "hola"), ("c1", "   "), ("c1", "x" * 4001), ("c1", "hola \udcff")],
    ids=["empty-id", "long-id", "blank-question", "oversized-question", "lone-surrogate"],
)
async def test_bad_input_is_refused_with_no_model_call_and_nothing_written(
    toy_engine: Engines, memory_store: MemoryStore, conversation_id: str, question: str
) -> None:
    engine, model = toy_engine(scripted(TWO_OPS, answer_from))
    events, result = await streamed(engine, conversation_id, question)

    assert [event.type for event in events] == ["turn"]
    assert (result.failure, result.recorded, model.call_count) == ("input", False, 0)
    assert result.answer.startswith("No pude procesar el mensaje:") and result.errors
    with memory_store.engine.connect() as connection:
        assert connection.execute(select(func.count()).select_from(Conversation)).scalar() == 0


@pytest.mark.parametrize(
    ("method", "calls", "answer"),
    [
        ("build_context", 0, user_message("storage")),  # a store that cannot be read costs no model call
        ("record_turn", 2, f"ventas_anuales=850.000.000; mejor_cliente=120.000.000\n\n{NOT_RECORDED_NOTE}"),
    ],
    ids=["unreadable-before-any-call", "unwritable-after-the-answer"],
)
def test_a_storage_failure_is_the_turns_failure_and_an_answer_already_written_is_shown_with_a_note(
    toy_engine: Engines,
    memory_store: MemoryStore,
    monkeypatch: pytest.MonkeyPatch,
    method: str,
    calls: int,
    answer: str,
) -> None:
    def fail(*_args: Any, **_kwargs: Any) -> None:
        raise StorageError("The memory is locked by another process.")

    monkeypatch.setattr(memory_store, method, fail)
    engine, model = toy_engine(scripted(TWO_OPS, answer_from))
    result = engine.ask("c1", "¿Cuánto vendimos?", DEMO_CALLER)

    assert (result.failure, result.recorded, result.model_calls) == ("storage", False, calls)
    assert model.call_count == calls and result.answer == answer and "locked" in result.errors[0]


def test_an_operation_that_breaks_is_an_operation_error_whose_text_never_reaches_the_model(
    toy_engine: Engines, toy_registry: OperationRegistry
) -> None:
    def corrupt(*_args: Any) -> Any:
        raise RuntimeError("database disk image is malformed [SQL: SELECT total FROM facturas WHERE anio=?]")

    replace_handler(toy_registry, "ventas_anuales", corrupt)
    engine, model = toy_engine(scripted(TWO_OPS, answer_from))
    result = engine.ask("c1", "¿Cuánto vendimos?", DEMO_CALLER)

    prompts = " ".join(str(m.content) for call in model.calls for m in call.messages)
    assert "SELECT" not in prompts and "malformed" not in prompts
    assert "SELECT" not in result.answer and "error interno (ref " in result.answer
    assert (result.failure, result.recorded) == ("operation_error", True)  # call 2 explained it
    assert [op.error_kind for op in result.operations] == ["internal", None]


def test_a_plan_with_a_placeholder_operation_is_an_invalid_plan_that_runs_nothing(
    toy_engine: Engines, toy: Any
) -> None:
    engine, _ = toy_engine(scripted(plan(op("nombre_de_operacion", parametro="valor")), answer_from))
    result = engine.ask("c1", "¿Cuánto vendimos?", DEMO_CALLER)

    assert (result.failure, result.recorded) == ("invalid_plan", True)
    assert toy.log == [] and [op.error_kind for op in result.operations] == ["invalid"]


# -- on the demo ERP with the offline model ------------------------------------------------------------------


def test_the_articles_dialogue_verbatim(
    offline: Callable[..., PlannerEngine], memory_store: MemoryStore
) -> None:
    engine = offline()

    first = engine.ask("articulo", "¿Cuánto vendimos en 2025?", DEMO_CALLER)
    assert first.plan is not None
    assert first.plan["operaciones"] == [
        {"id": first.plan["operaciones"][0]["id"], "funcion": "ventas_anuales", "parametros": {"anio": 2025}}
    ]
    assert "₲850.000.000" in first.answer
    assert first.model_calls == 2

    second = engine.ask("articulo", TWO_OPERATIONS, DEMO_CALLER)
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
    offline: Callable[..., PlannerEngine], memory_store: MemoryStore, mode: FaultMode
) -> None:
    offline().ask("f", "¿Cuánto vendimos en 2025?", DEMO_CALLER)
    before = [(m.role, m.content) for m in memory_store.history("f")]
    state_before = memory_store.get_state("f")

    faulty = offline(faults=FaultConfig(mode=mode))
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

    healthy = offline().ask("f", "¿Cuánto vendimos en 2025?", DEMO_CALLER)
    assert "₲850.000.000" in healthy.answer


def test_intermittent_faults_never_exceed_two_calls(offline: Callable[..., PlannerEngine]) -> None:
    questions = [
        "¿Cuánto vendimos en 2025?",
        "¿Cuál fue mi mejor cliente?",
        "¿Y cuánto compró?",
        "Hola",
        "gracias",
    ]
    for seed, mode in enumerate(get_args(FaultMode)):
        engine = offline(faults=FaultConfig(mode=mode, rate=0.5, seed=seed))
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


@SQLITE_ONLY
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
    offline: Callable[..., PlannerEngine], memory_store: MemoryStore
) -> None:
    engine = offline()
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
    offline: Callable[..., PlannerEngine], memory_store: MemoryStore
) -> None:
    events, result = await streamed(offline(), "s1", TWO_OPERATIONS)

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
    offline: Callable[..., PlannerEngine],
) -> None:
    recorder = RunRecorder()
    events: list[TurnEvent] = []
    calls_ended_at_first_delta: int | None = None
    async for event in offline().astream("s1", "Hola", DEMO_CALLER, config={"callbacks": [recorder]}):
        if isinstance(event, AnswerDelta) and calls_ended_at_first_delta is None:
            calls_ended_at_first_delta = len(recorder.ended)
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
    toy_engine: Engines, reply: str, before_plan: list[str]
) -> None:
    """A direct answer written after another key is not streamed: it arrives whole once call 1 is parsed."""
    engine, _ = toy_engine(lambda _m, _i: reply)
    events, result = await streamed(engine, "s1", "Hola")
    plan_at = [event.type for event in events].index("plan")
    assert deltas(events[:plan_at]) == before_plan
    assert "".join(deltas(events)) == result.answer == "¡Hola! ¿Qué consultamos?"
    assert result.model_calls == 1 and result.recorded and result.plan_valid is True


@pytest.mark.parametrize(
    "written, types, shown",
    [
        (
            json.dumps({**ONE_OPERATION, "respuesta_directa": "NO"}),
            ["plan", "operation", "answer_delta", "turn"],
            ["Sí."],
        ),
        (
            json.dumps({"respuesta_directa": "Consulto.", **ONE_OPERATION}),
            ["answer_delta", "plan", "operation", "answer_delta", "turn"],
            ["Consulto.", "\n\nSí."],
        ),
    ],
    ids=["after-operations-never-shown", "before-operations-a-preamble"],
)
async def test_a_direct_answer_beside_operations_is_never_the_answer_and_shows_only_when_written_first(
    toy_engine: Engines, memory_store: MemoryStore, written: str, types: list[str], shown: list[str]
) -> None:
    """The prompt forbids both; a reply that writes its direct answer first and then operations anyway has
    shown that text already: the operations run, call 2's answer follows it, and is the turn's answer."""
    engine, _ = toy_engine(scripted(written, lambda _results: '{"respuesta":"Sí."}'))
    events, result = await streamed(engine, "s1", "¿Cuánto vendimos en 2025?")
    assert [e.type for e in events] == types
    assert deltas(events) == shown
    assert result.answer == "Sí." and result.model_calls == 2 and result.plan_valid is True
    assert [op.function for op in result.operations] == ["ventas_anuales"] and result.recorded
    assert [m.content for m in memory_store.history("s1")] == ["¿Cuánto vendimos en 2025?", "Sí."]


async def test_a_direct_answer_whose_stream_breaks_midway_records_nothing(
    offline: Callable[..., PlannerEngine], memory_store: MemoryStore
) -> None:
    events, result = await streamed(offline(faults=FaultConfig(mode="stream_break")), "s1", "Hola")
    assert deltas(events), "some of the direct answer was shown before the connection dropped"
    assert [e.type for e in events][-1] == "turn" and "plan" not in [e.type for e in events]
    assert result.failure == "provider" and not result.recorded and result.plan_valid is None
    assert result.answer != "".join(deltas(events))  # the failure message supersedes the partial text
    assert memory_store.history("s1") == []


async def test_a_rejected_plan_streams_its_refused_operations_then_the_explanation(
    toy_engine: Engines,
) -> None:
    engine, _ = toy_engine(scripted(plan(op("ventas_totales"), {"funcion": "mejor_cliente"})))
    events, result = await streamed(engine, "s1", "¿Cuánto vendimos?")
    assert [event.type for event in events][:3] == ["plan", "operation", "operation"]
    refused = [event.operation for event in events if isinstance(event, OperationDone)]
    assert refused == result.operations and all(op.error_kind == "invalid" for op in refused)
    assert result.failure == "invalid_plan" and result.recorded
    assert "".join(deltas(events)) == result.answer


async def test_a_failed_call_one_streams_only_the_result(
    offline: Callable[..., PlannerEngine], memory_store: MemoryStore
) -> None:
    events, result = await streamed(offline(faults=FaultConfig(mode="timeout")), "s1", TWO_OPERATIONS)
    assert [event.type for event in events] == ["turn"]
    assert result.failure == "timeout" and not result.recorded
    assert result.first_answer_ms == result.total_ms  # the reader's first text is the result's
    assert memory_store.history("s1") == []


async def test_another_users_conversation_is_refused_before_the_first_event_and_not_logged_as_a_turn(
    offline: Callable[..., PlannerEngine],
    erp: Erp,
    memory_store: MemoryStore,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="planner_mode")
    memory_store.ensure_conversation("ajena", user_id="ana")
    stream = offline().astream("ajena", TWO_OPERATIONS, caller_for(erp, "bruno"))
    with pytest.raises(ConversationAccessDenied):
        await anext(stream)
    with pytest.raises(ConversationAccessDenied):
        await offline().aask("ajena", "Hola", caller_for(erp, "bruno"))
    assert [r for r in caplog.records if r.name == "planner_mode"] == []


# -- a stream that fails midway records nothing --------------------------------------------------------------


def breaking(reply: str, finish_reason: str = "stop", break_after: int | None = None) -> StreamingChatModel:
    """Call 2 streaming ``reply`` six characters at a time and breaking off (a reset connection) after
    ``break_after`` chunks; a reply that is not cut ends with ``finish_reason`` in its last chunk."""
    return StreamingChatModel(
        lambda _m, _i: AIMessage(reply, response_metadata={"finish_reason": finish_reason}),
        piece=6,
        break_after=break_after,
        failure=ConnectionResetError,
        usage=UsageMetadata(input_tokens=100, output_tokens=30, total_tokens=130),
    )


ANSWER_JSON = json.dumps(
    {
        "respuesta": "En 2025 vendimos ₲850.000.000 en total.",
        "memoria": [{"contenido": "Interesan las ventas de 2025.", "importancia": 0.7}],
        "estado": {"tema": "ventas"},
    },
    ensure_ascii=False,
)


async def test_a_healthy_stream_of_the_fake_model_reaches_the_store(toy_engine: Engines) -> None:
    engine, _ = toy_engine(scripted(ONE_OPERATION), answer_model=breaking(ANSWER_JSON))
    events, result = await streamed(engine, "s1", "¿Cuánto vendimos en 2025?")
    assert len(deltas(events)) >= 3 and "".join(deltas(events)) == result.answer
    assert result.recorded and result.memories == ["Interesan las ventas de 2025."]
    assert result.output_tokens == 10 + 30  # the streamed call is counted: usage from its last chunk


@pytest.mark.parametrize(
    "answer_model, failure",
    [
        (breaking(ANSWER_JSON, break_after=6), "provider"),
        (breaking(ANSWER_JSON[:-40], finish_reason="length"), "model_output"),
        (breaking(ANSWER_JSON.replace('"respuesta"', '"respuesta" ', 1)[:-3]), "model_output"),
    ],
    ids=["connection-reset", "cut-at-the-cap", "unparsable"],
)
async def test_a_stream_that_fails_after_some_deltas_records_nothing(
    toy_engine: Engines, memory_store: MemoryStore, answer_model: BaseChatModel, failure: str
) -> None:
    engine, _ = toy_engine(scripted(ONE_OPERATION), answer_model=answer_model)
    memory_store.ensure_conversation("s1", user_id=DEMO_CALLER.user_id)
    events, result = await streamed(engine, "s1", "¿Cuánto vendimos en 2025?")
    assert deltas(events), "some of the answer was shown before the failure"
    assert result.failure == failure and not result.recorded and result.model_calls == 2
    assert result.answer not in "".join(deltas(events))  # the failure message supersedes the partial text
    assert memory_store.history("s1") == [] and memory_store.get_state("s1") == {}
    assert memory_store.memories("s1") == []


async def test_the_offline_models_dropped_connection_midway_records_nothing(
    offline: Callable[..., PlannerEngine], memory_store: MemoryStore
) -> None:
    broken = build_model("offline", faults=FaultConfig(mode="stream_break"))
    events, result = await streamed(offline(answer_model=broken), "s1", TWO_OPERATIONS)
    assert [event.type for event in events][:3] == ["plan", "operation", "operation"]
    assert deltas(events) and result.failure == "provider" and not result.recorded
    assert result.model_calls == 2 and result.output_tokens > 0  # the broken call still counts
    assert memory_store.history("s1") == []
    healthy = await offline().aask("s1", TWO_OPERATIONS, DEMO_CALLER)
    assert healthy.recorded
    assert [m.content for m in memory_store.history("s1")] == [TWO_OPERATIONS, healthy.answer]


async def test_a_stream_its_reader_abandons_records_nothing_and_ends_its_runs(
    offline: Callable[..., PlannerEngine], memory_store: MemoryStore
) -> None:
    recorder = RunRecorder()
    stream = offline().astream("s1", TWO_OPERATIONS, DEMO_CALLER, config={"callbacks": [recorder]})
    async for event in stream:
        if isinstance(event, AnswerDelta):
            break
    await stream.aclose()
    assert memory_store.history("s1") == []
    # Call 2's run ends once the reader leaves, and so does the turn's. The model's stream may be finalised a
    # few loop iterations after aclose() returns (its own cleanup runs on the loop), so wait for it, bounded.
    call_one, call_two = recorder.models
    for _ in range(200):
        if call_two.error and all(chain.error for chain in recorder.chains):
            break
        await asyncio.sleep(0.01)
    assert recorder.ended == [call_one] and (call_one.error, bool(call_two.error)) == (None, True)
    assert recorder.chains and all(chain.error for chain in recorder.chains)


# -- callbacks: exactly the turn's model calls, under one parent run -----------------------------------------


@pytest.mark.parametrize("entry", ENTRIES)
@pytest.mark.parametrize(
    "question, calls", [(TWO_OPERATIONS, 2), ("Hola", 1)], ids=["two-calls", "small-talk"]
)
async def test_callbacks_see_exactly_the_turns_model_calls_under_one_parent_run(
    offline: Callable[..., PlannerEngine], entry: Entry, question: str, calls: int
) -> None:
    recorder = RunRecorder()
    config: RunnableConfig = {"callbacks": [recorder], "tags": ["erp-web"], "metadata": {"tenant": "acme"}}
    result = await run_turn(offline(), entry, "cb", question, config=config)

    [turn] = recorder.chains
    assert turn.name == "planner turn" and turn.parent is None
    assert turn.inputs == {"conversation_id": "cb", "message": question}
    assert "erp-web" in turn.tags and turn.metadata["tenant"] == "acme"
    assert len(recorder.models) == calls == result.model_calls
    for model_run in recorder.models:
        assert model_run.parent == turn.run_id
        assert "erp-web" in model_run.tags and model_run.metadata["tenant"] == "acme"
    assert sorted(map(id, recorder.ended)) == sorted(map(id, recorder.models))  # every call ended
    assert turn.outputs == {"answer": result.answer, "failure": None}


@pytest.mark.parametrize("entry", ENTRIES)
async def test_a_run_name_names_the_turn_and_a_failed_turn_reports_its_failure(
    offline: Callable[..., PlannerEngine], entry: Entry
) -> None:
    recorder = RunRecorder()
    engine = offline(faults=FaultConfig(mode="provider_error"))
    config: RunnableConfig = {"callbacks": [recorder], "run_name": "pregunta web"}
    result = await run_turn(engine, entry, "cb", TWO_OPERATIONS, config=config)
    [turn] = recorder.chains
    assert turn.name == "pregunta web" and len(recorder.models) == 1
    assert turn.outputs == {"answer": result.answer, "failure": "provider"}


# -- logging: one record per finished turn ---------------------------------------------------------------


@pytest.mark.parametrize("entry", ENTRIES)
async def test_each_finished_turn_is_logged_once_with_its_fields(
    offline: Callable[..., PlannerEngine], entry: Entry, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="planner_mode")
    ok = await run_turn(offline(), entry, "log", TWO_OPERATIONS)
    failed = await run_turn(offline(faults=FaultConfig(mode="timeout")), entry, "log", TWO_OPERATIONS)

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


# -- time to the first answer token -------------------------------------------------------------------------


class FixedClient:
    """An AI client that answers with a fixed plan and answer, each call costing a fixed usage."""

    def __init__(self, plan: Plan, plan_usage: CallUsage, answer_usage: CallUsage) -> None:
        self.fixed_plan, self.plan_usage, self.answer_usage = plan, plan_usage, answer_usage

    async def plan(self, *_args: Any, **_kwargs: Any) -> AsyncIterator[str | PlanReply]:
        if self.fixed_plan.is_direct:
            yield self.fixed_plan.direct_answer or ""
        yield PlanReply(plan=self.fixed_plan, usage=self.plan_usage)

    async def answer(self, *_args: Any, **_kwargs: Any) -> AsyncIterator[str | AnswerReply]:
        yield "Vendimos "
        yield "₲850.000.000."
        yield AnswerReply(answer=Answer(respuesta="Vendimos ₲850.000.000."), usage=self.answer_usage)


@pytest.mark.parametrize("entry", ENTRIES)
@pytest.mark.parametrize(
    "planned, expected",
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
    planned: dict[str, Any],
    expected: FirstAnswerCall,
) -> None:
    one_call = CallUsage(model_calls=1)
    client = FixedClient(Plan.model_validate(planned), one_call, one_call)
    assert isinstance(client, AIClient)
    result = await run_turn(
        PlannerEngine(toy_registry, toy_erp, memory_store, client), entry, "t", "¿Ventas?"
    )
    assert result.recorded
    assert result.first_answer_call == expected
    assert (result.first_answer_ms is not None) == (entry == "astream")


# -- over HTTP -----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("entry", ENTRIES)
async def test_over_http_each_entry_point_gives_the_in_process_turn(
    registry: OperationRegistry, erp: Erp, memory_store: MemoryStore, tmp_path: Path, entry: Entry
) -> None:
    in_process = offline_engine(registry, erp, MemoryStore(f"sqlite:///{tmp_path / 'local.sqlite3'}"))
    expected = comparable(in_process.ask("h", TWO_OPERATIONS, DEMO_CALLER))
    with ServerThread(create_app(build_model("offline"), token="k")) as server:
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
    offline: Callable[..., PlannerEngine], memory_store: MemoryStore
) -> None:
    engine = offline()
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

INVENTED = "Ventas 2025: ₲987.654.321"


def answering(text: str, *memories: str) -> Any:
    def answer(_results: list[dict[str, Any]]) -> str:
        items = [{"contenido": item, "importancia": 0.8} for item in memories]
        return json.dumps({"respuesta": text, "memoria": items, "estado": {}})

    return scripted(ONE_OPERATION, answer)


def test_an_invented_figure_is_refused_with_the_erps_own_results_recorded_as_the_user_read_them(
    demo_engine: Engines, memory_store: MemoryStore
) -> None:
    planner, _ = demo_engine(answering("En 2025 vendimos ₲987.654.321.", INVENTED))
    result = planner.ask("c1", "¿Cuánto vendimos en 2025?", DEMO_CALLER)
    assert result.failure == "ungrounded" and result.ungrounded_figures == ["987.654.321"]
    assert "987.654.321" in result.answer and "- Ventas anuales, año 2025:" in result.answer
    # What the user read is what the conversation keeps, with the state the operation implies, no memory.
    assert result.recorded and [m.content for m in memory_store.history("c1")][-1] == result.answer
    assert memory_store.memories("c1") == [] and memory_store.get_state("c1")["anio"] == 2025
    total = result.operations[0].result["total"]
    assert f"total: {total:,}".replace(",", ".") in result.answer  # the ERP's figure, shown as such


async def test_a_refused_answer_streamed_to_a_reader_is_no_first_answer(demo_engine: Engines) -> None:
    planner, _ = demo_engine(answering("En 2025 vendimos ₲987.654.321.", INVENTED))
    events, result = await streamed(planner, "c1", "¿Cuánto vendimos en 2025?")
    assert "987.654.321" in "".join(deltas(events)) and result.failure == "ungrounded"
    # what the user keeps is the ERP's refusal and rendering, which came with the result
    assert result.first_answer_ms == result.total_ms


def test_a_figure_the_erp_returned_passes_however_it_is_written(demo_engine: Engines) -> None:
    truth = demo_engine(scripted(ONE_OPERATION))[0].ask("c0", "¿Y en 2025?", DEMO_CALLER).operations[0]
    written = f"En 2025 vendimos ₲{truth.result['total']:,}".replace(",", ".")
    result = demo_engine(answering(written))[0].ask("c1", "¿Y en 2025?", DEMO_CALLER)
    assert result.failure is None and result.ungrounded_figures == [] and result.recorded


@pytest.mark.parametrize(
    ("grounding", "flagged", "memories"),
    [("flag", ["987.654.321"], ["Hablamos de ventas."]), ("off", [], [INVENTED, "Hablamos de ventas."])],
)
def test_flag_and_off_show_and_record_the_answer_and_flag_never_remembers_an_invented_figure(
    demo_engine: Engines, grounding: str, flagged: list[str], memories: list[str]
) -> None:
    reply = answering("Vendimos ₲987.654.321.", INVENTED, "Hablamos de ventas.")
    result = demo_engine(reply, grounding=grounding)[0].ask("c1", "¿Ventas 2025?", DEMO_CALLER)
    assert result.failure is None and result.recorded and result.answer == "Vendimos ₲987.654.321."
    assert (result.ungrounded_figures, result.memories) == (flagged, memories)


def test_an_unknown_policy_is_refused_at_construction(demo_engine: Engines) -> None:
    with pytest.raises(ValueError, match="grounding policy"):
        demo_engine(answering("x"), grounding="maybe")


def test_through_the_ai_server_the_erp_still_refuses_an_invented_figure(
    registry: OperationRegistry, erp: Erp, memory_store: MemoryStore
) -> None:
    model = text_model(answering("En 2025 vendimos ₲987.654.321.", INVENTED))
    with ServerThread(create_app(model)) as server, HttpAIClient([server.url], timeout=30) as client:
        result = PlannerEngine(registry, erp, memory_store, client).ask(
            "c1", "¿Cuánto vendimos en 2025?", DEMO_CALLER
        )
    assert result.failure == "ungrounded" and result.ungrounded_figures == ["987.654.321"]
    assert result.recorded and memory_store.memories("c1") == []
    assert "987.654.321" not in "".join(m.content for m in memory_store.history("c1") if m.role == "user")
    assert f"total: {result.operations[0].result['total']:,}".replace(",", ".") in result.answer


# -- prompt-cache hits: each call's system message is the same every turn, so the next turn reuses it ------
# (the offline model's ``cache_read`` models a prefix cache by whole blocks: stand_ins.offline._cache)


FIRST = "¿Cuánto vendimos en 2025?"
SECOND = "¿Y en 2024?"


def test_the_second_turn_reuses_both_calls_system_messages(
    registry: OperationRegistry, erp: Erp, memory_store: MemoryStore
) -> None:
    engine = PlannerEngine(registry, erp, memory_store, PlannerAI(OfflineSalesModel()))
    recorder = RunRecorder()
    first = engine.ask("c", FIRST, DEMO_CALLER, config={"callbacks": [recorder]})
    second = engine.ask("c", SECOND, DEMO_CALLER, config={"callbacks": [recorder]})

    assert [cached for _, cached in recorder.usages[:2]] == [0, 0]  # call 1 and call 2 share no prefix
    assert first.cached_input_tokens == 0
    assert all(0 < cached < input_tokens for input_tokens, cached in recorder.usages[2:])
    assert second.cached_input_tokens == sum(cached for _, cached in recorder.usages[2:])
    assert second.model_calls == 2 and second.cached_input_tokens < second.input_tokens


def test_no_cache_no_cached_tokens(registry: OperationRegistry, erp: Erp, memory_store: MemoryStore) -> None:
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


@pytest.fixture
def sqlite_store(tmp_path: Path) -> Iterator[MemoryStore]:
    """``plan_valid`` is decided before anything is stored: these tests need no PostgreSQL variant."""
    memory = MemoryStore(f"sqlite:///{tmp_path / 'memory.sqlite3'}")
    yield memory
    memory.close()


@pytest.mark.parametrize("entry", ENTRIES)
@pytest.mark.parametrize(
    "written, valid, failure",
    [
        ({"respuesta_directa": "¡Hola!"}, True, None),
        (plan(), True, None),
        (ONE_OPERATION, True, None),
        (plan(op("ventas_totales", anio=2025)), False, "invalid_plan"),
        (plan(op("ventas_anuales", anio="el año pasado")), False, "invalid_plan"),
        (plan(op("compras_cliente", cliente=ref("op9.cliente"), anio=2025)), False, "invalid_plan"),
        (plan(*[op("ventas_anuales", anio=2000 + i) for i in range(3)]), False, "invalid_plan"),
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
    written: dict[str, Any] | str,
    valid: bool,
    failure: str | None,
) -> None:
    engine, _ = make_engine(scripted(written), toy_registry, toy_erp, sqlite_store, max_operations=2)
    result = await run_turn(engine, entry, "c1", "¿Cuánto vendimos?")
    assert (result.plan_valid, result.failure) == (valid, failure)


@pytest.mark.parametrize("entry", ENTRIES)
async def test_a_stream_cut_at_the_output_cap_is_an_invalid_plan_and_a_dropped_one_is_unknown(
    toy_registry: OperationRegistry, toy_erp: Erp, sqlite_store: MemoryStore, entry: Entry
) -> None:
    """The offline model's faults: a plan cut at its output cap was read (and is no plan); a connection that
    drops midway is the provider's failure."""
    question = "¿Cuánto vendimos en 2025 y cuál fue nuestro mejor cliente?"
    cut = PlannerEngine(toy_registry, toy_erp, sqlite_store, PlannerAI(build_model("offline", max_tokens=5)))
    result = await run_turn(cut, entry, "c1", question)
    assert (result.plan_valid, result.failure) == (False, "model_output")
    broken = PlannerAI(build_model("offline", faults=FaultConfig(mode="stream_break")))
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
    engine, _ = make_engine(
        scripted(plan(op("compras_cliente", cliente="Empresa ABC", anio=2025))), registry, erp, memory_store
    )
    refused = await run_turn(engine, entry, "c1", "¿Y ABC?", bruno)
    assert [op.error_kind for op in refused.operations] == ["refused"]
    assert refused.plan_valid is True
    assert "ventas_por_categoria" not in registry.names(bruno)
    engine, _ = make_engine(
        scripted(plan(op("ventas_por_categoria", anio=2025))), registry, erp, memory_store
    )
    result = await run_turn(engine, entry, "c2", "¿Y?", bruno)
    assert (result.plan_valid, result.failure) == (False, "invalid_plan")


def test_the_offline_planner_writes_valid_plans_on_small_talk_and_questions(
    toy_registry: OperationRegistry, toy_erp: Erp, sqlite_store: MemoryStore
) -> None:
    engine = PlannerEngine(toy_registry, toy_erp, sqlite_store, PlannerAI(build_model("offline")))
    for question in ("Hola", "¿Cuánto vendimos en 2025?", "¿Qué tiempo hará mañana?"):
        assert engine.ask("c1", question, DEMO_CALLER).plan_valid is True, question
