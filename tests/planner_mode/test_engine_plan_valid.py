"""``TurnResult.plan_valid`` in planner mode: whether call 1's output parsed as a plan and passed validation.

``True`` for a plan the ERP accepted (a direct answer and an empty plan included), ``False`` when call 1's
output could not be read as a plan or validation rejected it, ``None`` when call 1 failed in the provider (no
output was read). What happens afterwards (call 2 failing, the ERP refusing an operation on the caller's data
scope) does not change it. ``ask``, ``aask`` and ``astream`` agree.

The stores here are SQLite files: ``plan_valid`` is decided before anything is stored, so these tests do not
need the PostgreSQL variants the engine tests run.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import BaseMessage

from benchmarks.stand_ins.faults import FaultConfig
from planner_mode import PlannerAI, PlannerEngine, PlannerLimits
from shared.erp.database import Erp
from shared.erp.users import caller_for
from shared.llm import build_chat_model
from shared.memory.store import MemoryStore
from shared.operations import sales_registry
from shared.operations.registry import OperationRegistry
from shared.security import DEMO_CALLER
from tests.fakes import CallInfo, ModelFunction
from tests.planner_mode.planner_fakes import is_plan_request, scripted, text_model
from tests.planner_mode.test_engine import ENTRIES, Entry, run_turn


def operation(funcion: str, **parametros: Any) -> dict[str, Any]:
    return {"funcion": funcion, "parametros": parametros}


VALID = {"operaciones": [operation("ventas_anuales", anio=2025)]}


@pytest.fixture
def store(tmp_path: Path) -> Iterator[MemoryStore]:
    memory = MemoryStore(f"sqlite:///{tmp_path / 'memory.sqlite3'}")
    yield memory
    memory.close()


def engine_for(
    reply: ModelFunction, registry: OperationRegistry, erp: Erp, store: MemoryStore, **limits: Any
) -> PlannerEngine:
    return PlannerEngine(registry, erp, store, PlannerAI(text_model(reply)), PlannerLimits(**limits))


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
    store: MemoryStore,
    entry: Entry,
    plan: dict[str, Any] | str,
    valid: bool,
    failure: str | None,
) -> None:
    engine = engine_for(scripted(plan), toy_registry, toy_erp, store, max_operations=2)
    result = await run_turn(engine, entry, "c1", "¿Cuánto vendimos?")
    assert (result.plan_valid, result.failure) == (valid, failure)


def failing(call: int, error: Exception) -> ModelFunction:
    """The valid plan and an echo answer, except that call number ``call`` (1 or 2) raises ``error``."""

    def reply(messages: list[BaseMessage], info: CallInfo) -> str:
        if (1 if is_plan_request(messages) else 2) == call:
            raise error
        return scripted(VALID)(messages, info)

    return reply


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
    store: MemoryStore,
    entry: Entry,
    call: int,
    error: Exception,
    valid: bool | None,
    failure: str,
) -> None:
    engine = engine_for(failing(call, error), toy_registry, toy_erp, store)
    result = await run_turn(engine, entry, "c1", "¿Cuánto vendimos?")
    assert (result.plan_valid, result.failure, result.recorded) == (valid, failure, False)


@pytest.mark.parametrize("entry", ENTRIES)
async def test_a_stream_cut_at_the_output_cap_is_an_invalid_plan_and_a_dropped_one_is_unknown(
    toy_registry: OperationRegistry, toy_erp: Erp, store: MemoryStore, entry: Entry
) -> None:
    """The offline model's faults: a plan cut at its output cap was read (and is no plan); a connection that
    drops midway is the provider's failure."""
    question = "¿Cuánto vendimos en 2025 y cuál fue nuestro mejor cliente?"
    cut = PlannerEngine(toy_registry, toy_erp, store, PlannerAI(build_chat_model("offline", max_tokens=5)))
    result = await run_turn(cut, entry, "c1", question)
    assert (result.plan_valid, result.failure) == (False, "model_output")
    broken = PlannerAI(build_chat_model("offline", faults=FaultConfig(mode="stream_break")))
    result = await run_turn(PlannerEngine(toy_registry, toy_erp, store, broken), entry, "c2", question)
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
    engine = engine_for(scripted(plan), registry, erp, memory_store)
    refused = await run_turn(engine, entry, "c1", "¿Y ABC?", bruno)
    assert [op.error_kind for op in refused.operations] == ["refused"]
    assert refused.plan_valid is True
    forbidden = {"operaciones": [operation("ventas_por_categoria", anio=2025)]}
    assert "ventas_por_categoria" not in registry.names(bruno)
    engine = engine_for(scripted(forbidden), registry, erp, memory_store)
    result = await run_turn(engine, entry, "c2", "¿Y?", bruno)
    assert (result.plan_valid, result.failure) == (False, "invalid_plan")


def test_the_offline_planner_writes_valid_plans_on_small_talk_and_questions(
    toy_registry: OperationRegistry, toy_erp: Erp, store: MemoryStore
) -> None:
    engine = PlannerEngine(toy_registry, toy_erp, store, PlannerAI(build_chat_model("offline")))
    for question in ("Hola", "¿Cuánto vendimos en 2025?", "¿Qué tiempo hará mañana?"):
        assert engine.ask("c1", question, DEMO_CALLER).plan_valid is True, question
