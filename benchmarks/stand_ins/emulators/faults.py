"""Fault injection for the protocol emulators.

A server's faults (:class:`EmulatorFaults`, mutable while it runs) are one ``mode`` (optionally for ``count``
model requests) or a ``sequence`` of counted steps, e.g. ``[("http_500", 2), ("slow", None)]``: two 500s,
then every request slow. The ``X-Emulator-Fault`` header overrides them for one request (``none``: no
fault). Only model requests (chat / generate) take part; listings and version probes never fail.

Each mode reproduces a failure seen in the wild, so that a client's real exception path runs:

``http_500``
    A ``500`` with the provider's error body.
``stream_error``
    The reply starts, then an error record arrives mid-stream (Ollama's ``{"error": …}`` line, an SSE
    ``data: {"error": …}``); without streaming, a ``500``.
``stream_break``
    The connection drops midway: a stream sends the first half of its text chunks, then ends without its
    final chunk or the end of the chunked body; a JSON reply sends its headers and half its body (httpx:
    ``RemoteProtocolError``).
``malformed_tool_call``
    Tool-call arguments that are not JSON: Ollama's ``error parsing tool call: raw='…', err=unexpected end
    of JSON input`` (langchain#34746), Gemini's ``finishReason: MALFORMED_FUNCTION_CALL`` without parts,
    OpenAI's broken ``arguments`` string.
``schema_invalid``
    A structured reply that ignores the schema (ollama#8063): JSON without the required keys, or fenced
    JSON when only JSON mode was asked for.
``slow``
    The reply waits ``slow_seconds`` (the ``X-Emulator-Delay`` header overrides), for timeout tests.
``stall``
    No answer at all: only the client's timeout ends it (a server that stops drops the connection).

The reply faults (:data:`~benchmarks.stand_ins.faults.ReplyFault`: ``runaway``, ``repeat_memory``,
``placeholder_plan``, ``schema_ignored``, ``no_tool_calls``, ``text_tool_calls``, ``think_wrap``) rewrite
the backing model's reply as the offline model's faults do; ``runaway`` grows until the request's output
cap (Ollama ``options.num_predict``, Gemini ``maxOutputTokens``, OpenAI ``max_tokens``; else 8,192 tokens)
cuts it, reported as a length stop.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field, model_validator

from benchmarks.stand_ins.faults import REPLY_FAULTS, ReplyFault

EmulatorFault = Literal[
    "http_500",
    "stream_error",
    "stream_break",
    "malformed_tool_call",
    "schema_invalid",
    "slow",
    "stall",
    ReplyFault,
]
"""Every emulator fault: the transport faults, then the reply faults."""

FAULT_MODES: tuple[EmulatorFault, ...] = get_args(EmulatorFault)
FAULT_HEADER = "X-Emulator-Fault"
"""Request header selecting one request's fault (a mode name, or ``none``)."""
DELAY_HEADER = "X-Emulator-Delay"
"""Request header overriding one request's ``slow`` delay, in seconds."""


class FaultStep(BaseModel):
    """``mode`` for the next ``count`` model requests (``None``: every later one); the count runs down."""

    model_config = ConfigDict(validate_assignment=True)

    mode: EmulatorFault
    count: int | None = Field(default=None, ge=0)

    @model_validator(mode="before")
    @classmethod
    def _from_pair_or_spec(cls, value: Any) -> Any:
        if isinstance(value, str):
            return parse_fault_spec(value).model_dump()
        return {"mode": value[0], "count": value[1]} if isinstance(value, list | tuple) else value

    def __str__(self) -> str:
        return self.mode if self.count is None else f"{self.mode}:{self.count}"


def parse_fault_spec(spec: str) -> FaultStep:
    """Read ``KIND[:COUNT]`` (``http_500:2``, ``slow``).

    Raises:
        ValueError: an unknown kind (the message lists the valid ones), or a count that is not a whole
            number of 1 or more.
    """
    kind, sep, count_text = spec.strip().partition(":")
    kind = kind.strip().lower()
    if kind not in FAULT_MODES:
        raise ValueError(
            f"Unknown emulator fault {kind!r} in {spec!r}; use KIND[:COUNT] with KIND one of "
            f"{', '.join(FAULT_MODES)}."
        )
    if not sep:
        return FaultStep.model_validate({"mode": kind})
    if not count_text.strip().isdigit() or int(count_text) < 1:
        raise ValueError(f"Invalid fault count in {spec!r}: COUNT must be a whole number, 1 or more.")
    return FaultStep.model_validate({"mode": kind, "count": int(count_text)})


