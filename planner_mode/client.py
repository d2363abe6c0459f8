"""How the ERP-side engine reaches the AI: the :class:`AIClient` interface, and the client in this process.

Each of the two calls is an async stream of the text for the user, then one reply (:class:`PlanReply`,
:class:`AnswerReply`) carrying the parsed result and its :class:`~shared.llm.usage.CallUsage`. A failed call
raises :class:`AICallError`, which still carries the usage, so per-turn counts include failed calls.
:class:`InProcessAIClient` calls a :class:`~planner_mode.ai.PlannerAI` here, with no HTTP body in
between; :class:`~planner_mode.server.http_client.HttpAIClient` the AI server, turning its bodies into the
same replies.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, AsyncIterator, Callable, Sequence
from contextlib import aclosing
from dataclasses import dataclass
from typing import Protocol, TypeVar, runtime_checkable

from langchain_core.callbacks import BaseCallbackHandler, BaseCallbackManager
from langchain_core.runnables import RunnableConfig
from pydantic import BaseModel

from planner_mode.ai import PlannerAI
from planner_mode.plan import Answer, OperationOutcome, Plan
from shared.errors import ErpAiError, ModelOutputError, ProviderError
from shared.llm.usage import CallRole, CallUsage
from shared.memory.context import ConversationContext
from shared.operations.registry import OperationSpec

__all__ = [
    "AICallError",
    "AIClient",
    "AnswerReply",
    "InProcessAIClient",
    "PlanReply",
    "closing_iter",
    "last_item",
]

R = TypeVar("R")
P = TypeVar("P", bound=BaseModel)
T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class PlanReply:
    """Call 1's result: the plan, already validated as a :class:`Plan`, and what the call cost."""

    plan: Plan
    usage: CallUsage


@dataclass(frozen=True, slots=True)
class AnswerReply:
    """Call 2's result: the answer, already validated as an :class:`Answer`, and what the call cost."""

    answer: Answer
    usage: CallUsage


class AICallError(ErpAiError):
    """A call to the AI failed; ``cause`` says how and ``usage`` what the failed call cost."""

    def __init__(self, cause: ModelOutputError | ProviderError, usage: CallUsage | None = None) -> None:
        self.cause = cause
        self.usage = usage or CallUsage()
        super().__init__(str(cause))


@runtime_checkable
class AIClient(Protocol):
    """The two calls of a planner turn. Implementations hold no conversation state.

    ``config`` is the LangChain config of the model call (the turn's child config: callbacks, tags,
    metadata); ``stream=False`` tells a call that only its result will be read (the model is not asked to
    stream; deltas may be missing). Both calls raise :class:`AICallError` when they fail, even midway
    through their stream.
    """

    def plan(
        self,
        message: str,
        context: ConversationContext,
        catalog: Sequence[OperationSpec],
        *,
        config: RunnableConfig | None = None,
        stream: bool = True,
    ) -> AsyncIterator[str | PlanReply]:
        """Call 1: a direct answer's text in deltas as the model writes it (only when the reply starts with
        its ``respuesta_directa``: :class:`planner_mode.streamed_text.DirectAnswerText`), then exactly one
        :class:`PlanReply` (the parsed plan and the call's usage) as the last item."""
        ...

    def answer(
        self,
        message: str,
        results: Sequence[OperationOutcome],
        context: ConversationContext,
        catalog: Sequence[OperationSpec],
        *,
        config: RunnableConfig | None = None,
        stream: bool = True,
    ) -> AsyncIterator[str | AnswerReply]:
        """Call 2: the answer's text in deltas as the model writes it, then exactly one
        :class:`AnswerReply` (the parsed answer and the call's usage) as the last item. ``context`` and
        ``catalog`` are call 1's (call 2's prompt continues call 1's)."""
        ...


async def last_item(stream: AsyncIterator[str | T]) -> T:
    """The result of a call's stream (its last item), the text before it dropped; the stream is closed."""
    async with aclosing(closing_iter(stream)) as items:
        async for item in items:
            if not isinstance(item, str):
                return item
    raise AICallError(ModelOutputError("The call's stream ended without a result."))


async def closing_iter(stream: AsyncIterator[T]) -> AsyncGenerator[T, None]:
    """``stream`` as a generator that closes it (when it can be closed) however the iteration ends."""
    try:
        async for item in stream:
            yield item
    finally:
        close = getattr(stream, "aclose", None)
        if close is not None:
            await close()


def _with_handler(config: RunnableConfig | None, handler: BaseCallbackHandler) -> RunnableConfig:
    """A copy of ``config`` whose callbacks (none, a list, or a manager) also include ``handler``, as
    :func:`langchain_core.runnables.config.merge_configs` does it without pulling in a context config."""
    merged: RunnableConfig = {**config} if config else {}
    callbacks = merged.get("callbacks")
    if isinstance(callbacks, BaseCallbackManager):
        manager = callbacks.copy()
        manager.add_handler(handler, inherit=True)
        merged["callbacks"] = manager
    else:
        merged["callbacks"] = [*(callbacks or []), handler]
    return merged


class InProcessAIClient:
    """Calls a :class:`PlannerAI` in this process, measuring each call with its own ``UsageTracker`` added
    to (a copy of) ``config``'s callbacks, so the caller's handlers see the call too."""

    def __init__(self, ai: PlannerAI) -> None:
        self.ai = ai

    def plan(
        self,
        message: str,
        context: ConversationContext,
        catalog: Sequence[OperationSpec],
        *,
        config: RunnableConfig | None = None,
        stream: bool = True,
    ) -> AsyncGenerator[str | PlanReply, None]:
        """Call 1 in process, streamed with the model's ``astream``."""
        return _measured_stream(
            "plan",
            config,
            lambda measured: self.ai.plan(message, context, catalog, config=measured, stream=stream),
            PlanReply,
        )

    def answer(
        self,
        message: str,
        results: Sequence[OperationOutcome],
        context: ConversationContext,
        catalog: Sequence[OperationSpec],
        *,
        config: RunnableConfig | None = None,
        stream: bool = True,
    ) -> AsyncGenerator[str | AnswerReply, None]:
        """Call 2 in process, streamed with the model's ``astream``."""
        return _measured_stream(
            "answer",
            config,
            lambda measured: self.ai.answer(
                message, results, context, catalog, config=measured, stream=stream
            ),
            AnswerReply,
        )


async def _measured_stream(
    role: CallRole,
    config: RunnableConfig | None,
    start: Callable[[RunnableConfig], AsyncGenerator[str | P, None]],
    wrap: Callable[[P, CallUsage], R],
) -> AsyncGenerator[str | R, None]:
    """One streamed :class:`PlannerAI` call measured by its own tracker: its text deltas, then its parsed
    result (the last item the call yields) with the call's usage (its calls marked ``role``), as
    ``wrap(result, usage)``."""
    # Imported on use: ``shared.llm`` also loads the offline model, which ``import planner_mode`` skips.
    from shared.llm.usage import UsageTracker

    tracker = UsageTracker(role)
    stream = start(_with_handler(config, tracker))
    try:
        async with aclosing(stream):
            async for item in stream:
                if not isinstance(item, str):
                    # The model's run has ended (the tracker has its usage) once the reply is parsed.
                    yield wrap(item, CallUsage.from_tracker(tracker))
                    return
                yield item
        raise ModelOutputError("The model's stream ended without a result.")
    except (ModelOutputError, ProviderError) as exc:  # a model failure, with what the call cost
        raise AICallError(exc, CallUsage.from_tracker(tracker)) from exc
