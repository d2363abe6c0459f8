"""HTTP bodies of the stateless AI server, shared by :mod:`planner_mode.server` and the HTTP client.

Every request carries everything the server needs (article §13): the message or results, the conversation
context and, for call 1, the operation catalog. Every response carries the :class:`CallUsage` the server
measured, so the ERP side counts model calls and tokens even when the model runs elsewhere.

``POST /ai/respond`` with ``Accept: application/x-ndjson`` answers in NDJSON (one JSON object per line), each
line a :data:`RespondStreamLine` told apart by ``type``::

    {"type": "answer_delta", "text": "En 2025 se vendieron "}     # zero or more: the answer as it is written
    {"type": "answer_delta", "text": "₲850.000.000."}
    {"type": "response", "answer": {...}, "usage": {...}}         # last line on success: a RespondResponse
    {"type": "error", "error": "...", "kind": "provider", ...}    # last line instead, when the model failed

``POST /ai/analyze`` streams the same way (:data:`AnalyzeStreamLine`): ``answer_delta`` lines carry a direct
answer (``respuesta_directa``) as call 1 writes it, when the reply starts with one (none for a plan with
operations), and the ``response`` line is the :class:`AnalyzeResponse` (``plan`` and ``usage``).

New fields are only ever added as optional ones, so older clients and servers keep understanding each other.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Annotated, Literal, Protocol

from pydantic import AfterValidator, BaseModel, Field, TypeAdapter

from planner_mode.plan import Answer, OperationOutcome, Plan
from shared.memory.context import ConversationContext
from shared.operations.registry import OperationSpec

__all__ = [
    "NDJSON",
    "AnalyzeLine",
    "AnalyzeRequest",
    "AnalyzeResponse",
    "AnalyzeStreamLine",
    "AnswerDeltaLine",
    "CallUsage",
    "ErrorKind",
    "ErrorLine",
    "ErrorResponse",
    "FieldError",
    "RespondLine",
    "RespondRequest",
    "RespondResponse",
    "RespondStreamLine",
    "parse_analyze_stream_line",
    "parse_stream_line",
]

NDJSON = "application/x-ndjson"
"""Media type of a streamed ``/ai/respond`` or ``/ai/analyze``: send it in ``Accept`` to get the answer in
deltas."""


class _CallTiming(Protocol):
    """What :class:`shared.llm.usage.SimulatedCall` exposes (one call's simulated timing)."""

    @property
    def first_token_ms(self) -> float: ...
    @property
    def ms_per_output_token(self) -> float: ...


class _UsageSource(Protocol):
    """What :class:`shared.llm.usage.UsageTracker` exposes (a protocol: ``shared.llm`` is imported on use)."""

    @property
    def calls(self) -> int: ...
    @property
    def input_tokens(self) -> int: ...
    @property
    def output_tokens(self) -> int: ...
    @property
    def model_ms(self) -> float: ...
    @property
    def simulated_model_ms(self) -> float | None: ...
    @property
    def simulated_calls(self) -> Sequence[_CallTiming]: ...


class CallUsage(BaseModel):
    """Model usage measured around one AI request (normally one model call)."""

    model_calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cached_input_tokens: int = 0
    """The part of :attr:`input_tokens` the provider served from its prompt (prefix) cache (0 when it does not
    say, and from servers that predate the field)."""
    model_ms: float = 0.0
    """Measured wall time inside the model."""
    simulated_model_ms: float | None = None
    """Model time under a latency profile, when the model reported one."""
    simulated_first_token_ms: float | None = None
    """Under a latency profile: time from the request to the call's first output token (overhead, prefill
    and one token). With :attr:`simulated_ms_per_token` it places the first *answer* token, which comes after
    whatever the model writes before the answer field (``approx_tokens(prefix) × ms_per_token`` later)."""
    simulated_ms_per_token: float | None = None
    """Under a latency profile: the call's time per further output token."""

    @classmethod
    def from_tracker(cls, tracker: _UsageSource) -> CallUsage:
        """Snapshot a ``UsageTracker``; the simulated token times are those of its last finished call.

        ``cached_input_tokens`` is read when the source has it (0 otherwise)."""
        last = tracker.simulated_calls[-1] if tracker.simulated_calls else None
        return cls(
            model_calls=tracker.calls,
            input_tokens=tracker.input_tokens,
            output_tokens=tracker.output_tokens,
            # Optional in the protocol: a tracker-like source that predates the count reports none.
            cached_input_tokens=int(getattr(tracker, "cached_input_tokens", 0)),
            model_ms=tracker.model_ms,
            simulated_model_ms=tracker.simulated_model_ms,
            simulated_first_token_ms=last.first_token_ms if last else None,
            simulated_ms_per_token=last.ms_per_output_token if last else None,
        )

    @classmethod
    def total(cls, usages: Iterable[CallUsage]) -> CallUsage:
        """The sum of several usages; ``simulated_model_ms`` stays ``None`` unless one of them has it.

        The per-call token times (``simulated_first_token_ms``, ``simulated_ms_per_token``) do not add up:
        the total has none; read them from the answering call's own usage.
        """
        result = cls()
        for usage in usages:
            simulated: float | None = result.simulated_model_ms
            if usage.simulated_model_ms is not None:
                simulated = (simulated or 0.0) + usage.simulated_model_ms
            result = cls(
                model_calls=result.model_calls + usage.model_calls,
                input_tokens=result.input_tokens + usage.input_tokens,
                output_tokens=result.output_tokens + usage.output_tokens,
                cached_input_tokens=result.cached_input_tokens + usage.cached_input_tokens,
                model_ms=result.model_ms + usage.model_ms,
                simulated_model_ms=simulated,
            )
        return result


def _not_blank(text: str) -> str:
    if not text.strip():
        raise ValueError("must not be empty or only whitespace")
    return text


Question = Annotated[str, Field(min_length=1), AfterValidator(_not_blank)]
"""A user's question: at least one character that is not whitespace."""


class AnalyzeRequest(BaseModel):
    """``POST /ai/analyze``: call 1."""

    message: Question = Field(description="The user's new question.")
    context: ConversationContext
    catalog: list[OperationSpec] = Field(description="The operations the ERP can execute.")


class AnalyzeResponse(BaseModel):
    """The plan and what it cost."""

    plan: Plan
    usage: CallUsage


class RespondRequest(BaseModel):
    """``POST /ai/respond``: call 2."""

    question: Question = Field(description="The user's question.")
    results: list[OperationOutcome] = Field(description="One outcome per planned operation.")
    context: ConversationContext


class RespondResponse(BaseModel):
    """The answer and what it cost."""

    answer: Answer
    usage: CallUsage


ErrorKind = Literal[
    "model_output", "provider", "timeout", "unauthorized", "too_large", "invalid_request", "internal"
]
"""``unauthorized`` 401, ``too_large`` 413, ``invalid_request`` 422, ``model_output``/``provider``/``timeout``
502, ``internal`` 500."""


class FieldError(BaseModel):
    """One reason a request body was refused (422), in FastAPI's ``detail`` shape without the input echo."""

    loc: list[str | int]
    """Where: ``["body", "context", "hoy"]``; ``["body"]`` for the body as a whole."""
    msg: str
    type: str


class ErrorResponse(BaseModel):
    """Body of every error response (401, 413, 422, 500, 502)."""

    error: str
    """One sentence for a person or a log."""
    kind: ErrorKind
    usage: CallUsage | None = None
    """For model failures (502): what the failed call cost."""
    detail: list[FieldError] | None = None
    """For an invalid request (422): the fields refused (at most 20)."""
    max_tokens: int | None = None
    """For a reply cut at the output cap (502, ``model_output``): the cap it was cut at."""


# -- the NDJSON streams of /ai/respond and /ai/analyze ------------------------------------------------------


class AnswerDeltaLine(BaseModel):
    """The next piece of ``answer.respuesta`` (or of call 1's ``plan.respuesta_directa``), as the model
    writes it."""

    type: Literal["answer_delta"] = "answer_delta"
    text: str


class RespondLine(RespondResponse):
    """The last line of a successful stream: the whole :class:`RespondResponse` (the answer as parsed)."""

    type: Literal["response"] = "response"


class ErrorLine(ErrorResponse):
    """The last line of a stream whose model call failed after the stream began (HTTP status already 200)."""

    type: Literal["error"] = "error"


class AnalyzeLine(AnalyzeResponse):
    """The last line of a successful ``/ai/analyze`` stream: the whole :class:`AnalyzeResponse`."""

    type: Literal["response"] = "response"


RespondStreamLine = Annotated[AnswerDeltaLine | RespondLine | ErrorLine, Field(discriminator="type")]
"""One line of a streamed ``/ai/respond``."""
AnalyzeStreamLine = Annotated[AnswerDeltaLine | AnalyzeLine | ErrorLine, Field(discriminator="type")]
"""One line of a streamed ``/ai/analyze``."""

_STREAM_LINE: TypeAdapter[AnswerDeltaLine | RespondLine | ErrorLine] = TypeAdapter(RespondStreamLine)
_ANALYZE_STREAM_LINE: TypeAdapter[AnswerDeltaLine | AnalyzeLine | ErrorLine] = TypeAdapter(AnalyzeStreamLine)


def parse_stream_line(line: str | bytes) -> AnswerDeltaLine | RespondLine | ErrorLine:
    """Read one NDJSON line of ``/ai/respond``; raises ``pydantic.ValidationError`` for anything else."""
    return _STREAM_LINE.validate_json(line)


def parse_analyze_stream_line(line: str | bytes) -> AnswerDeltaLine | AnalyzeLine | ErrorLine:
    """Read one NDJSON line of ``/ai/analyze``; raises ``pydantic.ValidationError`` for anything else."""
    return _ANALYZE_STREAM_LINE.validate_json(line)
