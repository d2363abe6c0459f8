"""Simulated model time of a turn, computed by the benchmark from the model calls it recorded.

Under a latency profile the offline stand-in (:mod:`benchmarks.stand_ins.latency`) reports in each reply's
``response_metadata`` how long the call would have taken on the profiled hardware (:data:`TIMING_KEYS`). The
engines know nothing of it: the runner hands each turn a :class:`SimulatedCalls` callback, which sees every
model call of the turn, and :func:`simulated_times` turns those calls into the row's ``simulated_model_ms``
and ``simulated_first_answer_ms``. A model that reports no simulated timing (any real model, or a remote AI
server's, which the ERP side never sees) gives ``None`` for both.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Sequence
from typing import Any
from uuid import UUID

from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.outputs import ChatGeneration, LLMResult
from pydantic import BaseModel, ConfigDict

from shared.llm.tokens import approx_tokens
from shared.turn import TurnResult

__all__ = ["SimulatedCall", "SimulatedCalls", "first_text_ms", "simulated_times"]

TIMING_KEYS = ("simulated_latency_ms", "simulated_first_token_ms", "simulated_ms_per_token")
"""The ``response_metadata`` keys a :class:`SimulatedCall` is read from, in its fields' order."""


class SimulatedCall(BaseModel):
    """The simulated timing of one model call."""

    model_config = ConfigDict(frozen=True)

    total_ms: float
    """``simulated_latency_ms``: the whole call, prompt to last token."""
    first_token_ms: float
    """``simulated_first_token_ms``: overhead, prefill and the first output token."""
    ms_per_output_token: float
    """``simulated_ms_per_token``: decode time of each further output token."""


class SimulatedCalls(BaseCallbackHandler):
    """A LangChain callback that keeps one entry per model call of a turn, in the order the calls ended: its
    :class:`SimulatedCall`, or ``None`` for a call that failed or reported no simulated timing."""

    raise_error = False
    run_inline = True

    def __init__(self) -> None:
        super().__init__()
        self._lock = threading.Lock()
        self.calls: list[SimulatedCall | None] = []

    def on_llm_end(self, response: LLMResult, *, run_id: UUID, **kwargs: Any) -> None:
        with self._lock:
            self.calls.append(_simulated_call(response))

    def on_llm_error(self, error: BaseException, *, run_id: UUID, **kwargs: Any) -> None:
        with self._lock:
            self.calls.append(None)


def first_text_ms(earlier_ms: Iterable[float], answering: SimulatedCall, prefix: str) -> float:
    """Simulated time until a reader sees the first answer text: the whole of each earlier call
    (``earlier_ms``), the answering call's time to its first token, then the tokens it writes before the
    answer's first character (``prefix``, e.g. ``{"respuesta":"``; empty for prose) at its decode rate."""
    return sum(earlier_ms) + answering.first_token_ms + approx_tokens(prefix) * answering.ms_per_output_token


def simulated_times(
    result: TurnResult, calls: Sequence[SimulatedCall | None]
) -> tuple[float | None, float | None]:
    """``(simulated_model_ms, simulated_first_answer_ms)`` of a turn from its recorded ``calls``.

    The model time is the sum over the calls that reported one (``None`` when none did). The first answer
    needs a written answer, every one of the turn's ``model_calls`` recorded, and a timing for each call up to
    the answering one; otherwise it is ``None``.
    """
    reported = [call.total_ms for call in calls if call is not None]
    model_ms = sum(reported) if reported else None
    start = result.first_answer_call
    if start is None or len(calls) != result.model_calls or start.call >= len(calls):
        return model_ms, None
    used = calls[: start.call + 1]
    if any(call is None for call in used):
        return model_ms, None
    *earlier, answering = [call for call in used if call is not None]
    return model_ms, first_text_ms((call.total_ms for call in earlier), answering, start.prefix)


def _simulated_call(response: LLMResult) -> SimulatedCall | None:
    for generations in response.generations:
        for generation in generations:
            if not isinstance(generation, ChatGeneration):
                continue
            metadata = generation.message.response_metadata
            total, first, per_token = (_number(metadata.get(key)) for key in TIMING_KEYS)
            if total is not None and first is not None and per_token is not None:
                return SimulatedCall(total_ms=total, first_token_ms=first, ms_per_output_token=per_token)
    return None


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None
