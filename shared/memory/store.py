"""The ERP's conversation memory: conversations, messages, state and memory items in SQL (article §10–12).

:class:`MemoryStore` is the only way the modes touch the memory. A turn is written with :meth:`record_turn` in
one transaction, and :meth:`MemoryStore.build_context` reads back a bounded
:class:`~shared.memory.context.ConversationContext` with three indexed queries, however long the history is.

Concurrency (the same on SQLite and PostgreSQL, pinned by ``tests/shared/memory/test_store_concurrency.py``).
Each call runs on its own connection, so a store can be shared by threads, processes and servers.

- Every write to a conversation starts with an ``UPDATE`` of its state row that also bumps its ``version``
  (:func:`_lock_conversation`): on SQLite (WAL, busy timeout) that takes the database write lock before
  anything is read; on PostgreSQL it locks the row until the commit. Writes to one conversation therefore
  run one after another, and writes to different conversations never touch the same rows.
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

import hashlib
import os
import re
import unicodedata
import uuid
from collections.abc import Iterable, Mapping, Sequence
from contextlib import AbstractContextManager
from datetime import UTC, date, datetime
from types import TracebackType
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field
from sqlalchemy import Connection, Engine, Executable, bindparam, false, insert, inspect, select, text, update
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.exc import IntegrityError

from shared.answer import MemoryItem, bound_memories
from shared.bounds import (
    MAX_CONTEXT_EXCHANGES,
    MAX_CONTEXT_MEMORIES,
    MAX_EXCHANGE_CHARS,
    MAX_MEMORY_CHARS,
    MAX_STATE_KEYS,
    clean_text,
    clip_line,
    clip_state,
    clip_text,
)
from shared.erp.database import default_db_url, make_engine
from shared.erp.storage import setup_transaction, storage_errors
from shared.errors import ConversationAccessDenied, InputError
from shared.memory.context import ConversationContext, Exchange
from shared.memory.tables import (
    ADDED_COLUMNS,
    CONVERSATION_ID_LENGTH,
    Conversation,
    ConversationState,
    MemoryBase,
    MemoryRecord,
    Message,
    utc_now,
)
from shared.text import fold

MEMORY_URL_ENV = "ERP_AI_MEMORY_URL"

Role = Literal["user", "assistant", "tool", "system"]

_MESSAGES_PER_EXCHANGE = 8
"""How many recent messages per requested exchange :meth:`MemoryStore.build_context` reads at first."""
_WIDER_WINDOW_FACTOR = 8
"""If that window holds too few exchanges (long tool-calling turns), one retry reads this many times more."""

# -- statements, built once (parameters: ``cid`` is always the conversation id) ------------------------------
_CONVERSATION = select(Conversation.id, Conversation.user_id, Conversation.created_at).where(
    Conversation.id == bindparam("cid")
)
_INSERT_CONVERSATION = insert(Conversation)
_STATE = select(ConversationState.state, ConversationState.version).where(
    ConversationState.conversation_id == bindparam("cid")
)
_INSERT_STATE = insert(ConversationState)
_CREATE_IF_MISSING: dict[str, tuple[Executable, Executable]] = {
    "sqlite": (
        sqlite.insert(Conversation).on_conflict_do_nothing(),
        sqlite.insert(ConversationState).on_conflict_do_nothing(),
    ),
    "postgresql": (
        postgresql.insert(Conversation).on_conflict_do_nothing(),
        postgresql.insert(ConversationState).on_conflict_do_nothing(),
    ),
}
"""Upserts of a conversation's two rows, per dialect: see :func:`_create_if_missing`."""
_BUMP_VERSION = (
    update(ConversationState)
    .where(ConversationState.conversation_id == bindparam("cid"))
    .values(updated_at=bindparam("now"), version=ConversationState.version + 1)
)
"""The first statement of every write to a conversation: see :func:`_lock_conversation`."""
_BUMP_VERSION_RETURNING = _BUMP_VERSION.returning(ConversationState.state, ConversationState.version)
_WRITE_STATE = (
    update(ConversationState)
    .where(ConversationState.conversation_id == bindparam("cid"))
    .values(state=bindparam("new_state"))
)
_INSERT_MESSAGES = insert(Message)
_HISTORY = (
    select(Message.id, Message.role, Message.content, Message.meta, Message.created_at)
    .where(Message.conversation_id == bindparam("cid"))
    .order_by(Message.id)
)
_NEWEST_MESSAGES = (
    select(Message.role, Message.content, Message.meta)
    .where(Message.conversation_id == bindparam("cid"))
    .order_by(Message.id.desc())
    .limit(bindparam("limit"))
)
_RANKED_MEMORIES = (
    select(MemoryRecord.content, MemoryRecord.importance)
    .where(MemoryRecord.conversation_id == bindparam("cid"))
    .order_by(MemoryRecord.importance.desc(), MemoryRecord.id.desc())
)
_TOP_MEMORIES = _RANKED_MEMORIES.limit(bindparam("limit"))
_STORED_MEMORIES = select(MemoryRecord.id, MemoryRecord.content_key, MemoryRecord.importance).where(
    MemoryRecord.conversation_id == bindparam("cid"),
    MemoryRecord.content_key.in_(bindparam("keys", expanding=True)),
)
_RAISE_IMPORTANCE = (
    update(MemoryRecord)
    .where(MemoryRecord.id == bindparam("record_id"))
    .values(importance=bindparam("new_importance"))
)
_INSERT_MEMORIES = insert(MemoryRecord)
_PROBE_WRITE = update(ConversationState).where(false()).values(updated_at=ConversationState.updated_at)
"""Changes nothing, but only a writable database runs it: see :func:`_create_tables`."""


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
        return _is_final_answer(self.role, self.metadata)


