"""The wire messages every protocol reduces a request to, converted to LangChain messages."""

from __future__ import annotations

import pytest
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage

from benchmarks.stand_ins.emulators._backing import BadRequestError, to_messages


def test_roles_text_parts_and_tool_results_keep_the_calls_id_and_name() -> None:
    call = {"id": "c1", "function": {"name": "f", "arguments": "{}"}}
    messages = to_messages(
        [
            {"role": "developer", "content": "Reglas."},
            {"role": "user", "content": [{"type": "text", "text": "ho"}, {"type": "text", "text": "la"}]},
            {"role": "assistant", "content": None, "tool_calls": [call]},
            {"role": "tool", "tool_call_id": "c1", "content": "42"},
        ]
    )  # fmt: skip

    assert [type(m) for m in messages] == [SystemMessage, HumanMessage, AIMessage, ToolMessage]
    assert messages[1].content == "hola"
    assert isinstance(messages[3], ToolMessage) and (messages[3].name, messages[3].tool_call_id) == (
        "f",
        "c1",
    )


def test_calls_without_ids_get_them_and_results_pair_by_tool_name_then_order() -> None:
    calls = [
        {"function": {"name": "a", "arguments": {"x": 1}}},
        {"function": {"name": "b", "arguments": '{"y": 2}'}},
    ]
    messages = to_messages(
        [
            {"role": "user", "content": "q"},
            {"role": "assistant", "tool_calls": calls},
            {"role": "tool", "content": "rb", "tool_name": "b"},
            {"role": "tool", "content": "ra"},
        ]
    )

    call_a, call_b = messages[1].tool_calls  # type: ignore[attr-defined]
    assert call_b["args"] == {"y": 2}
    results = [(m.tool_call_id, m.name, m.content) for m in messages[2:]]  # type: ignore[attr-defined]
    assert results == [(call_b["id"], "b", "rb"), (call_a["id"], "a", "ra")]


@pytest.mark.parametrize(
    "message",
    [
        {"role": "wizard", "content": "hola"},
        {"role": "assistant", "tool_calls": [{"function": {"name": "f", "arguments": "{"}}]},
    ],
)
def test_an_unknown_role_or_unreadable_arguments_are_a_bad_request(message: dict[str, object]) -> None:
    with pytest.raises(BadRequestError, match="invalid message"):
        to_messages([message])
