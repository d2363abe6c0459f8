"""The article's dialogue through the agent with the real offline model, sales registry, ERP and store.

Observed call counts (the offline model batches independent tool calls in one step):
2 model calls for one batch of tool calls (one or several in parallel), 3 when a call needs an earlier result.
"""

from __future__ import annotations

from typing import Any

import pytest

from benchmarks.stand_ins.faults import FAULT_MODES, REPLY_FAULTS, FaultConfig, FaultMode
from benchmarks.stand_ins.offline import OfflineSalesModel
from shared.failures import is_recorded
from shared.security import DEMO_CALLER
from tests.fakes import RunRecorder
from toolcalling_mode import ToolCallingEngine

# (question, model calls, operations, fragments of the answer)
DIALOGUE: list[tuple[str, int, list[str], list[str]]] = [
    ("¿Cuánto vendimos en 2025?", 2, ["ventas_anuales"], ["₲850.000.000"]),
    (
        "¿Cuánto vendimos en 2025 y cuál fue nuestro mejor cliente?",
        2,
        ["ventas_anuales", "mejor_cliente"],
        ["₲850.000.000", "Empresa ABC"],
    ),
    ("¿Cuál fue mi mejor cliente?", 2, ["mejor_cliente"], ["Empresa ABC"]),
    ("¿Y cuánto compró?", 2, ["compras_cliente"], ["Empresa ABC", "₲120.000.000"]),
    (
        "¿Cuánto compró nuestro mejor cliente en 2025?",
        3,
        ["mejor_cliente", "compras_cliente"],
        ["Empresa ABC", "₲120.000.000"],
    ),
]


def offline_engine(
    erp: Any, registry: Any, store: Any, **options: Any
) -> tuple[ToolCallingEngine, RunRecorder]:
    recorder = RunRecorder()
    model = OfflineSalesModel(callbacks=[recorder], faults=options.pop("faults", None))
    return ToolCallingEngine(registry, erp, store, model, **options), recorder


@pytest.mark.parametrize("policy", ["windowed", "full_history"])
@pytest.mark.parametrize("structured", [False, True])
def test_the_article_dialogue(
    erp: Any, registry: Any, memory_store: Any, policy: str, structured: bool
) -> None:
    engine, _ = offline_engine(erp, registry, memory_store, policy=policy, structured=structured)

    for question, calls, operations, fragments in DIALOGUE:
        result = engine.ask("articulo", question, DEMO_CALLER)

        assert result.model_calls == calls, question
        assert [op.function for op in result.operations] == operations, question
        assert all(op.ok for op in result.operations), question
        for fragment in fragments:
            assert fragment in result.answer, (question, result.answer)
        assert result.errors == [], question
        assert result.recorded

    assert result.operations[1].parameters == {"cliente": "Empresa ABC", "anio": 2025}
    finals = [m for m in memory_store.history("articulo") if m.is_final_answer]
    assert len(finals) == len(DIALOGUE)


def test_structured_answers_store_the_erp_state_and_the_models_topic(
    erp: Any, registry: Any, memory_store: Any
) -> None:
    engine, _ = offline_engine(erp, registry, memory_store, structured=True)

    result = engine.ask("c1", "¿Cuánto vendimos en 2025 y cuál fue nuestro mejor cliente?", DEMO_CALLER)

    assert result.state == {
        "tema": "ventas",  # the model's
        "anio": 2025,  # the ERP's, from the operations that ran
        "cliente_actual": "Empresa ABC",
        "ultimas_operaciones": "ventas_anuales(anio=2025); mejor_cliente(anio=2025)",
    }
    assert result.memories == []  # asked to remember only what the results and the state do not say
    assert memory_store.get_state("c1") == result.state


def test_windowed_prompt_is_bounded(erp: Any, registry: Any, memory_store: Any) -> None:
    windowed, w_recorder = offline_engine(erp, registry, memory_store, policy="windowed")
    full, f_recorder = offline_engine(erp, registry, memory_store, policy="full_history")
    for question, *_ in DIALOGUE:
        last_windowed = windowed.ask("w", question, DEMO_CALLER)
        last_full = full.ask("f", question, DEMO_CALLER)

    first_call_of_last_turn = w_recorder.prompts[-last_windowed.model_calls]
    assert [m.type for m in first_call_of_last_turn] == ["system", "human"]
    human = str(first_call_of_last_turn[1].content)  # the windowed context travels before the question
    assert f"Usuario: {DIALOGUE[3][0]}" in human
    assert f"Usuario: {DIALOGUE[2][0]}" not in human
    assert last_windowed.input_tokens < last_full.input_tokens
    assert len(f_recorder.prompts[-last_full.model_calls]) > 10


BROKEN_CALLS = [mode for mode in FAULT_MODES if mode not in (*REPLY_FAULTS, "timeout", "stream_break")]
"""The faults that break one model call outright (a reply rewritten, a timeout or a stream cut are others)."""


@pytest.mark.parametrize("structured", [False, True])
@pytest.mark.parametrize("mode", BROKEN_CALLS)
def test_every_fault_mode_ends_in_a_clear_answer_recorded_only_if_the_model_finished(
    erp: Any, registry: Any, memory_store: Any, mode: FaultMode, structured: bool
) -> None:
    engine, _ = offline_engine(
        erp, registry, memory_store, faults=FaultConfig(mode=mode), structured=structured
    )

    result = engine.ask("c1", DIALOGUE[1][0], DEMO_CALLER)

    assert result.errors
    assert result.answer
    assert (result.failure == "provider") == (mode == "provider_error")
    assert result.recorded == is_recorded(result.failure)  # the one recording policy of both modes
    history = memory_store.history("c1")
    if result.recorded:
        assert history[0].content == DIALOGUE[1][0]
        assert history[-1].is_final_answer and history[-1].content == result.answer
    else:
        assert history == []


def test_a_turn_with_malformed_tool_calls_replays_cleanly(erp: Any, registry: Any, memory_store: Any) -> None:
    faulty, _ = offline_engine(
        erp, registry, memory_store, policy="full_history", faults=FaultConfig(mode="malformed_json")
    )
    faulty.ask("c1", DIALOGUE[1][0], DEMO_CALLER)
    clean, recorder = offline_engine(erp, registry, memory_store, policy="full_history")

    result = clean.ask("c1", DIALOGUE[0][0], DEMO_CALLER)

    assert result.errors == []
    replay = recorder.prompts[0]
    calls = {c["id"] for m in replay if m.type == "ai" for c in getattr(m, "tool_calls", [])}
    results = {getattr(m, "tool_call_id", None) for m in replay if m.type == "tool"}
    assert calls == results and calls
