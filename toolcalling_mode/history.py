"""Stored conversation rows (``role``, ``content``, ``metadata``) ↔ LangChain messages.

:func:`to_langchain_messages` replays a conversation (``full_history``); :func:`step_rows` turns a turn's
steps into rows. An intermediate assistant step carries ``tool_calls`` (``[{"id", "name", "args"}, …]``), a
tool result ``tool_call_id``, ``name`` and ``status``; a final answer has no ``tool_calls`` key.

Providers reject an unanswered tool call and a tool result without its call, so each replayed step keeps
only the calls answered by the tool rows right after it, those rows only its calls' first results; a step
left with neither calls nor text is dropped, and so is any other tool row. Pairing is local to each step, so
tool call ids that another turn reuses cannot pair across turns.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolCall, ToolMessage

from shared.memory.store import MessageIn

if TYPE_CHECKING:
    from shared.memory.store import StoredMessage


def to_langchain_messages(stored: Iterable[StoredMessage]) -> list[BaseMessage]:
    """Rebuild the LangChain messages of a stored conversation, oldest first.

    ``system`` rows are skipped: the agent always supplies its own system prompt.
    """
    rows = list(stored)
    messages: list[BaseMessage] = []
    index = 0
    while index < len(rows):
        row = rows[index]
        index += 1
        if row.role == "user":
            messages.append(HumanMessage(content=row.content))
            continue
        if row.role != "assistant":
            continue  # system rows, and tool rows that do not follow their step
        metadata = row.metadata or {}
        if not metadata.get("tool_calls"):  # a final answer
            messages.append(AIMessage(content=row.content))
            continue
        calls = {call["id"]: call for call in _tool_calls(metadata)}
        results: dict[str, ToolMessage] = {}  # an intermediate step: its results are the tool rows after it
        while index < len(rows) and rows[index].role == "tool":
            result = _tool_message(rows[index])
            index += 1
            if result.tool_call_id in calls:
                results.setdefault(result.tool_call_id, result)
        if results or row.content:
            answered = [call for call_id, call in calls.items() if call_id in results]
            messages.append(AIMessage(content=row.content, tool_calls=answered))
            messages.extend(results.values())
    return messages


def _tool_message(row: StoredMessage) -> ToolMessage:
    metadata = row.metadata or {}
    return ToolMessage(
        content=row.content,
        tool_call_id=str(metadata.get("tool_call_id")),
        name=metadata.get("name"),
        status="error" if metadata.get("status") == "error" else "success",
    )


def _tool_calls(metadata: dict[str, Any]) -> list[ToolCall]:
    return [
        ToolCall(
            name=str(raw["name"]),
            args=raw["args"] if isinstance(raw.get("args"), dict) else {},
            id=str(raw["id"]),
            type="tool_call",
        )
        for raw in metadata.get("tool_calls") or []
        if isinstance(raw, dict) and raw.get("name") and raw.get("id")
    ]


def step_rows(messages: Sequence[BaseMessage], excluded: frozenset[str] = frozenset()) -> list[MessageIn]:
    """The rows of a turn's tool-calling steps: each assistant step with its calls that got a result (a
    malformed call, ``invalid_tool_calls``, kept with empty ``args`` so that its error result still has a
    call on replay), then those results. ``excluded``: tools that are no step (the structured answer's)."""
    answered = {message.tool_call_id for message in messages if isinstance(message, ToolMessage)}
    rows: list[MessageIn] = []
    open_calls: set[str] = set()
    for message in messages:
        if isinstance(message, AIMessage):
            calls: list[dict[str, Any]] = [
                {"id": call["id"], "name": call["name"], "args": dict(call["args"])}
                for call in message.tool_calls
                if call.get("id") in answered and call["name"] not in excluded
            ]
            calls.extend(
                {"id": call.get("id"), "name": call.get("name") or "", "args": {}, "invalid": True}
                for call in message.invalid_tool_calls
                if call.get("id") in answered and call.get("name") not in excluded
            )
            if calls:
                rows.append(
                    MessageIn(role="assistant", content=str(message.text), metadata={"tool_calls": calls})
                )
                open_calls.update(str(call["id"]) for call in calls)
        elif isinstance(message, ToolMessage) and message.tool_call_id in open_calls:
            metadata = {"tool_call_id": message.tool_call_id, "name": message.name, "status": message.status}
            rows.append(MessageIn(role="tool", content=str(message.text), metadata=metadata))
    return rows