def _check_ends(steps: list[FaultStep]) -> None:
    for step in steps[:-1]:
        if step.count is None:
            raise ValueError(
                f"Fault {step.mode!r} has no COUNT, so it never ends and the faults after it would never "
                f"apply: give it one (e.g. {step.mode}:1) or put it last."
            )


class EmulatorFaults(BaseModel):
    """A server's faults: one ``mode`` (with an optional ``count``) or a ``sequence`` of steps.

    Each request takes the first step with requests left, so only the last step may lack a count. A step
    may also be given as a ``(mode, count)`` pair or ``"KIND[:COUNT]"`` text.
    """

    model_config = ConfigDict(validate_assignment=True)

    mode: EmulatorFault | None = None
    slow_seconds: float = Field(default=1.0, ge=0.0)
    count: int | None = Field(default=None, ge=0)
    """Requests ``mode`` still applies to (``None``: all)."""
    sequence: list[FaultStep] = Field(default_factory=list)

    @model_validator(mode="after")
    def _one_plan(self) -> EmulatorFaults:
        if self.sequence and self.mode is not None:
            raise ValueError("give either mode (with count) or sequence, not both")
        _check_ends(self.sequence)
        return self

    @classmethod
    def from_specs(cls, specs: list[str] | tuple[str, ...], *, slow_seconds: float = 1.0) -> EmulatorFaults:
        """A sequence from the command line's ``--fault KIND[:COUNT]`` texts.

        Raises:
            ValueError: a spec does not parse, or a step before the last has no count.
        """
        steps = [parse_fault_spec(spec) for spec in specs]
        _check_ends(steps)
        return cls(sequence=steps, slow_seconds=slow_seconds)

    def describe(self) -> str:
        """The faults in ``KIND[:COUNT]`` words (``"none"``)."""
        if self.mode is not None:
            return str(FaultStep(mode=self.mode, count=self.count))
        return ", then ".join(map(str, self.sequence)) or "none"

    def decide(self, headers: Mapping[str, str], index: int = 0) -> FaultDecision:
        """Request number ``index``'s fault: its header's, else the next of these faults (used up).

        Not thread-safe: the server calls it under its lock.

        Raises:
            UnknownFaultError: the headers name an unknown mode, or a delay that is not a number.
        """
        lowered = {key.lower(): value for key, value in headers.items()}
        requested = lowered.get(FAULT_HEADER.lower(), "").strip()
        named = next((mode for mode in FAULT_MODES if mode == requested), None)
        if named is None and requested not in ("", "none"):
            raise UnknownFaultError(
                f"Unknown emulator fault {requested!r}; use one of {', '.join(FAULT_MODES)} or none."
            )
        mode = None if requested == "none" else named or self._take()
        delay = self.slow_seconds if mode == "slow" else 0.0
        if mode == "slow" and (raw_delay := lowered.get(DELAY_HEADER.lower())):
            try:
                delay = max(0.0, float(raw_delay))
            except ValueError as exc:
                raise UnknownFaultError(f"{DELAY_HEADER} must be a number of seconds.") from exc
        return FaultDecision(mode, delay, index)

    def _take(self) -> EmulatorFault | None:
        """Use up one request of the first step with requests left (one ``mode``: a one-step sequence)."""
        steps: list[EmulatorFaults | FaultStep] = [self] if self.mode is not None else [*self.sequence]
        for step in steps:
            if step.count is None or step.count > 0:
                step.count = None if step.count is None else step.count - 1
                return step.mode
        return None


@dataclass(frozen=True)
class FaultDecision:
    """One request's fault."""

    mode: EmulatorFault | None = None
    delay_seconds: float = 0.0
    index: int = 0
    """The request's number among the server's model requests (0-based); some faults alternate on it."""

    @property
    def reply_fault(self) -> ReplyFault | None:
        """The mode when it rewrites the backing model's reply."""
        return next((fault for fault in REPLY_FAULTS if fault == self.mode), None)


class UnknownFaultError(ValueError):
    """A fault header the emulator cannot read."""
