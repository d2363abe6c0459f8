"""One callback handler that counts model calls, tokens and model time, for any LangChain chat model.

It sums ``AIMessage.usage_metadata`` of every generation (no ``model_name`` needed, unlike LangChain's
``UsageMetadataCallbackHandler``), including ``input_token_details.cache_read``, the prompt tokens served from
a provider's prefix cache.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterable, Mapping
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, Literal
from uuid import UUID

from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.messages import BaseMessage
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, GenerationChunk, LLMResult
from pydantic import BaseModel, Field

from shared.llm.provider_errors import never_reached_model, usage_from_error

CallRole = Literal["plan", "answer", "agent"]
"""What a model call was for: the planner's call 1 (``plan``) or call 2 (``answer``), or a tool-calling agent
step (``agent``)."""


class ModelCall(BaseModel):
    """One model call of a turn, measured: where its time went and what it read and wrote."""

    role: CallRole
    ms: float
    """Wall time of the call, from the request to the reply's end."""
    first_token_ms: float | None = None
    """From the call's start to its first streamed piece of text or tool call (the wait for the prompt to be
    read); ``None`` when the call was not streamed or wrote nothing."""
    input_tokens: int = 0
    cached_input_tokens: int = 0
    """The part of :attr:`input_tokens` the provider served from its prompt (prefix) cache."""
    output_tokens: int = 0


class CallUsage(BaseModel):
    """Model usage measured around one or more model calls (a tracker's totals at one moment)."""

    model_calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cached_input_tokens: int = 0
    """The part of :attr:`input_tokens` the provider served from its prompt (prefix) cache (0 when it does not
    say, and from servers that predate the field)."""
    unreported_calls: int = 0
    """Model calls whose provider reported no token usage: their tokens are unknown, not 0."""
    connection_retries: int = 0
    """Requests resent once because their connection failed before the server answered."""
    model_ms: float = 0.0
    """Measured wall time inside the model."""
    calls: list[ModelCall] = Field(default_factory=list)
    """Each call that ended, in the order it ended (empty when measured elsewhere without the detail)."""

    @classmethod
    def from_tracker(cls, tracker: UsageTracker) -> CallUsage:
        """Snapshot a ``UsageTracker``."""
        return tracker.snapshot()

    @classmethod
    def total(cls, usages: Iterable[CallUsage]) -> CallUsage:
        """The sum of several usages (their calls one after the other)."""
        usages = list(usages)
        summed = {name: sum(getattr(usage, name) for usage in usages) for name in _COUNTS}
        return cls(**summed, calls=[call for usage in usages for call in usage.calls])


