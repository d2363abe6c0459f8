"""Stored conversation messages ↔ LangChain messages.

The memory store keeps plain rows (``role``, ``content``, ``metadata``). Tool calling needs them back as
LangChain messages to replay a conversation (``full_history`` policy), and needs each turn's LangChain
messages turned into rows to record the turn. Metadata conventions, shared with :mod:`shared.memory.store`:

- an intermediate assistant step carries ``tool_calls``: ``[{"id", "name", "args"}, …]``;
- a tool result carries ``tool_call_id``, ``name`` and ``status`` (``success`` or ``error``);
- the final assistant message of a turn has no ``tool_calls`` key.

Replay is defensive, because providers reject an unanswered tool call and a tool result without its call: each
assistant step keeps only the calls answered by the tool rows right after it, those rows keep only the results
of its calls (the first one per call), a step left with neither calls nor text is dropped, and any other tool
row is dropped. Pairing is local to each step, so tool call ids reused by another turn (providers and the
offline model may restart their numbering) cannot pair across turns.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, Protocol

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolCall, ToolMessage


class StoredMessageLike(Protocol):
    """What replay needs from a stored message (``shared.memory.store.StoredMessage`` satisfies it)."""

    @property
    def role(self) -> str: ...

    @property
    def content(self) -> str: ...

    @property
    def metadata(self) -> dict[str, Any]: ...


def to_langchain_messages(stored: Iterable[StoredMessageLike]) -> list[BaseMessage]:
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


def _tool_message(row: StoredMessageLike) -> ToolMessage:
    metadata = row.metadata or {}
    return ToolMessage(
        content=row.content,
        tool_call_id=str(metadata.get("tool_call_id")),
        name=metadata.get("name"),
        status="error" if metadata.get("status") == "error" else "success",
    )


def _tool_calls(metadata: dict[str, Any]) -> list[ToolCall]:
    calls: list[ToolCall] = []
    for raw in metadata.get("tool_calls") or []:
        if not isinstance(raw, dict) or not raw.get("name") or not raw.get("id"):
            continue
        args = raw.get("args")
        calls.append(
            ToolCall(
                name=str(raw["name"]),
                args=args if isinstance(args, dict) else {},
                id=str(raw.get("id")),
                type="tool_call",
            )
        )
    return calls


def tool_call_metadata(message: AIMessage, answered: set[str]) -> list[dict[str, Any]]:
    """The ``tool_calls`` metadata of an assistant step: only the calls that got a tool result.

    Malformed calls (``invalid_tool_calls``, args that were not valid JSON) are kept with empty ``args`` so
    that their error results still have a call to answer on replay.
    """
    calls: list[dict[str, Any]] = [
        {"id": call["id"], "name": call["name"], "args": dict(call["args"])}
        for call in message.tool_calls
        if call.get("id") in answered
    ]
    calls.extend(
        {"id": call.get("id"), "name": call.get("name") or "", "args": {}, "invalid": True}
        for call in message.invalid_tool_calls
        if call.get("id") in answered
    )
    return calls


def tool_result_metadata(message: ToolMessage) -> dict[str, Any]:
    """The metadata of a tool result row."""
    return {"tool_call_id": message.tool_call_id, "name": message.name, "status": message.status}


def message_text(message: BaseMessage) -> str:
    """The plain text of a message whose content may be a string or a list of content blocks."""
    return str(message.text)


def answered_ids(messages: Sequence[BaseMessage]) -> set[str]:
    """Ids of the tool calls that a ``ToolMessage`` in ``messages`` answers."""
    return {message.tool_call_id for message in messages if isinstance(message, ToolMessage)}
