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
from typing import Any
from uuid import UUID

from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.messages import BaseMessage
from langchain_core.outputs import ChatGeneration, LLMResult
from pydantic import BaseModel

from shared.llm.provider_errors import usage_from_error


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

    @classmethod
    def from_tracker(cls, tracker: UsageTracker) -> CallUsage:
        """Snapshot a ``UsageTracker``."""
        return tracker.snapshot()

    @classmethod
    def total(cls, usages: Iterable[CallUsage]) -> CallUsage:
        """The sum of several usages."""
        usages = list(usages)
        return cls(**{name: sum(getattr(usage, name) for usage in usages) for name in cls.model_fields})


class UsageTracker(BaseCallbackHandler):
    """Count model calls, input/output tokens and model time; thread-safe."""

    raise_error = False
    run_inline = True

    def __init__(self) -> None:
        super().__init__()
        self._lock = threading.Lock()
        self._started: dict[UUID, float] = {}
        self._zero()

    def _zero(self) -> None:
        self.calls = self.input_tokens = self.output_tokens = self.cached_input_tokens = 0
        self.unreported_calls = self.connection_retries = 0
        self.model_ms = 0.0

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

    def on_llm_end(self, response: LLMResult, *, run_id: UUID, **kwargs: Any) -> None:
        """A run ended: stop its clock and add the usage of every generation."""
        now = time.perf_counter()
        usage = _generation_usage(response)
        with self._lock:
            self._stop(run_id, now)
            self.input_tokens += usage.input_tokens
            self.output_tokens += usage.output_tokens
            self.cached_input_tokens += usage.cached_input_tokens
            if not usage.reported:
                self.unreported_calls += 1

    def on_llm_error(
        self, error: BaseException, *, run_id: UUID, response: LLMResult | None = None, **kwargs: Any
    ) -> None:
        """A run failed: stop its clock and add the tokens it used (the call still counts)."""
        now = time.perf_counter()
        from_error = usage_from_error(error)
        partial = _generation_usage(response) if response is not None else _Usage()
        input_tokens, output_tokens = (
            from_error if from_error is not None else (partial.input_tokens, partial.output_tokens)
        )
        cached = min(partial.cached_input_tokens, input_tokens)
        with self._lock:
            self._stop(run_id, now)
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
            fields = {name: getattr(self, name) for name in CallUsage.model_fields if name != "model_calls"}
            return CallUsage(model_calls=self.calls, **fields)

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

    def _stop(self, run_id: UUID, now: float) -> None:
        started = self._started.pop(run_id, None)
        if started is not None:
            self.model_ms += (now - started) * 1000.0


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
