"""Grounded answers in tool calling: a final answer's figures must come from the tools' results."""

from __future__ import annotations

from typing import Any

import pytest

from shared.llm import build_chat_model
from shared.security import DEMO_CALLER
from toolcalling_mode import ToolCallingEngine

QUESTION = "¿Cuánto vendimos en 2025?"


def answering_without_tools(registry: Any, erp: Any, store: Any, **options: Any) -> ToolCallingEngine:
    """The offline model's ``no_tool_calls`` fault: it answers in prose with a figure it made up."""
    return ToolCallingEngine(
        registry, erp, store, build_chat_model("offline", faults="no_tool_calls"), **options
    )


def test_a_prose_answer_with_an_invented_figure_is_refused_and_not_stored(
    registry: Any, erp: Any, memory_store: Any
) -> None:
    result = answering_without_tools(registry, erp, memory_store).ask("c1", QUESTION, DEMO_CALLER)
    assert result.failure == "ungrounded" and result.ungrounded_figures == ["987.654.321"]
    assert not result.recorded and memory_store.history("c1") == []
    assert "987.654.321" in result.answer and "¿Puede intentarlo de nuevo" in result.answer


def test_flag_shows_and_records_it_with_the_figures_named(registry: Any, erp: Any, memory_store: Any) -> None:
    engine = answering_without_tools(registry, erp, memory_store, grounding="flag")
    result = engine.ask("c1", QUESTION, DEMO_CALLER)
    assert result.failure is None and result.recorded and "987.654.321" in result.answer
    assert result.ungrounded_figures == ["987.654.321"]


def test_an_answer_from_the_tools_results_is_grounded(registry: Any, erp: Any, memory_store: Any) -> None:
    engine = ToolCallingEngine(registry, erp, memory_store, build_chat_model("offline"))
    result = engine.ask("c1", QUESTION, DEMO_CALLER)
    assert result.failure is None and result.ungrounded_figures == [] and result.recorded


def test_an_unknown_policy_is_refused_at_construction(registry: Any, erp: Any, memory_store: Any) -> None:
    with pytest.raises(ValueError, match="grounding policy"):
        answering_without_tools(registry, erp, memory_store, grounding="maybe")
