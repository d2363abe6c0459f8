"""Stored rows ↔ LangChain messages: what full-history replay rebuilds and what a turn records."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

from shared.memory.store import StoredMessage
from toolcalling_mode.history import step_rows, to_langchain_messages


def row(role: str, content: str, **metadata: Any) -> StoredMessage:
    return StoredMessage(
        id=0,
        conversation_id="c1",
        role=role,  # type: ignore[arg-type]
        content=content,
        metadata=metadata,
        created_at=datetime.now(UTC),
    )


STEP = [{"id": "a", "name": "ventas_anuales", "args": {"anio": 2025}}]


def asked(question: str, result: str, **metadata: Any) -> list[StoredMessage]:
    """A question, the step that calls ``ventas_anuales`` (id ``a``) for it, and the call's result."""
    return [
        row("user", question),
        row("assistant", "", tool_calls=STEP),
        row("tool", result, tool_call_id="a", name="ventas_anuales", **metadata),
    ]


def test_a_recorded_turn_replays_as_langchain_messages() -> None:
    messages = to_langchain_messages(
        [*asked("¿Cuánto vendimos?", '{"total": 1}', status="success"), row("assistant", "Vendimos 1.")]
    )

    assert [type(m) for m in messages] == [HumanMessage, AIMessage, ToolMessage, AIMessage]
    step = messages[1]
    assert isinstance(step, AIMessage)
    assert step.tool_calls == [
        {"name": "ventas_anuales", "args": {"anio": 2025}, "id": "a", "type": "tool_call"}
    ]
    result = messages[2]
    assert isinstance(result, ToolMessage)
    assert (result.tool_call_id, result.name, result.status) == ("a", "ventas_anuales", "success")
    assert messages[3].content == "Vendimos 1."


def test_error_status_survives_replay() -> None:
    messages = to_langchain_messages(asked("x", "boom", status="error"))

    assert isinstance(messages[2], ToolMessage) and messages[2].status == "error"


def test_unanswered_calls_orphan_results_and_system_rows_are_dropped() -> None:
    two_calls = [*STEP, {"id": "b", "name": "mejor_cliente", "args": {"anio": 2025}}]
    messages = to_langchain_messages(
        [
            row("system", "ignored"),
            row("user", "x"),
            row("assistant", "", tool_calls=two_calls),
            row("tool", "1", tool_call_id="a", name="ventas_anuales"),
            row("tool", "orphan", tool_call_id="zzz", name="ventas_anuales"),
            row("assistant", "fin"),
        ]
    )

    assert [m.type for m in messages] == ["human", "ai", "tool", "ai"]
    assert isinstance(messages[1], AIMessage)
    assert [c["id"] for c in messages[1].tool_calls] == ["a"]


def test_step_rows_keep_answered_and_malformed_calls_and_their_results() -> None:
    step = AIMessage(
        content="",
        tool_calls=[
            {"name": "ventas_anuales", "args": {"anio": 2025}, "id": "a", "type": "tool_call"},
            {"name": "mejor_cliente", "args": {"anio": 2025}, "id": "b", "type": "tool_call"},  # no result
            {"name": "Answer", "args": {"respuesta": "x"}, "id": "d", "type": "tool_call"},  # excluded
        ],
        invalid_tool_calls=[
            {
                "name": "ventas_anuales",
                "args": "{anio:",
                "id": "c",
                "error": "bad",
                "type": "invalid_tool_call",
            }
        ],
    )
    results = [
        ToolMessage(content="1", tool_call_id="a", name="ventas_anuales"),
        ToolMessage(content="boom", tool_call_id="c", name="ventas_anuales", status="error"),
        ToolMessage(content="ok", tool_call_id="d", name="Answer"),
    ]

    rows = step_rows([HumanMessage("q"), step, *results], frozenset({"Answer"}))

    assert [(r.role, r.content) for r in rows] == [("assistant", ""), ("tool", "1"), ("tool", "boom")]
    assert rows[0].metadata["tool_calls"] == [
        {"id": "a", "name": "ventas_anuales", "args": {"anio": 2025}},
        {"id": "c", "name": "ventas_anuales", "args": {}, "invalid": True},
    ]
    assert rows[2].metadata == {"tool_call_id": "c", "name": "ventas_anuales", "status": "error"}


def test_tool_call_ids_reused_by_a_later_turn_do_not_pair_across_turns() -> None:
    # The offline model numbers its calls per instance, so a new process reuses "a" in a later turn.
    messages = to_langchain_messages(
        [
            *asked("uno", "1", status="success"),
            row("assistant", "Vendimos 1."),
            row("user", "dos"),
            row("assistant", "", tool_calls=STEP),  # this step's result was never recorded
            row("assistant", "No pude."),
        ]
    )

    assert [m.type for m in messages] == ["human", "ai", "tool", "ai", "human", "ai"]
    assert messages[-1].content == "No pude."


def test_a_result_pairs_only_with_the_step_right_before_it() -> None:
    messages = to_langchain_messages(
        [
            *asked("x", "1"),
            row("tool", "again", tool_call_id="a", name="ventas_anuales"),
            row("assistant", "fin"),
            row("tool", "late", tool_call_id="a", name="ventas_anuales"),
        ]
    )

    assert [m.type for m in messages] == ["human", "ai", "tool", "ai"]
    assert messages[2].content == "1"


def test_a_step_left_without_calls_keeps_its_text_and_an_empty_one_is_dropped() -> None:
    no_id = [{"name": "ventas_anuales", "args": {"anio": 2025}}]
    messages = to_langchain_messages(
        [
            row("user", "x"),
            row("assistant", "", tool_calls=no_id),
            row("assistant", "Consulto…", tool_calls=STEP),
            row("assistant", "fin"),
        ]
    )

    assert [(m.type, m.content) for m in messages] == [("human", "x"), ("ai", "Consulto…"), ("ai", "fin")]
    assert isinstance(messages[1], AIMessage) and messages[1].tool_calls == []
