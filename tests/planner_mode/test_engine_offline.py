"""The planner on the real demo ERP, sales registry and memory store, driven by the offline model.

The article's dialogue verbatim, the dependent ``$ref`` question, small talk, and every fault mode of the
offline model: each turn gives a clean answer with at most two model calls and leaves the store consistent.
"""

from __future__ import annotations

from typing import Any, get_args

import pytest

from benchmarks.stand_ins.faults import FaultConfig, FaultMode
from planner_mode import PlannerAI, PlannerEngine
from shared.erp.database import Erp
from shared.failures import is_recorded
from shared.llm import build_chat_model
from shared.memory.store import MemoryStore
from shared.operations.registry import OperationRegistry
from shared.security import DEMO_CALLER


def offline_engine(
    registry: OperationRegistry, erp: Erp, store: MemoryStore, **options: Any
) -> PlannerEngine:
    return PlannerEngine(registry, erp, store, PlannerAI(build_chat_model("offline", **options)))


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
    assert [op.funcion for op in second.operations] == ["ventas_anuales", "mejor_cliente"]
    assert all(op.ok for op in second.operations)
    assert "₲850.000.000" in second.answer and "Empresa ABC" in second.answer
    assert second.model_calls == 2

    third = engine.ask("articulo", "¿Cuál fue mi mejor cliente?", DEMO_CALLER)
    assert "Empresa ABC" in third.answer
    assert memory_store.get_state("articulo")["cliente_actual"] == "Empresa ABC"

    fourth = engine.ask("articulo", "¿Y cuánto compró?", DEMO_CALLER)
    [operation] = fourth.operations
    assert operation.funcion == "compras_cliente"
    assert operation.parametros == {"cliente": "Empresa ABC", "anio": 2025}  # from the stored state, no $ref
    assert "₲120.000.000" in fourth.answer
    assert fourth.model_calls == 2
    assert [m.role for m in memory_store.history("articulo")] == ["user", "assistant"] * 4


def test_a_dependent_question_uses_a_ref_and_still_two_calls(
    registry: OperationRegistry, erp: Erp, memory_store: MemoryStore
) -> None:
    result = offline_engine(registry, erp, memory_store).ask(
        "dep", "¿Cuánto compró nuestro mejor cliente de 2025?", DEMO_CALLER
    )
    assert result.plan is not None
    refs = [op["parametros"].get("cliente") for op in result.plan["operaciones"]]
    assert {"$ref": "op1.cliente"} in refs
    assert result.operations[-1].parametros["cliente"] == "Empresa ABC"
    assert "₲120.000.000" in result.answer
    assert result.model_calls == 2


def test_small_talk_costs_one_call(registry: OperationRegistry, erp: Erp, memory_store: MemoryStore) -> None:
    result = offline_engine(registry, erp, memory_store).ask("hola", "Hola", DEMO_CALLER)
    assert result.model_calls == 1
    assert result.operations == [] and result.answer
    assert result.recorded


def test_a_latency_profile_reports_simulated_model_time(
    registry: OperationRegistry, erp: Erp, memory_store: MemoryStore
) -> None:
    result = offline_engine(registry, erp, memory_store, latency_profile="gpu-8b").ask(
        "lat", "¿Cuánto vendimos en 2025?", DEMO_CALLER
    )
    assert result.simulated_model_ms is not None and result.simulated_model_ms > 0
    assert result.input_tokens > 0 and result.output_tokens > 0


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
