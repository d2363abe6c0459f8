"""The one interface both modes implement, so the CLI and the benchmark drive them alike."""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from shared.security import DEMO_CALLER, Caller
from shared.turn import TurnResult


@runtime_checkable
class AssistantEngine(Protocol):
    """Answers one user message in a conversation whose memory the ERP owns."""

    mode: str

    def ask(self, conversation_id: str, message: str, caller: Caller = DEMO_CALLER) -> TurnResult:
        """Run one turn as ``caller``. Raises only ``ConversationAccessDenied`` (the conversation belongs to
        another user); input, storage, model, plan, operation and provider failures land in the result."""
        ...
