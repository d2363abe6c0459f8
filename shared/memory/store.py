"""The ERP's conversation memory: conversations, messages, state and memory items in SQL.

Concurrency (the same on SQLite and PostgreSQL): every write to a conversation starts by bumping the
``version`` of its state row, which takes the write lock (SQLite) or the row lock (PostgreSQL), so writes to
one conversation run one after another and a turn's messages are contiguous. A new conversation is an
``INSERT … ON CONFLICT DO NOTHING``, checked for ownership under the lock. State merges per key, last writer
wins; a turn planned on a version another turn changed is still recorded, flagged ``stale``. Statements are
built once at import and run on plain Core connections.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Mapping
from contextlib import AbstractContextManager
from datetime import date
from typing import Any

from sqlalchemy import Engine
from sqlalchemy.exc import IntegrityError

from shared.answer import MemoryItem, bound_memories
from shared.bounds import (
    MAX_CONTEXT_EXCHANGES,
    MAX_CONTEXT_MEMORIES,
    MAX_EXCHANGE_CHARS,
    MAX_MEMORY_CHARS,
    clean_text,
    clip_line,
    clip_state,
    clip_text,
)
from shared.erp.database import default_db_url, make_engine
from shared.erp.storage import storage_errors
from shared.errors import InputError
from shared.inputs import check_conversation_id
from shared.memory import reading, writing
from shared.memory.context import ConversationContext, Exchange
from shared.memory.records import (
    ConversationInfo,
    MessageIn,
    StoredMessage,
    TurnRecord,
    VersionedState,
)

__all__ = [
    "ConversationInfo",
    "MemoryStore",
    "MessageIn",
    "StoredMessage",
    "TurnRecord",
    "VersionedState",
    "check_conversation_id",
    "open_memory_store",
]

MEMORY_URL_ENV = "ERP_AI_MEMORY_URL"


class MemoryStore:
    """Conversation memory in any SQLAlchemy database: the ERP's own, or a separate one."""

    def __init__(self, url_or_engine: str | Engine) -> None:
        if isinstance(url_or_engine, str):
            self._engine = make_engine(url_or_engine)
            self._owns_engine = True
        else:
            self._engine = url_or_engine
            self._owns_engine = False
        try:
            with self._storage("open the conversation memory"):
                writing.create_tables(self._engine)
        except BaseException:
            self.close()
            raise

    @property
    def engine(self) -> Engine:
        """The engine the store reads and writes through."""
        return self._engine

    # -- conversations -------------------------------------------------------------------------------------

    def create_conversation(self, user_id: str | None = None, conversation_id: str | None = None) -> str:
        """Create a conversation and return its id (a new uuid4 hex unless ``conversation_id`` is given)."""
        new_id = check_conversation_id(conversation_id) if conversation_id is not None else uuid.uuid4().hex
        with self._storage("write the conversation memory"):
            try:
                with self._engine.begin() as connection:
                    writing.insert_conversation(connection, new_id, user_id)
            except IntegrityError:  # the primary key: checking first would still race with another creator
                raise InputError(f"Conversation {new_id!r} already exists.") from None
        return new_id

    def get_conversation(self, conversation_id: str) -> ConversationInfo | None:
        """The conversation with that id, or ``None`` if there is none."""
        check_conversation_id(conversation_id)
        with self._storage("read the conversation memory"), self._engine.connect() as connection:
            return reading.conversation(connection, conversation_id)

    def ensure_conversation(self, conversation_id: str, user_id: str | None = None) -> str:
        """Create the conversation unless it exists (an existing one keeps its user); return its id."""
        check_conversation_id(conversation_id)
        with self._storage("write the conversation memory"), self._engine.begin() as connection:
            writing.create_if_missing(connection, conversation_id, user_id)
        return conversation_id

    # -- writing -------------------------------------------------------------------------------------------

    def check_access(self, conversation_id: str, user_id: str) -> None:
        """Refuse a conversation that belongs to another user (:class:`ConversationAccessDenied`)."""
        check_conversation_id(conversation_id)
        with self._storage("read the conversation memory"), self._engine.connect() as connection:
            writing.check_owner(connection, conversation_id, user_id)

    def record_turn(
        self,
        conversation_id: str,
        turn: TurnRecord,
        *,
        user_id: str | None = None,
        expected_version: int | None = None,
    ) -> VersionedState:
        """Store a whole turn (messages, memories, state update) in ONE transaction, or nothing at all."""
        check_conversation_id(conversation_id)
        memories = bound_memories(turn.memories)
        updates = clip_state(turn.state)
        with self._storage("write the conversation memory"), self._engine.begin() as connection:
            state, previous = writing.lock_conversation(connection, conversation_id, user_id)
            if user_id is not None:
                writing.check_owner(connection, conversation_id, user_id)
            writing.insert_messages(connection, conversation_id, turn.messages)
            writing.store_memories(connection, conversation_id, memories)
            merged = writing.merge_state(connection, conversation_id, state, updates)
        stale = expected_version is not None and expected_version != previous
        return VersionedState(merged, version=previous + 1, stale=stale)

    def merge_state(self, conversation_id: str, updates: Mapping[str, Any]) -> VersionedState:
        """Merge ``updates`` into the state (``None`` deletes a key) and return the new state and version."""
        check_conversation_id(conversation_id)
        bounded = clip_state(updates)
        with self._storage("write the conversation memory"), self._engine.begin() as connection:
            state, previous = writing.lock_conversation(connection, conversation_id)
            merged = writing.merge_state(connection, conversation_id, state, bounded)
        return VersionedState(merged, version=previous + 1)

    # -- reading -------------------------------------------------------------------------------------------

    def get_state(self, conversation_id: str) -> VersionedState:
        """The conversation's state and version, read together (``{}`` and 0 for an unknown conversation)."""
        check_conversation_id(conversation_id)
        with self._storage("read the conversation memory"), self._engine.connect() as connection:
            return reading.state(connection, conversation_id)

    def history(self, conversation_id: str) -> list[StoredMessage]:
        """Every message of the conversation, oldest first, with its metadata (``[]`` if unknown)."""
        check_conversation_id(conversation_id)
        with self._storage("read the conversation memory"), self._engine.connect() as connection:
            return reading.history(connection, conversation_id)

    def memories(self, conversation_id: str, limit: int | None = None) -> list[MemoryItem]:
        """The conversation's memory items, most relevant first (importance, then the most recent)."""
        check_conversation_id(conversation_id)
        with self._storage("read the conversation memory"), self._engine.connect() as connection:
            return reading.ranked_memories(connection, conversation_id, limit)

    def build_context(
        self, conversation_id: str, today: date, memory_limit: int = 5, exchanges: int = 1
    ) -> ConversationContext:
        """The bounded context for the next model call: top memories, the state, the last exchanges, today."""
        check_conversation_id(conversation_id)
        memory_limit = min(memory_limit, MAX_CONTEXT_MEMORIES)
        exchanges = min(exchanges, MAX_CONTEXT_EXCHANGES)
        with self._storage("read the conversation memory"), self._engine.connect() as connection:
            state = reading.state(connection, conversation_id)
            memories = (
                reading.ranked_memories(connection, conversation_id, memory_limit) if memory_limit > 0 else []
            )
            recent = reading.last_exchanges(connection, conversation_id, exchanges) if exchanges > 0 else []
        return ConversationContext(
            today=today,
            version=state.version,
            memories=[clip_line(item.content, MAX_MEMORY_CHARS) for item in memories],
            state=clip_state(state),
            recent_exchanges=[
                Exchange(user=_clip(item.user), assistant=_clip(item.assistant)) for item in recent
            ],
        )

    # -- lifecycle -----------------------------------------------------------------------------------------

    def close(self) -> None:
        """Dispose the engine if the store created it (an engine passed in stays with its owner)."""
        if self._owns_engine:
            self._engine.dispose()

    def __enter__(self) -> MemoryStore:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def _storage(self, action: str) -> AbstractContextManager[None]:
        """Database failures inside the block become one-line :class:`StorageError` about this store."""
        return storage_errors(self._engine.url, action, MEMORY_URL_ENV)


def open_memory_store(url: str | None = None) -> MemoryStore:
    """Open the memory at ``url``, else ``$ERP_AI_MEMORY_URL``, else the ERP's ``default_db_url()``."""
    return MemoryStore(url or os.environ.get(MEMORY_URL_ENV) or default_db_url())


def _clip(message: str) -> str:
    """One message of an exchange as a context shows it: clipped, without stray control characters."""
    return clean_text(clip_text(message, MAX_EXCHANGE_CHARS))
