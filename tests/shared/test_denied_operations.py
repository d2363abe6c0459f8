"""A missing permission is said, not hidden: both modes tell the model which operations the user may not run
(names and descriptions, never data), so a salesperson asking for one hears "no tiene permiso" instead of an
answer about something else; the manager's prompts carry no such section."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from langchain_core.messages import BaseMessage

from benchmarks.stand_ins import build_model
from planner_mode import PlannerAI, PlannerEngine
from shared.engine import AssistantEngine
from shared.erp.database import Erp
from shared.erp.users import caller_for
from shared.memory.store import MemoryStore
from shared.operations import sales_registry
from shared.security import Caller
from tests.fakes import CallInfo, FunctionChatModel
from tests.planner_mode.planner_fakes import text_model
from toolcalling_mode import ToolCallingEngine

SECTION = "Operaciones sin permiso para este usuario"
REFUSAL = "Usted no tiene permiso para consultar las ventas por categoría."


@pytest.fixture
def store(tmp_path: Path) -> Iterator[MemoryStore]:
    memory = MemoryStore(f"sqlite:///{tmp_path / 'memory.sqlite3'}")
    yield memory
    memory.close()


def _engines(erp: Erp, store: MemoryStore) -> dict[str, tuple[AssistantEngine, FunctionChatModel]]:
    def planner_reply(_messages: list[BaseMessage], _info: CallInfo) -> str:
        return '{"respuesta_directa": "' + REFUSAL + '"}'

    planner_model = text_model(planner_reply)
    tool_model = FunctionChatModel(lambda _messages, _info: REFUSAL)
    return {
        "planner": (PlannerEngine(sales_registry(), erp, store, PlannerAI(planner_model)), planner_model),
        "toolcalling": (ToolCallingEngine(sales_registry(), erp, store, tool_model), tool_model),
    }


@pytest.mark.parametrize("mode", ["planner", "toolcalling"])
@pytest.mark.parametrize(("user", "told"), [("ana", True), ("gerente", False)])
def test_each_mode_tells_the_model_which_operations_the_user_may_not_run(
    erp: Erp, store: MemoryStore, mode: str, user: str, told: bool
) -> None:
    engine, model = _engines(erp, store)[mode]
    result = engine.ask("c1", "Dame las ventas por categoría de 2025.", caller_for(erp, user))
    prompt = "\n".join(str(message.content) for message in model.calls[0].messages)
    assert (SECTION in prompt) is told
    assert ('"ventas_por_categoria":' in prompt) is told
    assert result.failure is None and result.answer == REFUSAL and result.operations == []


@pytest.mark.parametrize("mode", ["planner", "toolcalling"])
def test_a_scoped_caller_the_erp_does_not_know_hears_so_never_zero_sales(
    erp: Erp, store: MemoryStore, mode: str
) -> None:
    model = build_model("offline")
    engine: AssistantEngine = (
        PlannerEngine(sales_registry(), erp, store, PlannerAI(model))
        if mode == "planner"
        else ToolCallingEngine(sales_registry(), erp, store, model)
    )

    result = engine.ask("c1", "¿Cuánto vendimos en 2025?", Caller(user_id="zoe", roles=frozenset({"ventas"})))

    assert [(op.function, op.error_kind) for op in result.operations] == [("ventas_anuales", "refused")]
    assert "El usuario 'zoe' no figura entre los usuarios del ERP" in (result.operations[0].error or "")
    assert "no figura entre los usuarios del ERP" in result.answer and "₲0" not in result.answer
