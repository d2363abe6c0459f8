"""Fault injection for the protocol emulators.

A fault is chosen per server instance (:class:`EmulatorFaults`, mutable while the server runs) and can be
overridden per request with the ``X-Emulator-Fault`` header (``none`` switches a server default off for that
request). Each mode reproduces a failure seen in the wild, so a client's real exception path gets exercised:

``http_500``
    The server answers ``500`` with the provider's error body.
``stream_error``
    The reply starts normally, then an error record arrives mid-stream (Ollama's ``{"error": …}`` line,
    Gemini's SSE ``data: {"error": …}``). A non-streaming request gets a ``500`` instead.
``malformed_tool_call``
    The model emitted tool-call arguments that are not valid JSON. Ollama reports it as
    ``error parsing tool call: raw='…', err=unexpected end of JSON input`` (langchain#34746); Gemini ends
    the candidate with ``finishReason: MALFORMED_FUNCTION_CALL`` and no parts, as the real API does.
``schema_invalid``
    A reply to a structured-output request that ignores the schema (ollama#8063): valid JSON with none of the
    required keys, or Markdown-fenced JSON when only JSON mode was asked for.
``slow``
    The reply is delayed by ``slow_seconds`` (header ``X-Emulator-Delay`` overrides), for timeout tests.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Literal, get_args

from pydantic import BaseModel, ConfigDict, Field

EmulatorFault = Literal["http_500", "stream_error", "malformed_tool_call", "schema_invalid", "slow"]
"""The fault modes every emulator understands."""

FAULT_MODES: tuple[EmulatorFault, ...] = get_args(EmulatorFault)
FAULT_HEADER = "X-Emulator-Fault"
"""Request header selecting a fault for one request (a mode name, or ``none``)."""
DELAY_HEADER = "X-Emulator-Delay"
"""Request header overriding the ``slow`` delay for one request, in seconds."""


class EmulatorFaults(BaseModel):
    """Server-wide fault configuration; tests may change it while the server runs."""

    model_config = ConfigDict(validate_assignment=True)

    mode: EmulatorFault | None = None
    """Fault applied to every model request (``None``: no fault)."""
    slow_seconds: float = Field(default=1.0, ge=0.0)
    """Delay of the ``slow`` fault."""
    count: int | None = Field(default=None, ge=0)
    """How many requests still get the server-wide fault; ``None`` means every request."""


class FaultDecision(BaseModel):
    """The fault chosen for one request."""

    model_config = ConfigDict(frozen=True)

    mode: EmulatorFault | None = None
    delay_seconds: float = 0.0


class UnknownFaultError(ValueError):
    """The fault header names a mode that does not exist."""


class FaultSelector:
    """Chooses each request's fault from its headers and the server-wide configuration (thread-safe)."""

    def __init__(self, faults: EmulatorFaults | None = None) -> None:
        self.faults = faults or EmulatorFaults()
        self._lock = threading.Lock()

    def decide(self, headers: Mapping[str, str]) -> FaultDecision:
        """Return the fault for a request; a header wins over the server-wide mode.

        Raises:
            UnknownFaultError: the header names an unknown mode.
        """
        lowered = {key.lower(): value for key, value in headers.items()}
        requested = lowered.get(FAULT_HEADER.lower(), "").strip()
        mode: EmulatorFault | None
        if requested:
            if requested == "none":
                return FaultDecision()
            if requested not in FAULT_MODES:
                raise UnknownFaultError(
                    f"Unknown emulator fault {requested!r}; use one of {', '.join(FAULT_MODES)} or none."
                )
            mode = requested  # type: ignore[assignment]  # checked against FAULT_MODES just above
        else:
            mode = self._take_server_fault()
        if mode is None:
            return FaultDecision()
        delay = 0.0
        if mode == "slow":
            delay = self.faults.slow_seconds
            raw_delay = lowered.get(DELAY_HEADER.lower())
            if raw_delay:
                try:
                    delay = max(0.0, float(raw_delay))
                except ValueError as exc:
                    raise UnknownFaultError(f"{DELAY_HEADER} must be a number of seconds.") from exc
        return FaultDecision(mode=mode, delay_seconds=delay)

    def _take_server_fault(self) -> EmulatorFault | None:
        with self._lock:
            faults = self.faults
            if faults.mode is None:
                return None
            if faults.count is None:
                return faults.mode
            if faults.count <= 0:
                return None
            faults.count -= 1
            return faults.mode
