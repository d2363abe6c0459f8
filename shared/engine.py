"""The one interface both modes implement, so the CLI, the benchmark and embedders drive them alike."""

from __future__ import annotations

from collections.abc import AsyncGenerator
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from shared.security import Caller
from shared.turn import TurnResult

if TYPE_CHECKING:
    from langchain_core.runnables import RunnableConfig

    from shared.events import TurnEvent


@runtime_checkable
class AssistantEngine(Protocol):
    """Answers one user message in a conversation whose memory the ERP owns.

    ``ask``, ``aask`` and ``astream`` run the same turn (same calls, same recording, same result); ``config``
    is a LangChain ``RunnableConfig`` (``callbacks``, ``tags``, ``metadata``, ``run_name``) applied to one
    parent run per turn that contains every model call of the turn (:mod:`shared.tracing`).

    ``caller`` is required in all three: the user the embedding application authenticated, who decides what
    the model is offered and which rows the ERP shows. An engine never guesses who is asking, so forgetting
    it is a ``TypeError``, never a turn run as some default user (the single-user demo passes
    :data:`shared.security.DEMO_CALLER` explicitly); a ``caller`` that is not a ``Caller`` is refused with a
    ``TypeError`` too (:func:`shared.security.require_caller`).
    """

    mode: str

    def ask(
        self,
        conversation_id: str,
        message: str,
        caller: Caller,
        *,
        config: RunnableConfig | None = None,
    ) -> TurnResult:
        """Run one turn as ``caller``. Raises only ``ConversationAccessDenied`` (the conversation belongs to
        another user) or, for a misuse of the API, ``TypeError`` (``caller`` is not a ``Caller``); input,
        storage, model, plan, operation and provider failures land in the result."""
        ...

    async def aask(
        self,
        conversation_id: str,
        message: str,
        caller: Caller,
        *,
        config: RunnableConfig | None = None,
    ) -> TurnResult:
        """``ask`` without blocking the event loop (models' ``ainvoke``, handlers in threads)."""
        ...

    def astream(
        self,
        conversation_id: str,
        message: str,
        caller: Caller,
        *,
        config: RunnableConfig | None = None,
    ) -> AsyncGenerator[TurnEvent, None]:
        """The turn as events (:mod:`shared.events`), the answer in deltas as the model writes it; the last
        event is ``TurnDone``. Raises ``ConversationAccessDenied`` before the first event. An async
        generator, so a reader that stops early (a client hung up) can close it (``contextlib.aclosing``):
        nothing is recorded then."""
        ...
