"""Reading a conversation: its state and version, ranked memories, history, and the last exchanges.

The queries match the indexes of :mod:`shared.memory.tables`, so their cost does not grow with the length of
a conversation.
"""

from __future__ import annotations

from datetime import UTC, datetime

from sqlalchemy import Connection, bindparam, select

from shared.answer import MemoryItem
from shared.memory.context import Exchange
from shared.memory.records import ConversationInfo, StoredMessage, VersionedState, is_final_answer
from shared.memory.tables import MemoryRecord, Message
from shared.memory.writing import CONVERSATION, STATE

_MESSAGES_PER_EXCHANGE = 8
"""How many recent messages per requested exchange :func:`last_exchanges` reads at first."""
_WIDER_WINDOW_FACTOR = 8
"""If that window holds too few exchanges (long tool-calling turns), one retry reads this many times more."""

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


def conversation(connection: Connection, conversation_id: str) -> ConversationInfo | None:
    row = connection.execute(CONVERSATION, {"cid": conversation_id}).first()
    if row is None:
        return None
    return ConversationInfo(id=row.id, user_id=row.user_id, created_at=_aware(row.created_at))


def state(connection: Connection, conversation_id: str) -> VersionedState:
    row = connection.execute(STATE, {"cid": conversation_id}).first()
    return VersionedState() if row is None else VersionedState(row.state or {}, version=int(row.version))


def history(connection: Connection, conversation_id: str) -> list[StoredMessage]:
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


def ranked_memories(connection: Connection, conversation_id: str, limit: int | None) -> list[MemoryItem]:
    """The conversation's memories: by importance, then the most recent."""
    if limit is None:
        rows = connection.execute(_RANKED_MEMORIES, {"cid": conversation_id})
    else:
        rows = connection.execute(_TOP_MEMORIES, {"cid": conversation_id, "limit": limit})
    return [MemoryItem(content=content, importance=importance) for content, importance in rows]


def last_exchanges(connection: Connection, conversation_id: str, count: int) -> list[Exchange]:
    """The last ``count`` exchanges, oldest first, read from a bounded window of the newest messages."""
    window = count * _MESSAGES_PER_EXCHANGE
    for limit in (window, window * _WIDER_WINDOW_FACTOR):
        rows = connection.execute(_NEWEST_MESSAGES, {"cid": conversation_id, "limit": limit}).all()
        exchanges: list[Exchange] = []
        pending_user: str | None = None
        for role, content, meta in reversed(rows):
            if role == "user":
                pending_user = content
            elif is_final_answer(role, meta) and pending_user is not None:
                exchanges.append(Exchange(user=pending_user, assistant=content))
                pending_user = None
        if len(exchanges) >= count or len(rows) < limit:
            break
    return exchanges[-count:]


def _aware(moment: datetime) -> datetime:
    """SQLite returns naive datetimes; they were stored in UTC."""
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)
