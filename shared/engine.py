"""The one interface both modes implement, so the CLI and the benchmark drive them alike."""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from shared.turn import TurnResult


@runtime_checkable
class AssistantEngine(Protocol):
    """Answers one user message in a conversation whose memory the ERP owns."""

    mode: str

    def ask(self, conversation_id: str, message: str) -> TurnResult:
        """Run one turn. Never raises for model, plan or operation failures: they land in the result."""
        ...
