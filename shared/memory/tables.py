"""SQLAlchemy tables of the conversation memory, with their own :class:`MemoryBase`.

Ordering is by the auto-increment ``id``, never ``created_at`` (clocks go backwards). The indexes match
``build_context``'s queries; ``conversation_state`` is the conversation's lock row and its ``version`` counts
the writes committed. Columns added later are added on open (:data:`ADDED_COLUMNS`); nothing is dropped.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any, Final

from sqlalchemy import JSON, CheckConstraint, DateTime, Float, ForeignKey, Index, Integer, String, Text, text
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

from shared.inputs import CONVERSATION_ID_LENGTH


def utc_now() -> datetime:
    """The current time in UTC, for ``created_at``/``updated_at`` only (never used for ordering)."""
    return datetime.now(UTC)


class MemoryBase(DeclarativeBase):
    """Declarative base of the memory tables, separate from the ERP's."""


class Conversation(MemoryBase):
    """One conversation between a user and the assistant."""

    __tablename__ = "conversations"

    id: Mapped[str] = mapped_column(String(CONVERSATION_ID_LENGTH), primary_key=True)
    user_id: Mapped[str | None] = mapped_column(String(128), index=True)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utc_now)


class Message(MemoryBase):
    """One message of a conversation; ``meta`` is stored in the ``metadata`` column (e.g. ``tool_calls``)."""

    __tablename__ = "messages"
    __table_args__ = (
        CheckConstraint("role IN ('user', 'assistant', 'tool', 'system')", name="ck_messages_role"),
        Index("ix_messages_conversation_order", "conversation_id", "id"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    conversation_id: Mapped[str] = mapped_column(
        String(CONVERSATION_ID_LENGTH), ForeignKey("conversations.id", ondelete="CASCADE")
    )
    role: Mapped[str] = mapped_column(String(16))
    content: Mapped[str] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utc_now)
    meta: Mapped[dict[str, Any]] = mapped_column("metadata", JSON, key="meta", default=dict)
    """Column ``metadata`` (a reserved attribute name in declarative classes). ``key="meta"`` makes Core
    statements use the attribute's name too: without it a bulk insert's ``"meta"`` key is silently dropped."""


class ConversationState(MemoryBase):
    """The structured state of a conversation (``tema``, ``anio``, ``cliente_actual``, …)."""

    __tablename__ = "conversation_state"

    conversation_id: Mapped[str] = mapped_column(
        String(CONVERSATION_ID_LENGTH), ForeignKey("conversations.id", ondelete="CASCADE"), primary_key=True
    )
    state: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    updated_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utc_now)
    version: Mapped[int] = mapped_column(Integer, default=0, server_default=text("0"))
    """How many writes (turns, state merges) were committed to the conversation; 0 when it is created."""


class MemoryRecord(MemoryBase):
    """A remembered fact. ``content_key`` (a hash of the folded content) makes duplicates impossible."""

    __tablename__ = "memory_items"
    __table_args__ = (
        CheckConstraint("importance >= 0 AND importance <= 1", name="ck_memory_items_importance"),
        Index("ix_memory_items_rank", "conversation_id", "importance", "id"),
        Index("ux_memory_items_content", "conversation_id", "content_key", unique=True),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    conversation_id: Mapped[str] = mapped_column(
        String(CONVERSATION_ID_LENGTH), ForeignKey("conversations.id", ondelete="CASCADE")
    )
    content: Mapped[str] = mapped_column(Text)
    content_key: Mapped[str] = mapped_column(String(64))
    importance: Mapped[float] = mapped_column(Float)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utc_now)


ADDED_COLUMNS: Final[dict[str, tuple[str, ...]]] = {"conversation_state": ("version",)}
"""Columns added after their table was first released: table → column names. The store adds the ones an
existing table lacks when it opens (each has a ``server_default``, so existing rows get a value)."""
