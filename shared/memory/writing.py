"""Writing a conversation: the lock-and-version statement, turns, state merges, memories and the tables.

Every write to a conversation starts with :func:`lock_conversation` (see the concurrency rules of
:mod:`shared.memory.store`); statements are built once, at import (parameter ``cid``: the conversation id).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping, Sequence
from typing import Any

from sqlalchemy import Connection, Engine, Executable, bindparam, false, insert, inspect, select, text, update
from sqlalchemy.dialects import postgresql, sqlite

from shared.answer import MemoryItem
from shared.bounds import MAX_STATE_KEYS
from shared.erp.storage import setup_transaction
from shared.errors import ConversationAccessDenied
from shared.memory.records import MessageIn
from shared.memory.tables import (
    ADDED_COLUMNS,
    Conversation,
    ConversationState,
    MemoryBase,
    MemoryRecord,
    Message,
    utc_now,
)
from shared.text import fold

CONVERSATION = select(Conversation.id, Conversation.user_id, Conversation.created_at).where(
    Conversation.id == bindparam("cid")
)
STATE = select(ConversationState.state, ConversationState.version).where(
    ConversationState.conversation_id == bindparam("cid")
)
_CREATE_IF_MISSING: dict[str, tuple[Executable, Executable]] = {
    name: (
        dialect.insert(Conversation).on_conflict_do_nothing(),
        dialect.insert(ConversationState).on_conflict_do_nothing(),
    )
    for name, dialect in (("sqlite", sqlite), ("postgresql", postgresql))
}
"""Upserts of a conversation's two rows, per dialect: see :func:`create_if_missing`."""
_BUMP_VERSION = (
    update(ConversationState)
    .where(ConversationState.conversation_id == bindparam("cid"))
    .values(updated_at=bindparam("now"), version=ConversationState.version + 1)
)
_BUMP_VERSION_RETURNING = _BUMP_VERSION.returning(ConversationState.state, ConversationState.version)
_WRITE_STATE = (
    update(ConversationState)
    .where(ConversationState.conversation_id == bindparam("cid"))
    .values(state=bindparam("new_state"))
)
_STORED_MEMORIES = select(MemoryRecord.id, MemoryRecord.content_key, MemoryRecord.importance).where(
    MemoryRecord.conversation_id == bindparam("cid"),
    MemoryRecord.content_key.in_(bindparam("keys", expanding=True)),
)
_RAISE_IMPORTANCE = (
    update(MemoryRecord)
    .where(MemoryRecord.id == bindparam("record_id"))
    .values(importance=bindparam("new_importance"))
)
_PROBE_WRITE = update(ConversationState).where(false()).values(updated_at=ConversationState.updated_at)
"""Changes nothing, but only a writable database runs it: see :func:`create_tables`."""
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def create_tables(engine: Engine) -> None:
    """Create the memory tables if missing, race-free across processes, and check that the store can write."""
    with setup_transaction(engine) as connection:
        MemoryBase.metadata.create_all(connection)
        _add_missing_columns(connection)
        connection.execute(_PROBE_WRITE)


def _add_missing_columns(connection: Connection) -> None:
    """Add the :data:`~shared.memory.tables.ADDED_COLUMNS` that tables made by an earlier version lack."""
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


def _new_rows(conversation_id: str, user_id: str | None) -> tuple[dict[str, Any], dict[str, Any]]:
    now = utc_now()
    return (
        {"id": conversation_id, "user_id": user_id, "created_at": now},
        {"conversation_id": conversation_id, "state": {}, "updated_at": now, "version": 0},
    )


def insert_conversation(connection: Connection, conversation_id: str, user_id: str | None) -> None:
    """A new conversation's row and its empty state row (an existing id fails on the primary key)."""
    conversation, state = _new_rows(conversation_id, user_id)
    connection.execute(insert(Conversation), conversation)
    connection.execute(insert(ConversationState), state)


def create_if_missing(connection: Connection, conversation_id: str, user_id: str | None) -> None:
    """Create the conversation's row (owned by ``user_id``) and its state row, each unless it exists."""
    conversation, state = _new_rows(conversation_id, user_id)
    upserts = _CREATE_IF_MISSING.get(connection.dialect.name)
    if upserts is not None:
        connection.execute(upserts[0], conversation)
        connection.execute(upserts[1], state)
        return
    if connection.execute(CONVERSATION, {"cid": conversation_id}).first() is None:
        connection.execute(insert(Conversation), conversation)
    if connection.execute(STATE, {"cid": conversation_id}).first() is None:
        connection.execute(insert(ConversationState), state)


def check_owner(connection: Connection, conversation_id: str, user_id: str) -> None:
    """Refuse (:class:`ConversationAccessDenied`) a conversation that exists and is not ``user_id``'s."""
    row = connection.execute(CONVERSATION, {"cid": conversation_id}).first()
    if row is not None and row.user_id != user_id:  # an ownerless conversation is nobody's to continue
        raise ConversationAccessDenied(conversation_id)


def lock_conversation(
    connection: Connection, conversation_id: str, user_id: str | None = None
) -> tuple[dict[str, Any], int]:
    """Start a write to the conversation, creating it if needed: return its state and version before it."""
    params = {"cid": conversation_id, "now": utc_now()}
    bumped = _bump_version(connection, params)
    if bumped is None:
        create_if_missing(connection, conversation_id, user_id)
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
        row = connection.execute(STATE, params).first()
    else:
        row = None
    return None if row is None else (dict(row.state or {}), int(row.version))


def merge_state(
    connection: Connection, conversation_id: str, state: dict[str, Any], updates: Mapping[str, Any]
) -> dict[str, Any]:
    """Merge ``updates`` into the locked conversation's ``state`` and store the result if it changed."""
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
    if merged != state:
        write_state(connection, conversation_id, merged)
    return merged


def write_state(connection: Connection, conversation_id: str, state: dict[str, Any]) -> None:
    connection.execute(_WRITE_STATE, {"cid": conversation_id, "new_state": state})


def insert_messages(connection: Connection, conversation_id: str, messages: Sequence[MessageIn]) -> None:
    """Append the messages in order, whole, with lone surrogates (not valid Unicode) replaced by U+FFFD."""
    if not messages:
        return
    now = utc_now()
    rows = [
        {
            "conversation_id": conversation_id,
            "role": message.role,
            "content": _LONE_SURROGATE.sub("\ufffd", message.content),
            "meta": dict(message.metadata),
            "created_at": now,
        }
        for message in messages
    ]
    connection.execute(insert(Message), rows)


def store_memories(connection: Connection, conversation_id: str, items: Sequence[MemoryItem]) -> None:
    """Insert new memory items; an already-stored content keeps the higher of its two importances."""
    best = {
        hashlib.sha256(fold(item.content).encode("utf-8")).hexdigest(): (item.content, item.importance)
        for item in items
    }
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
        rows = [
            {"conversation_id": conversation_id, "content": content, "content_key": key}
            | {"importance": importance, "created_at": now}
            for key, (content, importance) in best.items()
        ]
        connection.execute(insert(MemoryRecord), rows)
