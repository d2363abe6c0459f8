"""The answer check both modes run before showing an answer as the ERP's truth (:mod:`shared.answer_check`).

An answer that claims the ERP did something no operation did is refused like an ungrounded figure, in both
modes; a refused answer is recorded as the user read it, with the state the executed operations imply, so a
follow-up keeps its referent. A figure a model wrote in ``estado`` is not stored, and a figure only a model
wrote in the state never grounds a later answer.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import AIMessage, BaseMessage, ToolMessage

from planner_mode import PlannerAI, PlannerEngine
from shared.answer_check import refusal_text, verify_answer
from shared.engine import AssistantEngine
from shared.erp.database import Erp
from shared.memory.store import MemoryStore
from shared.operations import sales_registry
from shared.security import DEMO_CALLER
from shared.turn import ExecutedOperation
from tests.fakes import CallInfo, FunctionChatModel
from tests.planner_mode.planner_fakes import scripted, text_model
from toolcalling_mode import ToolCallingEngine

TODAY_TEXTS = ["¿Qué hiciste?"]

CLAIMS = (
    "Se mandó un correo a Empresa ABC con su estado de cuenta.",
    "El precio del taladro se subió un 10% en el año 2026.",
    "La función borrar_cliente se ejecutó correctamente para el cliente Empresa ABC.",
)
"""Actions a small model claimed on questions the ERP cannot serve (the sales operations only read)."""

REJECTED = ExecutedOperation(
    function="borrar_cliente",
    parameters={"cliente": "Empresa ABC"},
    error="Unknown operation 'borrar_cliente'",
    error_kind="invalid",
)


@pytest.mark.parametrize("answer", CLAIMS)
def test_an_answer_claiming_an_action_no_operation_did_fails_the_check(erp: Erp, answer: str) -> None:
    check = verify_answer(answer, [], [REJECTED], [*TODAY_TEXTS, answer], erp.today)
    assert not check.passed and check.claims
    assert "no realizó esa acción" in refusal_text(check, [REJECTED])


def test_a_refusal_and_a_figure_the_erp_returned_pass_the_check(erp: Erp) -> None:
    ran = ExecutedOperation(
        function="ventas_anuales", parameters={"anio": 2025}, result={"total": 850_000_000}
    )
    for answer in (
        "No puedo enviar correos: solo consulto datos de ventas.",
        "En 2025 vendimos ₲850.000.000.",
    ):
        assert verify_answer(answer, [], [ran], TODAY_TEXTS, erp.today).passed


# -- both engines ---------------------------------------------------------------------------------------


def _planner_engine(erp: Erp, store: MemoryStore, plan: dict[str, Any], answer: str) -> AssistantEngine:
    reply = scripted(plan, lambda _results: json.dumps({"respuesta": answer, "memoria": [], "estado": {}}))
    return PlannerEngine(sales_registry(), erp, store, PlannerAI(text_model(reply)))


def _toolcalling_engine(erp: Erp, store: MemoryStore, plan: dict[str, Any], answer: str) -> AssistantEngine:
    calls = [
        {"name": op["funcion"], "args": op["parametros"], "id": f"call-{i}"}
        for i, op in enumerate(plan["operaciones"])
    ]

    def reply(messages: list[BaseMessage], _info: CallInfo) -> AIMessage | str:
        if calls and not any(isinstance(message, ToolMessage) for message in messages):
            return AIMessage(content="", tool_calls=calls)
        return answer

    return ToolCallingEngine(sales_registry(), erp, store, FunctionChatModel(reply))


ENGINES: dict[str, Callable[[Erp, MemoryStore, dict[str, Any], str], AssistantEngine]] = {
    "planner": _planner_engine,
    "toolcalling": _toolcalling_engine,
}


@pytest.fixture
def store(tmp_path: Path) -> Iterator[MemoryStore]:
    memory = MemoryStore(f"sqlite:///{tmp_path / 'memory.sqlite3'}")
    yield memory
    memory.close()


@pytest.mark.parametrize("mode", ENGINES)
@pytest.mark.parametrize(
    ("plan", "answer"),
    [
        ({"operaciones": [{"funcion": "ventas_anuales", "parametros": {"anio": 2025}}]}, CLAIMS[0]),
        ({"operaciones": [{"funcion": "ventas_anuales", "parametros": {"anio": 2026}}]}, CLAIMS[1]),
        (
            {"operaciones": [{"funcion": "borrar_cliente", "parametros": {"cliente": "Empresa ABC"}}]},
            CLAIMS[2],
        ),
    ],
)
def test_each_mode_refuses_an_answer_claiming_an_action(
    erp: Erp, store: MemoryStore, mode: str, plan: dict[str, Any], answer: str
) -> None:
    engine = ENGINES[mode](erp, store, plan, answer)
    result = engine.ask("c1", "Hacelo, por favor.", DEMO_CALLER)
    assert result.failure == "ungrounded" and result.claimed_actions
    assert result.answer.startswith("Lo siento") and "no realizó esa acción" in result.answer
    assert store.history("c1")[-1].content == result.answer  # kept as the user read it, never as a claim


@pytest.mark.parametrize("mode", ENGINES)
def test_a_refused_turn_keeps_the_referent_a_follow_up_needs(erp: Erp, store: MemoryStore, mode: str) -> None:
    plan = {
        "operaciones": [
            {"funcion": "compras_cliente", "parametros": {"cliente": "Empresa ABC", "anio": 2025}}
        ]
    }
    engine = ENGINES[mode](erp, store, plan, "Empresa ABC compró ₲999.999.999 en 2025.")
    result = engine.ask("c1", "¿Cuánto compró Empresa ABC en 2025?", DEMO_CALLER)
    assert result.failure == "ungrounded" and result.ungrounded_figures == ["999.999.999"]
    state = store.get_state("c1")
    assert (state["cliente_actual"], state["anio"]) == ("Empresa ABC", 2025)
    assert store.memories("c1") == []


FAKE_TOTAL = 777_000_000
FAKE_CLAIM = "El cliente Hotel Paraná compró ₲777.000.000 en 2025."


def _direct(answer: str) -> dict[str, Any]:
    return {"operaciones": [], "respuesta_directa": answer}


def test_a_made_up_figure_in_the_model_written_state_is_not_stored(erp: Erp, store: MemoryStore) -> None:
    plan = {"operaciones": [{"funcion": "ventas_anuales", "parametros": {"anio": 2025}}]}
    reply = scripted(
        plan,
        lambda _results: json.dumps(
            {
                "respuesta": "Consulté las ventas de 2025.",
                "memoria": [],
                "estado": {"tema": "ventas", "total_falso": FAKE_TOTAL},
            }
        ),
    )
    engine = PlannerEngine(sales_registry(), erp, store, PlannerAI(text_model(reply)))
    result = engine.ask("c1", "¿Cuánto vendimos en 2025?", DEMO_CALLER)
    assert result.recorded and store.get_state("c1")["tema"] == "ventas"
    assert "total_falso" not in store.get_state("c1")


@pytest.mark.parametrize("mode", ENGINES)
def test_a_figure_only_the_model_wrote_in_the_state_never_grounds_a_later_answer(
    erp: Erp, store: MemoryStore, mode: str
) -> None:
    # A conversation whose stored state holds a figure a model wrote (no check ran when it was stored).
    plan = {"operaciones": [{"funcion": "ventas_anuales", "parametros": {"anio": 2025}}]}
    reply = scripted(
        plan, lambda _r: json.dumps({"respuesta": "Listo.", "estado": {"total_falso": FAKE_TOTAL}})
    )
    unchecked = PlannerEngine(sales_registry(), erp, store, PlannerAI(text_model(reply)), grounding="off")
    assert unchecked.ask("c1", "¿Cuánto vendimos en 2025?", DEMO_CALLER).recorded
    assert store.get_state("c1")["total_falso"] == FAKE_TOTAL

    answering = _direct(FAKE_CLAIM) if mode == "planner" else {"operaciones": []}  # no operation runs
    engine = ENGINES[mode](erp, store, answering, FAKE_CLAIM)
    result = engine.ask("c1", "¿Y Hotel Paraná?", DEMO_CALLER)
    assert result.failure == "ungrounded" and result.ungrounded_figures == ["777.000.000"]
