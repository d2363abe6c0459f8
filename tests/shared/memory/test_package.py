"""The public face of ``shared.memory`` stays small and stable."""

from __future__ import annotations

import shared.memory


def test_public_names_are_pinned() -> None:
    assert sorted(shared.memory.__all__) == [
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
    assert all(hasattr(shared.memory, name) for name in shared.memory.__all__)
