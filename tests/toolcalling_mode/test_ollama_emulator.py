"""The agent through the real ``ChatOllama`` client and the Ollama emulator, over loopback sockets."""

from __future__ import annotations

from typing import Any

from langchain_ollama import ChatOllama

from benchmarks.stand_ins.emulators import start_emulator
from shared.security import DEMO_CALLER
from tests.fakes import FunctionChatModel
from tests.toolcalling_mode.toolcalling_fakes import toy_registry, two_parallel_tools
from toolcalling_mode import ToolCallingEngine


def test_one_multi_tool_turn_through_chat_ollama(toy_erp: Any, memory_store: Any) -> None:
    backing = FunctionChatModel(two_parallel_tools)
    with start_emulator("ollama", model=backing) as base_url:
        client = ChatOllama(model="llama3.1:8b", base_url=base_url, temperature=0)
        engine = ToolCallingEngine(toy_registry(), toy_erp, memory_store, client, policy="full_history")

        first = engine.ask("c1", "¿Cuánto vendimos en 2025 y quién fue el mejor cliente?", DEMO_CALLER)
        second = engine.ask("c1", "Repite eso, por favor.", DEMO_CALLER)

    assert first.answer == "En 2025 vendimos 850.000.000 y el mejor cliente fue ACME S.A.."
    assert first.model_calls == 2
    assert [op.function for op in first.operations] == ["ventas_anuales", "mejor_cliente"]
    assert all(op.ok for op in first.operations)
    assert first.input_tokens > 0 and first.output_tokens > 0
    assert first.errors == []
    # The backing model saw the tools on the wire, the tool results, then the replayed history.
    assert set(backing.calls[0].tool_names) == {"ventas_anuales", "mejor_cliente", "compras_cliente"}
    assert str(backing.calls[0].messages[-1].content).startswith("Fecha de hoy: 2026-11-30\n")
    assert [m.type for m in backing.calls[1].messages[-2:]] == ["tool", "tool"]
    assert second.errors == []
    assert [m.type for m in backing.calls[2].messages[1:]] == ["human", "ai", "tool", "tool", "ai", "human"]
    assert "- cliente_actual: ACME S.A.\n" in str(backing.calls[2].messages[-1].content)  # the stored state
    assert [m.role for m in memory_store.history("c1")] == [
        *["user", "assistant", "tool", "tool", "assistant"],
        *["user", "assistant", "tool", "tool", "assistant"],
    ]


def test_the_offline_model_behind_the_emulator_answers_a_multi_tool_turn(demo_engine: Any) -> None:
    with start_emulator("ollama") as base_url:
        client = ChatOllama(model="llama3.1:8b", base_url=base_url, temperature=0)
        engine = demo_engine(client)

        result = engine.ask("c1", "¿Cuánto vendimos en 2025 y cuál fue nuestro mejor cliente?", DEMO_CALLER)

    assert result.model_calls == 2
    assert [op.function for op in result.operations] == ["ventas_anuales", "mejor_cliente"]
    assert "₲850.000.000" in result.answer and "Empresa ABC" in result.answer
    assert result.errors == []
