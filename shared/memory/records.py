"""What the memory store takes and returns: messages, turns, versioned state, conversation ids."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from shared.answer import MemoryItem

Role = Literal["user", "assistant", "tool", "system"]


class MessageIn(BaseModel):
    """A message to record. An assistant message whose ``metadata`` has ``tool_calls`` is an intermediate
    tool-calling step; the final assistant message of a turn has none."""

    model_config = ConfigDict(frozen=True)

    role: Role
    content: str
    metadata: dict[str, Any] = Field(default_factory=dict)


class StoredMessage(BaseModel):
    """A message as stored, in conversation order (``id`` is monotonic)."""

    model_config = ConfigDict(frozen=True)

    id: int
    conversation_id: str
    role: Role
    content: str
    metadata: dict[str, Any] = Field(default_factory=dict)
    created_at: datetime

    @property
    def is_final_answer(self) -> bool:
        """True for an assistant message that is not an intermediate tool-calling step."""
        return is_final_answer(self.role, self.metadata)


class TurnRecord(BaseModel):
    """Everything one turn adds to a conversation; :meth:`MemoryStore.record_turn` stores it atomically."""

    messages: list[MessageIn] = Field(default_factory=list)
    """In order: the user message, any tool-calling steps, the final assistant message."""
    memories: list[MemoryItem] = Field(default_factory=list)
    """Facts to remember; a content already stored in the conversation keeps the higher importance."""
    state: dict[str, Any] = Field(default_factory=dict)
    """State updates, merged key by key into the stored state; a ``None`` value deletes the key."""


class VersionedState(dict[str, Any]):
    """A conversation's state (a plain ``dict``) and its version."""

    version: int
    """How many writes (turns, state merges) the conversation had when this state was read or written: 0 for
    a conversation never written, ``n`` after its ``n``-th write."""
    stale: bool
    """Set by :meth:`MemoryStore.record_turn` given ``expected_version``: another write was committed to the
    conversation after that version was read, so the turn was planned on stale context. The turn is recorded
    all the same, its state updates merged key by key over the newer state (the last writer wins)."""

    def __init__(
        self, state: Mapping[str, Any] | None = None, *, version: int = 0, stale: bool = False
    ) -> None:
        super().__init__(state or {})
        self.version = version
        self.stale = stale

    def __repr__(self) -> str:
        return f"VersionedState({dict.__repr__(self)}, version={self.version}, stale={self.stale})"


class ConversationInfo(BaseModel):
    """A conversation's identity."""

    model_config = ConfigDict(frozen=True)

    id: str
    user_id: str | None
    created_at: datetime


def is_final_answer(role: str, metadata: Mapping[str, Any] | None) -> bool:
    """An assistant message that is not an intermediate tool-calling step (no ``tool_calls``)."""
    return role == "assistant" and not (metadata or {}).get("tool_calls")