class UsageTracker(BaseCallbackHandler):
    """Count model calls, input/output tokens and model time, and keep each call's :class:`ModelCall` (its
    calls are marked ``role``); thread-safe."""

    raise_error = False
    run_inline = True

    def __init__(self, role: CallRole = "agent") -> None:
        super().__init__()
        self.role: CallRole = role
        self._lock = threading.Lock()
        self._started: dict[UUID, float] = {}
        self._first_token: dict[UUID, float] = {}
        self._zero()

    def _zero(self) -> None:
        self.calls = self.input_tokens = self.output_tokens = self.cached_input_tokens = 0
        self.unreported_calls = self.connection_retries = 0
        self.model_ms = 0.0
        self.ended: list[ModelCall] = []

    # -- callbacks ----------------------------------------------------------------------------------------

    def on_chat_model_start(
        self, serialized: dict[str, Any], messages: list[list[BaseMessage]], *, run_id: UUID, **kwargs: Any
    ) -> None:
        """A chat model run started: count it and start its clock."""
        self._start(run_id)

    def on_llm_start(
        self, serialized: dict[str, Any], prompts: list[str], *, run_id: UUID, **kwargs: Any
    ) -> None:
        """A (non-chat) LLM run started: count it and start its clock."""
        self._start(run_id)

    def on_llm_new_token(
        self,
        token: str | list[str | dict[str, Any]],
        *,
        chunk: GenerationChunk | ChatGenerationChunk | None = None,
        run_id: UUID,
        **kwargs: Any,
    ) -> None:
        """A streamed piece: the first one with text or a tool call stamps the call's first token."""
        message = getattr(chunk, "message", None)
        if not token and not getattr(message, "tool_call_chunks", None):
            return  # an empty piece (a role header, the usage at the end) is not the model writing
        now = time.perf_counter()
        with self._lock:
            self._first_token.setdefault(run_id, now)

    def on_llm_end(self, response: LLMResult, *, run_id: UUID, **kwargs: Any) -> None:
        """A run ended: stop its clock and add the usage of every generation."""
        now = time.perf_counter()
        usage = _generation_usage(response)
        with self._lock:
            self._stop(run_id, now, usage)
            self.input_tokens += usage.input_tokens
            self.output_tokens += usage.output_tokens
            self.cached_input_tokens += usage.cached_input_tokens
            if not usage.reported:
                self.unreported_calls += 1

    def on_llm_error(
        self, error: BaseException, *, run_id: UUID, response: LLMResult | None = None, **kwargs: Any
    ) -> None:
        """A run failed: stop its clock and add the tokens it used (the call still counts), unless the request
        never reached a model (no connection could be opened): that is no model call at all."""
        now = time.perf_counter()
        if never_reached_model(error):
            with self._lock:
                if self._started.pop(run_id, None) is not None:
                    self._first_token.pop(run_id, None)
                    self.calls -= 1
            return
        from_error = usage_from_error(error)
        partial = _generation_usage(response) if response is not None else _Usage()
        input_tokens, output_tokens = (
            from_error if from_error is not None else (partial.input_tokens, partial.output_tokens)
        )
        cached = min(partial.cached_input_tokens, input_tokens)
        with self._lock:
            self._stop(run_id, now, _Usage(input_tokens, output_tokens, cached))
            self.input_tokens += input_tokens
            self.output_tokens += output_tokens
            self.cached_input_tokens += cached

    # -- totals -------------------------------------------------------------------------------------------

    @property
    def total_tokens(self) -> int:
        """Input plus output tokens."""
        return self.input_tokens + self.output_tokens

    def snapshot(self) -> CallUsage:
        """The current totals as one consistent record (a copy: later calls do not change it)."""
        with self._lock:
            fields = {name: getattr(self, name) for name in _COUNTS if name != "model_calls"}
            return CallUsage(model_calls=self.calls, calls=list(self.ended), **fields)

    def reset(self) -> None:
        """Zero every counter (runs still in flight keep their clocks)."""
        with self._lock:
            self._zero()

    # -- helpers ------------------------------------------------------------------------------------------

    def _start(self, run_id: UUID) -> None:
        _active_tracker.set(self)  # the run's HTTP requests happen in this context: retries count here
        with self._lock:
            self.calls += 1
            self._started[run_id] = time.perf_counter()

    def _count_retry(self) -> None:
        with self._lock:
            self.connection_retries += 1

    def _stop(self, run_id: UUID, now: float, usage: _Usage) -> None:
        started = self._started.pop(run_id, None)
        first_token = self._first_token.pop(run_id, None)
        if started is None:
            return
        self.model_ms += (now - started) * 1000.0
        self.ended.append(
            ModelCall(
                role=self.role,
                ms=(now - started) * 1000.0,
                first_token_ms=None if first_token is None else (first_token - started) * 1000.0,
                input_tokens=usage.input_tokens,
                cached_input_tokens=usage.cached_input_tokens,
                output_tokens=usage.output_tokens,
            )
        )


_COUNTS = tuple(name for name in CallUsage.model_fields if name != "calls")
"""The summable fields of :class:`CallUsage`."""

_active_tracker: ContextVar[UsageTracker | None] = ContextVar("active_usage_tracker", default=None)
"""The tracker of the model run that started last in this context (see :func:`count_connection_retry`)."""


def count_connection_retry() -> None:
    """Count one connection retry on the tracker of the model run in flight in this context (if any)."""
    tracker = _active_tracker.get()
    if tracker is not None:
        tracker._count_retry()


@dataclass(frozen=True)
class _Usage:
    """What the generations of one response reported, summed."""

    input_tokens: int = 0
    output_tokens: int = 0
    cached_input_tokens: int = 0
    reported: bool = True
    """Whether some generation carried ``usage_metadata`` (a response with no generation counts as one)."""


def _generation_usage(response: LLMResult) -> _Usage:
    """Input, output and cached input tokens summed over every chat generation."""
    input_tokens = output_tokens = cached = 0
    seen = reported = False
    for generations in response.generations:
        for generation in generations:
            if not isinstance(generation, ChatGeneration):
                continue
            seen = True
            usage = getattr(generation.message, "usage_metadata", None)
            if usage:
                reported = True
                input_tokens += int(usage.get("input_tokens", 0) or 0)
                output_tokens += int(usage.get("output_tokens", 0) or 0)
                cached += _cache_read(usage)
    return _Usage(input_tokens, output_tokens, cached, reported=reported or not seen)


def _cache_read(usage: Mapping[str, Any]) -> int:
    """``input_token_details["cache_read"]`` of one ``usage_metadata`` (0 when absent or not a count)."""
    details = usage.get("input_token_details")
    value = details.get("cache_read") if isinstance(details, Mapping) else None
    return int(value) if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0
