"""Fault injection for the protocol emulators.

Faults are chosen per server instance (:class:`EmulatorFaults`, mutable while the server runs) and can be
overridden per request with the ``X-Emulator-Fault`` header (``none`` switches a server default off for that
request). The server-wide configuration is one ``mode`` (optionally for ``count`` requests) or a *sequence*
of steps with counts, e.g. ``EmulatorFaults(sequence=[("http_500", 2), ("slow", None)])``: the first two
model requests get a 500, every later one is slow. :func:`parse_fault_spec` reads the command line's
``KIND[:COUNT]``. Only model requests (chat / generate) take part; listings and version probes never fail.

Each mode reproduces a failure seen in the wild, so a client's real exception path gets exercised:

``http_500``
    The server answers ``500`` with the provider's error body.
``stream_error``
    The reply starts normally, then an error record arrives mid-stream (Ollama's ``{"error": …}`` line,
    Gemini's SSE ``data: {"error": …}``). A non-streaming request gets a ``500`` instead.
``stream_break``
    The connection drops midway: a stream sends the first half of its text chunks and then ends without its
    final chunk or the end of the chunked body; a non-streaming reply sends its headers and half of its JSON
    body. The client's HTTP layer raises (httpx: ``RemoteProtocolError``, incomplete body).
``malformed_tool_call``
    The model emitted tool-call arguments that are not valid JSON. Ollama reports it as
    ``error parsing tool call: raw='…', err=unexpected end of JSON input`` (langchain#34746); Gemini ends
    the candidate with ``finishReason: MALFORMED_FUNCTION_CALL`` and no parts, as the real API does.
``schema_invalid``
    A reply to a structured-output request that ignores the schema (ollama#8063): valid JSON with none of the
    required keys, or Markdown-fenced JSON when only JSON mode was asked for.
``slow``
    The reply is delayed by ``slow_seconds`` (header ``X-Emulator-Delay`` overrides), for timeout tests.
``stall``
    The server accepts the request and never answers: only the client's timeout ends it. The stalled
    connection is dropped when the client hangs up or the server stops (it never blocks shutdown).

The offline model's reply faults (:data:`~benchmarks.stand_ins.faults.ReplyFault`: ``runaway``,
``repeat_memory``, ``placeholder_plan``, ``schema_ignored``, ``no_tool_calls``, ``text_tool_calls``,
``think_wrap``) rewrite whatever model backs the server's reply as :mod:`benchmarks.stand_ins.faults`
describes; ``runaway`` repeats until the request's output cap (Ollama ``options.num_predict``, Gemini
``maxOutputTokens``, OpenAI ``max_tokens``; 8,192 tokens without one) cuts it, reported as a length stop.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

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
"""The fault modes every emulator understands: its own transport faults, then the reply faults
(:data:`~benchmarks.stand_ins.faults.ReplyFault`, which rewrite the backing model's reply as the offline
model's do)."""

REPLY_FAULT_MODES: tuple[ReplyFault, ...] = REPLY_FAULTS

FAULT_MODES: tuple[EmulatorFault, ...] = get_args(EmulatorFault)
FAULT_HEADER = "X-Emulator-Fault"
"""Request header selecting a fault for one request (a mode name, or ``none``)."""
DELAY_HEADER = "X-Emulator-Delay"
"""Request header overriding the ``slow`` delay for one request, in seconds."""


class FaultStep(BaseModel):
    """One step of a fault sequence: ``mode`` for the next ``count`` model requests (``None``: all)."""

    model_config = ConfigDict(validate_assignment=True)

    mode: EmulatorFault
    count: int | None = Field(default=None, ge=0)
    """Requests this step still applies to; counts down as they arrive. ``None``: every later request."""

    def __str__(self) -> str:
        return self.mode if self.count is None else f"{self.mode}:{self.count}"


def parse_fault_spec(spec: str) -> FaultStep:
    """Read ``KIND[:COUNT]`` (``http_500:2``, ``slow``) into a :class:`FaultStep`.

    Raises:
        ValueError: an unknown kind, or a count that is not a whole number of 1 or more; the message lists the
            valid kinds.
    """
    kind, sep, count_text = spec.strip().partition(":")
    kind = kind.strip().lower()
    if kind not in FAULT_MODES:
        raise ValueError(
            f"Unknown emulator fault {kind!r} in {spec!r}; use KIND[:COUNT] with KIND one of "
            f"{', '.join(FAULT_MODES)}."
        )
    if not sep:
        return FaultStep(mode=kind)  # type: ignore[arg-type]  # checked against FAULT_MODES just above
    count = int(count_text) if count_text.strip().isdigit() else 0
    if count < 1:
        raise ValueError(f"Invalid fault count in {spec!r}: COUNT must be a whole number, 1 or more.")
    return FaultStep(mode=kind, count=count)  # type: ignore[arg-type]


def _ends(steps: list[FaultStep]) -> None:
    for step in steps[:-1]:
        if step.count is None:
            raise ValueError(
                f"Fault {step.mode!r} has no COUNT, so it never ends and the faults after it would never "
                f"apply: give it one (e.g. {step.mode}:1) or put it last."
            )


class EmulatorFaults(BaseModel):
    """Server-wide fault configuration; tests may change it while the server runs.

    Either one ``mode`` (with an optional ``count``) or a ``sequence`` of steps, tried in order: each
    request takes the first step with requests left. A step without a count never runs out, so it must be
    the last. Steps may be given as :class:`FaultStep`, ``(mode, count)`` pairs or ``"KIND[:COUNT]"`` text.
    """

    model_config = ConfigDict(validate_assignment=True)

    mode: EmulatorFault | None = None
    """Fault applied to every model request (``None``: no fault)."""
    slow_seconds: float = Field(default=1.0, ge=0.0)
    """Delay of the ``slow`` fault."""
    count: int | None = Field(default=None, ge=0)
    """How many requests still get the server-wide fault; ``None`` means every request."""
    sequence: list[FaultStep] = Field(default_factory=list)
    """Faults in order, each for its count of model requests (instead of ``mode``)."""

    @field_validator("sequence", mode="before")
    @classmethod
    def _steps(cls, value: Any) -> Any:
        if not isinstance(value, list | tuple):
            return value
        return [
            parse_fault_spec(step)
            if isinstance(step, str)
            else {"mode": step[0], "count": step[1]}
            if isinstance(step, list | tuple)
            else step
            for step in value
        ]

    @model_validator(mode="after")
    def _one_plan(self) -> EmulatorFaults:
        if self.sequence and self.mode is not None:
            raise ValueError("give either mode (with count) or sequence, not both")
        _ends(self.sequence)
        return self

    @classmethod
    def from_specs(cls, specs: list[str] | tuple[str, ...], *, slow_seconds: float = 1.0) -> EmulatorFaults:
        """A sequence from ``KIND[:COUNT]`` texts (the command line's ``--fault``).

        Raises:
            ValueError: a spec does not parse, or a step other than the last has no count; one clear line.
        """
        steps = [parse_fault_spec(spec) for spec in specs]
        _ends(steps)
        return cls(sequence=steps, slow_seconds=slow_seconds)

    def describe(self) -> str:
        """The configuration in ``KIND[:COUNT]`` words, ``"none"`` when nothing is injected."""
        if self.mode is not None:
            return str(FaultStep(mode=self.mode, count=self.count))
        return ", then ".join(str(step) for step in self.sequence) or "none"


@dataclass(frozen=True)
class FaultDecision:
    """The fault chosen for one request."""

    mode: EmulatorFault | None = None
    delay_seconds: float = 0.0
    index: int = 0
    """The request's number among this server's model requests (0-based); some faults alternate on it."""

    @property
    def reply_fault(self) -> ReplyFault | None:
        """The mode when it rewrites the backing model's reply, else ``None``."""
        return self.mode if self.mode in REPLY_FAULT_MODES else None  # type: ignore[return-value]


class UnknownFaultError(ValueError):
    """The fault header names a mode that does not exist."""


class FaultSelector:
    """Chooses each request's fault from its headers and the server-wide configuration (thread-safe)."""

    def __init__(self, faults: EmulatorFaults | None = None) -> None:
        self.faults = faults or EmulatorFaults()
        self._lock = threading.Lock()
        self._model_requests = 0

    def decide(self, headers: Mapping[str, str]) -> FaultDecision:
        """Return the fault for a request; a header wins over the server-wide mode.

        Raises:
            UnknownFaultError: the header names an unknown mode.
        """
        lowered = {key.lower(): value for key, value in headers.items()}
        with self._lock:
            index = self._model_requests
            self._model_requests += 1
        requested = lowered.get(FAULT_HEADER.lower(), "").strip()
        if requested not in ("", "none", *FAULT_MODES):
            raise UnknownFaultError(
                f"Unknown emulator fault {requested!r}; use one of {', '.join(FAULT_MODES)} or none."
            )
        taken = None if requested == "none" else requested or self._take_server_fault()
        mode: EmulatorFault | None = taken  # type: ignore[assignment]  # checked against FAULT_MODES above
        if mode is None:
            return FaultDecision(index=index)
        delay = 0.0
        if mode == "slow":
            delay = self.faults.slow_seconds
            raw_delay = lowered.get(DELAY_HEADER.lower())
            if raw_delay:
                try:
                    delay = max(0.0, float(raw_delay))
                except ValueError as exc:
                    raise UnknownFaultError(f"{DELAY_HEADER} must be a number of seconds.") from exc
        return FaultDecision(mode=mode, delay_seconds=delay, index=index)

    def _take_server_fault(self) -> EmulatorFault | None:
        with self._lock:  # one ``mode`` with its ``count`` is a sequence of one step
            faults = self.faults
            steps: list[EmulatorFaults | FaultStep] = (
                [faults] if faults.mode is not None else [*faults.sequence]
            )
            for step in steps:
                if step.count is None or step.count > 0:
                    step.count = None if step.count is None else step.count - 1
                    return step.mode
            return None
