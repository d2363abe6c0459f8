"""Conversation memory owned by the ERP (article §10–12)."""

from shared.memory.context import ConversationContext, Exchange, render_context
from shared.memory.store import (
    ConversationInfo,
    MemoryStore,
    MessageIn,
    StoredMessage,
    TurnRecord,
    VersionedState,
    check_conversation_id,
    open_memory_store,
)

__all__ = [
    "ConversationContext",
    "ConversationInfo",
    "Exchange",
    "MemoryStore",
    "MessageIn",
    "StoredMessage",
    "TurnRecord",
    "VersionedState",
    "check_conversation_id",
    "open_memory_store",
    "render_context",
]