class TurnRecord(BaseModel):
    """Everything one turn adds to a conversation; :meth:`MemoryStore.record_turn` stores it atomically."""

    messages: list[MessageIn] = Field(default_factory=list)
    """In order: the user message, any tool-calling steps, the final assistant message."""
    memories: list[MemoryItem] = Field(default_factory=list)
    """Facts to remember; a content already stored in the conversation keeps the higher importance."""
    state: dict[str, Any] = Field(default_factory=dict)
    """State updates, merged key by key into the stored state; a ``None`` value deletes the key."""


class VersionedState(dict[str, Any]):
    """A conversation's state, which is a plain ``dict`` to code that wants only the state, and its version.

    Returned by :meth:`MemoryStore.get_state`, :meth:`MemoryStore.merge_state` and
    :meth:`MemoryStore.record_turn`. Equality is the ``dict``'s (the version is not compared), and
    ``dict(state)`` drops the version.
    """

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
                _create_tables(self._engine)
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
                    _insert_conversation(connection, new_id, user_id)
            except IntegrityError:  # the primary key: checking first would still race with another creator
                raise InputError(f"Conversation {new_id!r} already exists.") from None
        return new_id

    def get_conversation(self, conversation_id: str) -> ConversationInfo | None:
        """The conversation with that id, or ``None`` if there is none."""
        check_conversation_id(conversation_id)
        with self._storage("read the conversation memory"), self._engine.connect() as connection:
            row = connection.execute(_CONVERSATION, {"cid": conversation_id}).first()
        if row is None:
            return None
        return ConversationInfo(id=row.id, user_id=row.user_id, created_at=_aware(row.created_at))

    def ensure_conversation(self, conversation_id: str, user_id: str | None = None) -> str:
        """Create the conversation unless it exists (an existing one keeps its user); return its id."""
        check_conversation_id(conversation_id)
        with self._storage("write the conversation memory"), self._engine.begin() as connection:
            _create_if_missing(connection, conversation_id, user_id)
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
            _check_owner(connection, conversation_id, user_id)

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
            state, previous = _lock_conversation(connection, conversation_id, user_id)
            if user_id is not None:
                _check_owner(connection, conversation_id, user_id)
            if turn.messages:
                now = utc_now()
                connection.execute(
                    _INSERT_MESSAGES,
                    [
                        {
                            "conversation_id": conversation_id,
                            "role": message.role,
                            "content": _storable(message.content),
                            "meta": dict(message.metadata),
                            "created_at": now,
                        }
                        for message in turn.messages
                    ],
                )
            _store_memories(connection, conversation_id, memories)
            merged = _merge(state, updates)
            if merged != state:  # an unchanged state costs no write (the lock already bumped the version)
                _write_state(connection, conversation_id, merged)
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
            state, previous = _lock_conversation(connection, conversation_id)
            merged = _merge(state, bounded)
            if merged != state:
                _write_state(connection, conversation_id, merged)
        return VersionedState(merged, version=previous + 1)

    # -- reading -------------------------------------------------------------------------------------------

    def get_state(self, conversation_id: str) -> VersionedState:
        """The conversation's state and version, read together (``{}`` and 0 for an unknown conversation).

        A turn that replays the history instead of calling :meth:`build_context` reads the state first and
        passes its ``version`` to :meth:`record_turn`.
        """
        check_conversation_id(conversation_id)
        with self._storage("read the conversation memory"), self._engine.connect() as connection:
            return _read_state(connection, conversation_id)

    def history(self, conversation_id: str) -> list[StoredMessage]:
        """Every message of the conversation, oldest first, with its metadata (``[]`` if unknown)."""
        check_conversation_id(conversation_id)
        with self._storage("read the conversation memory"), self._engine.connect() as connection:
            rows = connection.execute(_HISTORY, {"cid": conversation_id}).all()
        return [
            StoredMessage(
                id=message_id,
                conversation_id=conversation_id,
                role=role,
                content=content,
                metadata=dict(meta or {}),
                created_at=_aware(created_at),
            )
            for message_id, role, content, meta, created_at in rows
        ]

    def memories(self, conversation_id: str, limit: int | None = None) -> list[MemoryItem]:
        """The conversation's memory items, most relevant first (importance, then the most recent)."""
        check_conversation_id(conversation_id)
        with self._storage("read the conversation memory"), self._engine.connect() as connection:
            rows = _ranked_memories(connection, conversation_id, limit)
        return [MemoryItem(contenido=content, importancia=importance) for content, importance in rows]

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
            state = _read_state(connection, conversation_id)
            memories = _ranked_memories(connection, conversation_id, memory_limit) if memory_limit > 0 else []
            recent = _last_exchanges(connection, conversation_id, exchanges) if exchanges > 0 else []
        return ConversationContext(
            hoy=today,
            version=state.version,
            memoria=[clip_line(content, MAX_MEMORY_CHARS) for content, _ in memories],
            estado=clip_state(state),
            ultimos_intercambios=[
                Exchange(usuario=_exchange_text(item.usuario), asistente=_exchange_text(item.asistente))
                for item in recent
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


def check_conversation_id(conversation_id: str) -> str:
    """Return ``conversation_id`` if it can name a conversation; raise :class:`InputError` saying why not.

    A conversation id is text of 1 to :data:`~shared.memory.tables.CONVERSATION_ID_LENGTH` (64) characters
    without control characters (``\\n``, NUL, …) or lone surrogates (undecodable bytes from a terminal, or a
    ``"\\ud800"`` escape in JSON), which no database column can store faithfully. Engines call it before any
    model call; every :class:`MemoryStore` method that takes an id calls it too.
    """
    if not isinstance(conversation_id, str):
        raise InputError(f"A conversation id must be text, not {type(conversation_id).__name__}.")
    if not conversation_id:
        raise InputError("The conversation id is empty: give 1 to 64 characters, or none for a new one.")
    if len(conversation_id) > CONVERSATION_ID_LENGTH:
        raise InputError(
            f"A conversation id must have 1 to {CONVERSATION_ID_LENGTH} characters, "
            f"got {len(conversation_id)} ({conversation_id[:20]!r}…)."
        )
    for position, char in enumerate(conversation_id):
        category = unicodedata.category(char)
        if category == "Cc":
            raise InputError(
                f"A conversation id may not contain a control character "
                f"(U+{ord(char):04X} at position {position + 1})."
            )
        if category == "Cs":
            raise InputError(
                f"A conversation id may not contain a lone surrogate "
                f"(U+{ord(char):04X} at position {position + 1}): it is not valid Unicode text."
            )
    return conversation_id


def _lock_conversation(
    connection: Connection, conversation_id: str, user_id: str | None = None
) -> tuple[dict[str, Any], int]:
    """Start a write to the conversation, creating it if needed: return its state and version before it.

    The first statement is an ``UPDATE`` of the state row that bumps its version: SQLite takes its write lock
    there (even when no row matches), PostgreSQL locks the row (waiting for a writer that holds it), so what
    is read and written next cannot change before the commit. Where the database supports
    ``UPDATE … RETURNING`` (SQLite 3.35+, PostgreSQL) the same statement reads the state; elsewhere a
    ``SELECT`` follows. When no row matched, the conversation is created (or found created by a concurrent
    writer: :func:`_create_if_missing`) and the ``UPDATE`` runs again, now locking the row.
    """
    params = {"cid": conversation_id, "now": utc_now()}
    bumped = _bump_version(connection, params)
    if bumped is None:
        _create_if_missing(connection, conversation_id, user_id)
        bumped = _bump_version(connection, params)
        if bumped is None:  # pragma: no cover - only if the conversation is deleted between the statements
            raise RuntimeError(f"conversation {conversation_id!r} vanished while it was being written")
    state, version = bumped
    return state, version - 1


def _bump_version(connection: Connection, params: dict[str, Any]) -> tuple[dict[str, Any], int] | None:
    """Bump the conversation's version: its state and new version, or ``None`` if it has no state row."""
    if connection.dialect.update_returning:
        row = connection.execute(_BUMP_VERSION_RETURNING, params).first()
    elif connection.execute(_BUMP_VERSION, params).rowcount > 0:
        row = connection.execute(_STATE, params).first()
    else:
        row = None
    return None if row is None else (dict(row.state or {}), int(row.version))


def _create_if_missing(connection: Connection, conversation_id: str, user_id: str | None) -> None:
    """Create the conversation's row (owned by ``user_id``) and its state row, each unless it exists.

    SQLite and PostgreSQL run ``INSERT … ON CONFLICT DO NOTHING``: a concurrent creator's uncommitted row
    makes PostgreSQL wait for its commit, then do nothing, so racing creators never fail and exactly one row
    is made. Other databases check first, then insert: a creator losing that race fails on the primary key.
    """
    now = utc_now()
    conversation = {"id": conversation_id, "user_id": user_id, "created_at": now}
    state = {"conversation_id": conversation_id, "state": {}, "updated_at": now, "version": 0}
    upserts = _CREATE_IF_MISSING.get(connection.dialect.name)
    if upserts is not None:
        connection.execute(upserts[0], conversation)
        connection.execute(upserts[1], state)
        return
    if connection.execute(_CONVERSATION, {"cid": conversation_id}).first() is None:
        connection.execute(_INSERT_CONVERSATION, conversation)
    if connection.execute(_STATE, {"cid": conversation_id}).first() is None:
        connection.execute(_INSERT_STATE, state)


def _create_tables(engine: Engine) -> None:
    """Create the memory tables if missing, race-free across processes, and check that the store can write.

    Inside :func:`~shared.erp.storage.setup_transaction`, so concurrent first opens run one after another.
    The ``UPDATE … WHERE false`` changes nothing but needs write access, so a read-only database fails here,
    before any model call is paid, rather than when the first turn is recorded.
    """
    with setup_transaction(engine) as connection:
        MemoryBase.metadata.create_all(connection)
        _add_missing_columns(connection)
        connection.execute(_PROBE_WRITE)


def _add_missing_columns(connection: Connection) -> None:
    """Add the :data:`~shared.memory.tables.ADDED_COLUMNS` that tables made by an earlier version lack.

    ``ALTER TABLE … ADD COLUMN … NOT NULL DEFAULT <constant>``: every existing row gets the default (for
    ``conversation_state.version``, 0: such a conversation has never been written with a version yet).
    """
    inspector = inspect(connection)
    quote = connection.dialect.identifier_preparer.quote
    for table_name, column_names in ADDED_COLUMNS.items():
        present = {column["name"] for column in inspector.get_columns(table_name)}
        for name in column_names:
            if name in present:
                continue
            column = MemoryBase.metadata.tables[table_name].c[name]
            default = column.server_default.arg.text  # type: ignore[union-attr]
            kind = column.type.compile(dialect=connection.dialect)
            add = f"ADD COLUMN {quote(name)} {kind} NOT NULL DEFAULT {default}"
            connection.execute(text(f"ALTER TABLE {quote(table_name)} {add}"))


def _check_owner(connection: Connection, conversation_id: str, user_id: str) -> None:
    row = connection.execute(_CONVERSATION, {"cid": conversation_id}).first()
    if row is not None and row.user_id != user_id:  # an ownerless conversation is nobody's to continue
        raise ConversationAccessDenied(conversation_id)


def _insert_conversation(connection: Connection, conversation_id: str, user_id: str | None) -> None:
    """A new conversation's row and its empty state row (an existing id fails on the primary key)."""
    now = utc_now()
    connection.execute(_INSERT_CONVERSATION, {"id": conversation_id, "user_id": user_id, "created_at": now})
    connection.execute(
        _INSERT_STATE, {"conversation_id": conversation_id, "state": {}, "updated_at": now, "version": 0}
    )


def _read_state(connection: Connection, conversation_id: str) -> VersionedState:
    row = connection.execute(_STATE, {"cid": conversation_id}).first()
    return VersionedState() if row is None else VersionedState(row.state or {}, version=int(row.version))


def _write_state(connection: Connection, conversation_id: str, state: dict[str, Any]) -> None:
    connection.execute(_WRITE_STATE, {"cid": conversation_id, "new_state": state})


def _merge(state: Mapping[str, Any], updates: Mapping[str, Any]) -> dict[str, Any]:
    """Shallow merge: each key of ``updates`` replaces the stored value; ``None`` removes the key.

    At most :data:`~shared.bounds.MAX_STATE_KEYS` keys stay: beyond that, the oldest keys this update does not
    touch are dropped (``updates`` itself is already bounded by :func:`~shared.bounds.clip_state`).
    """
    merged = dict(state)
    for key, value in updates.items():
        if value is None:
            merged.pop(key, None)
        else:
            merged[key] = value
    excess = len(merged) - MAX_STATE_KEYS
    if excess > 0:
        for key in [key for key in merged if key not in updates][:excess]:
            del merged[key]
    return merged


_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def _storable(text: str) -> str:
    """``text`` with lone surrogates (not valid Unicode, e.g. a model's ``"\\ud800"``) replaced by U+FFFD."""
    return text if text.isascii() else _LONE_SURROGATE.sub("\ufffd", text)


def _exchange_text(text: str) -> str:
    """One message of an exchange as a context shows it: clipped, without stray control characters."""
    return clean_text(clip_text(text, MAX_EXCHANGE_CHARS))


def _memory_key(content: str) -> str:
    """Identity of a memory within a conversation: case-, accent- and whitespace-insensitive."""
    return hashlib.sha256(fold(content).encode("utf-8")).hexdigest()


def _store_memories(connection: Connection, conversation_id: str, items: Sequence[MemoryItem]) -> None:
    """Insert new memory items; an already-stored content keeps the higher of its two importances.

    ``items`` come from :func:`~shared.answer.bound_memories`: one-line, non-empty, without repeats.
    """
    best = {_memory_key(item.contenido): (item.contenido, item.importancia) for item in items}
    if not best:
        return
    existing = connection.execute(_STORED_MEMORIES, {"cid": conversation_id, "keys": list(best)}).all()
    raised: list[dict[str, Any]] = []
    for record_id, key, importance in existing:
        _, new_importance = best.pop(key)
        if new_importance > importance:
            raised.append({"record_id": record_id, "new_importance": new_importance})
    if raised:
        connection.execute(_RAISE_IMPORTANCE, raised)
    if best:
        now = utc_now()
        connection.execute(
            _INSERT_MEMORIES,
            [
                {
                    "conversation_id": conversation_id,
                    "content": content,
                    "content_key": key,
                    "importance": importance,
                    "created_at": now,
                }
                for key, (content, importance) in best.items()
            ],
        )


def _ranked_memories(
    connection: Connection, conversation_id: str, limit: int | None
) -> list[tuple[str, float]]:
    """``(content, importance)`` of the conversation's memories: by importance, then the most recent."""
    if limit is None:
        rows = connection.execute(_RANKED_MEMORIES, {"cid": conversation_id})
    else:
        rows = connection.execute(_TOP_MEMORIES, {"cid": conversation_id, "limit": limit})
    return [(content, importance) for content, importance in rows]


def _last_exchanges(connection: Connection, conversation_id: str, count: int) -> list[Exchange]:
    """The last ``count`` exchanges, oldest first, read from a bounded window of the newest messages."""
    window = count * _MESSAGES_PER_EXCHANGE
    for limit in (window, window * _WIDER_WINDOW_FACTOR):
        rows = connection.execute(_NEWEST_MESSAGES, {"cid": conversation_id, "limit": limit}).all()
        exchanges = _pair_exchanges((role, content, meta) for role, content, meta in reversed(rows))
        if len(exchanges) >= count or len(rows) < limit:
            break
    return exchanges[-count:]


def _pair_exchanges(messages: Iterable[tuple[str, str, dict[str, Any] | None]]) -> list[Exchange]:
    """Pair each final assistant message with the latest unanswered user message before it (oldest first)."""
    exchanges: list[Exchange] = []
    pending_user: str | None = None
    for role, content, meta in messages:
        if role == "user":
            pending_user = content
        elif _is_final_answer(role, meta) and pending_user is not None:
            exchanges.append(Exchange(usuario=pending_user, asistente=content))
            pending_user = None
    return exchanges


def _is_final_answer(role: str, metadata: Mapping[str, Any] | None) -> bool:
    return role == "assistant" and not (metadata or {}).get("tool_calls")


def _aware(moment: datetime) -> datetime:
    """SQLite returns naive datetimes; they were stored in UTC."""
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)
