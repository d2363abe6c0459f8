"""The ERP's conversation memory: conversations, messages, state and memory items in SQL (article §10–12).

:class:`MemoryStore` is the only way the modes touch the memory. A turn is written with :meth:`record_turn` in
one transaction, and :meth:`MemoryStore.build_context` reads back a bounded
:class:`~shared.memory.context.ConversationContext` with three indexed queries, however long the history is.

Concurrency (the same on SQLite and PostgreSQL, pinned by ``tests/shared/memory/test_store_concurrency.py``).
Each call runs on its own connection, so a store can be shared by threads, processes and servers.

- Every write to a conversation starts with an ``UPDATE`` of its state row that also bumps its ``version``
  (:func:`~shared.memory.writing.lock_conversation`): on SQLite (WAL, busy timeout) that takes the database
  write lock before anything is read; on PostgreSQL it locks the row until the commit. Writes to one
  conversation therefore run one after another, and writes to different conversations never touch the
  same rows.
- A new conversation is created with ``INSERT … ON CONFLICT DO NOTHING``: any number of first turns racing on
  one id make exactly one conversation and no error, and the ownership check runs after it, under the lock,
  so a second user racing for the same id is refused (nothing written).
- A turn's messages are inserted under that lock: the turns of a conversation never interleave, and ordered
  by ``id`` each turn's messages are contiguous, in the order given, after every earlier turn's.
- State merge: per key, the last writer wins (the turn committed last); ``None`` deletes a key. The
  ``version`` read with a turn's context (:attr:`ConversationContext.version`,
  :attr:`VersionedState.version`) goes back to :meth:`MemoryStore.record_turn` as ``expected_version``: a turn
  planned on a state that another turn changed meanwhile is still recorded, and flagged ``stale``.

Cost. Every call of a turn runs on a plain SQLAlchemy Core connection with statements built once, at import:
on SQLite, building a statement and going through an ORM session cost more than running the query. A turn
is written in four to six statements (version bump with the state read, messages, memories, state), three
more for the first turn of a new conversation (the two upserts and the bump again), and its context is read
in three.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Mapping
from contextlib import AbstractContextManager
from datetime import date
from types import TracebackType
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
from shared.memory import reading, writing
from shared.memory.context import ConversationContext, Exchange
from shared.memory.records import (
    ConversationInfo,
    MessageIn,
    StoredMessage,
    TurnRecord,
    VersionedState,
    check_conversation_id,
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
    """Conversation memory in any SQLAlchemy database: the ERP's own, or a separate one.

    ``url_or_engine`` is a database URL (the store creates the engine with
    :func:`shared.erp.database.make_engine`, so SQLite gets WAL, and disposes it in :meth:`close`) or an
    existing engine (shared, e.g., with the ERP; the caller keeps ownership and :meth:`close` leaves it
    alone). The memory tables are created if missing, race-free across processes. In-memory SQLite
    (``sqlite://``) is one database shared by every thread of the process.

    Failures. Opening raises :class:`~shared.errors.ConfigurationError` for a bad URL or a missing driver and
    :class:`~shared.errors.StorageError` when the database cannot be opened or written (read-only, corrupt,
    missing directory, locked past :data:`~shared.erp.storage.BUSY_TIMEOUT_SECONDS`), so a caller that opens
    the store before its model calls pays nothing for a broken store. Every later read or write that fails in
    the database raises :class:`~shared.errors.StorageError` too (one line, no SQL; the original chained).
    A conversation id that :func:`check_conversation_id` refuses raises :class:`~shared.errors.InputError`.

    Bounds. Whatever a caller stores, :meth:`build_context` returns at most
    :data:`~shared.bounds.CONTEXT_MAX_CHARS` characters of JSON, and :meth:`record_turn` stores memory items
    and state within the limits of :mod:`shared.bounds`.
    """

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
        """Create a conversation and return its id (a new uuid4 hex unless ``conversation_id`` is given).

        Raises :class:`~shared.errors.InputError` if ``conversation_id`` is already taken or is not a valid id
        (see :func:`check_conversation_id`).
        """
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
        """Refuse a conversation that belongs to another user (:class:`ConversationAccessDenied`).

        A conversation belongs to the user who created it. An unknown id is fine (the turn will create it for
        ``user_id``). A conversation without an owner (created through this store without a user, or before
        conversations had owners) belongs to nobody and is refused to every user: its context could hold
        anyone's data. One indexed read; engines call it before reading any context.
        """
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
        """Store a whole turn in ONE transaction: its messages, memories and state update, or nothing at all.

        An unknown ``conversation_id`` is created first, in the same transaction (clients may pick their own
        ids; first turns racing on one id make one conversation, without error), owned by ``user_id``. With
        ``user_id``, a conversation owned by another user is refused inside the transaction
        (:class:`ConversationAccessDenied`, nothing written), so two users racing to create one id cannot
        share it.

        Returns the conversation state after the merge, with its new ``version``. ``expected_version`` is the
        version of the context the turn was planned on (:attr:`ConversationContext.version` or
        :attr:`VersionedState.version` of :meth:`get_state`); when another write was committed since, the turn
        is recorded all the same and the result is flagged ``stale`` (see the module's concurrency rules).

        Bounded on write whatever the caller passes: memory items as :func:`shared.answer.bound_memories`
        (repeats merged, at most 5, each one line of at most 300 characters), the state update as
        :func:`shared.bounds.clip_state`, and the merged state keeps at most
        :data:`~shared.bounds.MAX_STATE_KEYS` keys (the oldest untouched keys go first). Messages are stored
        whole (they are the history), with lone surrogates replaced so that any text can be stored.
        """
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
        """Merge ``updates`` into the state (``None`` deletes a key) and return the new state and version.

        Creates the conversation if it does not exist yet, like :meth:`record_turn`, and bounds the state the
        same way. Counts as a write: the conversation's version goes up by one.
        """
        check_conversation_id(conversation_id)
        bounded = clip_state(updates)
        with self._storage("write the conversation memory"), self._engine.begin() as connection:
            state, previous = writing.lock_conversation(connection, conversation_id)
            merged = writing.merge_state(connection, conversation_id, state, bounded)
        return VersionedState(merged, version=previous + 1)

    # -- reading -------------------------------------------------------------------------------------------

    def get_state(self, conversation_id: str) -> VersionedState:
        """The conversation's state and version, read together (``{}`` and 0 for an unknown conversation).

        A turn that replays the history instead of calling :meth:`build_context` reads the state first and
        passes its ``version`` to :meth:`record_turn`.
        """
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
        """The bounded context for the next model call: top memories, the state, the last exchanges, today.

        An exchange is a user message and the final assistant message that answered it (tool-calling steps are
        skipped). Three indexed queries, independent of the conversation's length; an unknown conversation
        yields an empty context. The state and the conversation's ``version`` are read first, in one row: a
        turn committed while the other two queries run can make the context newer than its version says
        (``record_turn`` then flags the turn stale, a false alarm), never older.

        Bounded by construction, whatever is stored: at most :data:`~shared.bounds.MAX_CONTEXT_MEMORIES`
        memories and :data:`~shared.bounds.MAX_CONTEXT_EXCHANGES` exchanges (larger ``memory_limit`` /
        ``exchanges`` are capped), each memory one line of at most :data:`~shared.bounds.MAX_MEMORY_CHARS`
        characters, the state as :func:`~shared.bounds.clip_state`, each exchange message at most
        :data:`~shared.bounds.MAX_EXCHANGE_CHARS` characters, every cut marked ``… [truncado]``. The
        context's JSON never exceeds :data:`~shared.bounds.CONTEXT_MAX_CHARS` characters.
        """
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
            hoy=today,
            version=state.version,
            memoria=[clip_line(item.contenido, MAX_MEMORY_CHARS) for item in memories],
            estado=clip_state(state),
            ultimos_intercambios=[
                Exchange(usuario=_clip(item.usuario), asistente=_clip(item.asistente)) for item in recent
            ],
        )

    # -- lifecycle -----------------------------------------------------------------------------------------

    def close(self) -> None:
        """Dispose the engine if the store created it (an engine passed in stays with its owner)."""
        if self._owns_engine:
            self._engine.dispose()

    def __enter__(self) -> MemoryStore:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def _storage(self, action: str) -> AbstractContextManager[None]:
        """Database failures inside the block become one-line :class:`StorageError` about this store."""
        return storage_errors(self._engine.url, action, MEMORY_URL_ENV)


def open_memory_store(url: str | None = None) -> MemoryStore:
    """Open the memory at ``url``, else ``$ERP_AI_MEMORY_URL``, else the ERP's ``default_db_url()``.

    Raises like :class:`MemoryStore` (``ConfigurationError``, ``StorageError``).
    """
    return MemoryStore(url or os.environ.get(MEMORY_URL_ENV) or default_db_url())


def _clip(message: str) -> str:
    """One message of an exchange as a context shows it: clipped, without stray control characters."""
    return clean_text(clip_text(message, MAX_EXCHANGE_CHARS))
