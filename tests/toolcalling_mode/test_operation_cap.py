"""The per-turn operation cap (:data:`shared.bounds.MAX_OPERATIONS_PER_TURN`, the planner's plan cap): a step
whose tool calls would take the turn past it ends the turn as ``limit`` before any of them runs, whether the
calls are native or written as text, so no reply makes the ERP work or the next request grow unbounded."""

from __future__ import annotations

import json
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, ToolMessage

from shared.bounds import MAX_OPERATIONS_PER_TURN
from shared.security import DEMO_CALLER
from tests.fakes import CallInfo, FunctionChatModel


def _calls(years: range) -> list[dict[str, Any]]:
    return [{"name": "ventas_anuales", "args": {"anio": year}, "id": f"c{year}"} for year in years]


def _steps(*steps: list[dict[str, Any]] | str) -> FunctionChatModel:
    """A model that answers step ``n`` of the turn with ``steps[n]`` (tool calls, or text), then prose."""

    def reply(messages: list[BaseMessage], _info: CallInfo) -> AIMessage | str:
        step = sum(isinstance(m, AIMessage) for m in messages)
        if step >= len(steps):
            return "Listo."
        planned = steps[step]
        return planned if isinstance(planned, str) else AIMessage(content="", tool_calls=planned)

    return FunctionChatModel(reply)


def test_a_reply_with_thousands_of_calls_ends_the_turn_before_any_runs(demo_engine: Any) -> None:
    model = _steps(_calls(range(1, 10_001)))
    result = demo_engine(model).ask("c1", "¿Cuánto vendimos?", DEMO_CALLER)
    assert result.failure == "limit" and not result.recorded
    assert result.operations == [] and len(model.calls) == 1
    assert any("asked for 10000 operations" in error for error in result.errors)


def test_a_turn_within_the_cap_runs_every_call(demo_engine: Any) -> None:
    model = _steps(_calls(range(2000, 2000 + MAX_OPERATIONS_PER_TURN)))
    result = demo_engine(model).ask("c1", "¿Cuánto vendimos cada año?", DEMO_CALLER)
    assert result.failure is None and len(result.operations) == MAX_OPERATIONS_PER_TURN


def test_calls_add_up_over_the_steps_of_a_turn(demo_engine: Any) -> None:
    model = _steps(_calls(range(2020, 2025)), _calls(range(2010, 2014)))
    result = demo_engine(model).ask("c1", "¿Y los otros años?", DEMO_CALLER)
    assert result.failure == "limit"
    assert [op.parameters["anio"] for op in result.operations] == list(range(2020, 2025))  # step 2 never ran
    assert not any(
        isinstance(m, ToolMessage) and "2010" in str(m.content) for c in model.calls for m in c.messages
    )


def test_calls_written_as_text_count_against_the_cap(demo_engine: Any) -> None:
    text = json.dumps([{"name": c["name"], "arguments": c["args"]} for c in _calls(range(2000, 2009))])
    result = demo_engine(_steps(text)).ask("c1", "¿Cuánto vendimos?", DEMO_CALLER)
    assert result.failure == "limit" and result.operations == []
