"""The ERP's conversation memory: conversations, messages, state and memory items in SQL (article §10–12).

:class:`MemoryStore` is the only way the modes touch the memory. A turn is written with :meth:`record_turn` in
one transaction, and :meth:`MemoryStore.build_context` reads back a bounded
:class:`~shared.memory.context.ConversationContext` with three indexed queries, however long the history is.

Concurrency. Each call runs on its own connection, so a store can be shared by threads. Every write
transaction starts with a write to the conversation's state row (see :func:`_lock_conversation`): on SQLite
(WAL, busy timeout) that takes the database write lock before anything is read, so read-merge-write of the
state and of the memory items cannot lose an update; on other databases it locks the state row. Turns on
different conversations never touch the same rows.

Cost. Every call of a turn runs on a plain SQLAlchemy Core connection with statements built once, at import:
on SQLite, building a statement and going through an ORM session cost more than running the query. A turn
is written in four to six statements (state lock and read, messages, memories, state) and its context is
read in three.
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
from sqlalchemy import Connection, Engine, bindparam, false, insert, select, update
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
_STATE = select(ConversationState.state).where(ConversationState.conversation_id == bindparam("cid"))
_INSERT_STATE = insert(ConversationState)
_TOUCH_STATE = (
    update(ConversationState)
    .where(ConversationState.conversation_id == bindparam("cid"))
    .values(updated_at=bindparam("now"))
)
"""The first statement of every write transaction: see :func:`_lock_conversation`."""
_TOUCH_STATE_RETURNING = _TOUCH_STATE.returning(ConversationState.state)
_WRITE_STATE = (
    update(ConversationState)
    .where(ConversationState.conversation_id == bindparam("cid"))
    .values(state=bindparam("new_state"), updated_at=bindparam("now"))
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
            _lock_conversation(connection, conversation_id, user_id)
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
        self, conversation_id: str, turn: TurnRecord, *, user_id: str | None = None
    ) -> dict[str, Any]:
        """Store a whole turn in ONE transaction: its messages, memories and state update, or nothing at all.

        An unknown ``conversation_id`` is created first, in the same transaction (clients may pick their own
        ids), owned by ``user_id``. With ``user_id``, a conversation owned by another user is refused inside
        the transaction (:class:`ConversationAccessDenied`, nothing written), so two users racing to create
        one id cannot share it. Returns the conversation state after the merge.

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
            state = _lock_conversation(connection, conversation_id, user_id)
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
            if merged != state:  # an unchanged state costs no write (the lock already set updated_at)
                state = _write_state(connection, conversation_id, merged)
        return state

    def merge_state(self, conversation_id: str, updates: Mapping[str, Any]) -> dict[str, Any]:
        """Merge ``updates`` into the state (``None`` deletes a key) and return the new state.

        Creates the conversation if it does not exist yet, like :meth:`record_turn`, and bounds the state the
        same way.
        """
        check_conversation_id(conversation_id)
        bounded = clip_state(updates)
        with self._storage("write the conversation memory"), self._engine.begin() as connection:
            state = _lock_conversation(connection, conversation_id)
            merged = _merge(state, bounded)
            return _write_state(connection, conversation_id, merged) if merged != state else state

    # -- reading -------------------------------------------------------------------------------------------

    def get_state(self, conversation_id: str) -> dict[str, Any]:
        """The conversation's state (``{}`` for an unknown conversation)."""
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
        yields an empty context.

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
) -> dict[str, Any]:
    """Start a write transaction on the conversation, creating it if needed; return its current state.

    The first statement is an ``UPDATE`` of the state row: SQLite takes its write lock there (even when no
    row matches), other databases lock the row, so what is read next cannot change before the commit. Where
    the database supports ``UPDATE … RETURNING`` (SQLite 3.35+, PostgreSQL) the same statement reads the
    state; elsewhere a ``SELECT`` follows.
    """
    params = {"cid": conversation_id, "now": utc_now()}
    if connection.dialect.update_returning:
        row = connection.execute(_TOUCH_STATE_RETURNING, params).first()
        if row is not None:
            return dict(row.state or {})
    elif connection.execute(_TOUCH_STATE, params).rowcount > 0:
        return _read_state(connection, conversation_id)
    # No state row: a new conversation, or one created by other means without its state row.
    if connection.execute(_CONVERSATION, {"cid": conversation_id}).first() is None:
        _insert_conversation(connection, conversation_id, user_id)
    else:  # a conversation created by other means, without its state row
        connection.execute(
            _INSERT_STATE, {"conversation_id": conversation_id, "state": {}, "updated_at": utc_now()}
        )
    return {}


def _create_tables(engine: Engine) -> None:
    """Create the memory tables if missing, race-free across processes, and check that the store can write.

    Inside :func:`~shared.erp.storage.setup_transaction`, so concurrent first opens run one after another.
    The ``UPDATE … WHERE false`` changes nothing but needs write access, so a read-only database fails here,
    before any model call is paid, rather than when the first turn is recorded.
    """
    with setup_transaction(engine) as connection:
        MemoryBase.metadata.create_all(connection)
        connection.execute(_PROBE_WRITE)


def _check_owner(connection: Connection, conversation_id: str, user_id: str) -> None:
    row = connection.execute(_CONVERSATION, {"cid": conversation_id}).first()
    if row is not None and row.user_id != user_id:  # an ownerless conversation is nobody's to continue
        raise ConversationAccessDenied(conversation_id)


def _insert_conversation(connection: Connection, conversation_id: str, user_id: str | None) -> None:
    """A new conversation's row and its empty state row."""
    now = utc_now()
    connection.execute(_INSERT_CONVERSATION, {"id": conversation_id, "user_id": user_id, "created_at": now})
    connection.execute(_INSERT_STATE, {"conversation_id": conversation_id, "state": {}, "updated_at": now})


def _read_state(connection: Connection, conversation_id: str) -> dict[str, Any]:
    return dict(connection.scalar(_STATE, {"cid": conversation_id}) or {})


def _write_state(connection: Connection, conversation_id: str, state: dict[str, Any]) -> dict[str, Any]:
    connection.execute(_WRITE_STATE, {"cid": conversation_id, "new_state": state, "now": utc_now()})
    return state


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
