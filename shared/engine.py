"""The one interface both modes implement, so the CLI, the benchmark and embedders drive them alike."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import AsyncGenerator
from contextlib import aclosing
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from shared.events import TurnDone
from shared.security import Caller
from shared.turn import TurnResult
from shared.turn_steps import run_until_complete

if TYPE_CHECKING:
    from langchain_core.runnables import RunnableConfig

    from shared.events import TurnEvent


@runtime_checkable
class AssistantEngine(Protocol):
    """Answers one user message in a conversation whose memory the ERP owns."""

    mode: str

    def ask(
        self, conversation_id: str, message: str, caller: Caller, *, config: RunnableConfig | None = None
    ) -> TurnResult:
        """Run one turn as ``caller``. Raises only ``ConversationAccessDenied`` (the conversation belongs to
        another user), a :class:`~shared.errors.ConfigurationError` the turn cannot run without fixing (an AI
        server that refuses the engine's bearer token: ``planner_mode.AIServerUnauthorized``) or, for a
        misuse of the API, ``TypeError`` (``caller`` is not a ``Caller``); input, storage, model, plan,
        operation and provider failures land in the result."""
        ...

    async def aask(
        self, conversation_id: str, message: str, caller: Caller, *, config: RunnableConfig | None = None
    ) -> TurnResult:
        """``ask`` without blocking the event loop (models' ``ainvoke``, handlers in threads)."""
        ...

    def astream(
        self, conversation_id: str, message: str, caller: Caller, *, config: RunnableConfig | None = None
    ) -> AsyncGenerator[TurnEvent, None]:
        """The turn as events (:mod:`shared.events`), the answer in deltas as the model writes it; the last
        event is ``TurnDone``. Raises ``ConversationAccessDenied`` before the first event. An async
        generator, so a reader that stops early (a client hung up) can close it (``contextlib.aclosing``):
        nothing is recorded then."""
        ...


class TurnEngine(ABC):
    """The three entry points of :class:`AssistantEngine` over a mode's one turn driver, :meth:`_turn`."""

    mode: str

    @abstractmethod
    def _turn(
        self,
        conversation_id: str,
        message: str,
        caller: Caller,
        config: RunnableConfig | None,
        *,
        reading: bool,
    ) -> AsyncGenerator[TurnEvent, None]:
        """The turn as events, ``TurnDone`` last. ``reading``: a reader takes the answer as it is written (the
        deltas are decoded live and ``first_answer_ms`` is stamped)."""

    def ask(
        self, conversation_id: str, message: str, caller: Caller, *, config: RunnableConfig | None = None
    ) -> TurnResult:
        """Answer ``message`` in ``conversation_id`` (created for ``caller`` if unknown) as ``caller`` and
        record the turn; :meth:`aask` run to completion."""
        return run_until_complete(self.aask(conversation_id, message, caller, config=config))

    async def aask(
        self, conversation_id: str, message: str, caller: Caller, *, config: RunnableConfig | None = None
    ) -> TurnResult:
        """:meth:`ask` without blocking the event loop: the turn drained to its end (what follows
        ``TurnDone``, such as closing the turn's trace run, runs too) and ``TurnDone``'s result returned."""
        last: TurnEvent | None = None
        async with aclosing(self._turn(conversation_id, message, caller, config, reading=False)) as events:
            async for event in events:
                last = event
        if not isinstance(last, TurnDone):
            raise AssertionError("a turn always ends in TurnDone")
        return last.result

    def astream(
        self, conversation_id: str, message: str, caller: Caller, *, config: RunnableConfig | None = None
    ) -> AsyncGenerator[TurnEvent, None]:
        """The turn as events (:mod:`shared.events`), the answer in ``AnswerDelta`` s as the model writes it,
        ``TurnDone`` last (the turn is recorded just before it)."""
        return self._turn(conversation_id, message, caller, config, reading=True)
