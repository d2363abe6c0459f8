"""HTTP bodies of the stateless AI server, shared by :mod:`planner_mode.server` and the HTTP client.

Every request carries everything the server needs (article §13); every response carries the
:class:`CallUsage` the server measured, so the ERP side counts the calls and tokens of a remote model.
With ``Accept: application/x-ndjson`` both calls answer one JSON object per line, told apart by ``type``::

    {"type": "answer_delta", "text": "En 2025 se vendieron "}     # zero or more: the text as it is written
    {"type": "response", "answer": {...}, "usage": {...}}         # last on success (``plan`` for /ai/analyze)
    {"type": "error", "error": "...", "kind": "provider", ...}    # last instead, when the model failed

``/ai/analyze``'s deltas are a direct answer (``respuesta_directa``), when the reply starts with one. New
fields are only ever added as optional ones, so older clients and servers keep understanding each other.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Annotated, Any, Final, Literal

from pydantic import AfterValidator, BaseModel, Field, TypeAdapter

from planner_mode.plan import Answer, OperationOutcome, Plan
from shared.bounds import (
    MAX_CONTEXT_EXCHANGES,
    MAX_CONTEXT_MEMORIES,
    MAX_EXCHANGE_CHARS,
    MAX_MEMORY_CHARS,
    MAX_STATE_KEY_CHARS,
    MAX_STATE_KEYS,
    MAX_STATE_VALUE_CHARS,
    json_size,
)
from shared.errors import InputError
from shared.inputs import MAX_QUESTION_CHARS, check_question, check_text
from shared.llm.usage import CallUsage
from shared.memory.context import ConversationContext
from shared.operations.registry import OperationSpec

__all__ = [
    "MAX_CATALOG_CHARS",
    "MAX_CATALOG_OPERATIONS",
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


# -- what a request may carry: the limits and the text rule the ERP side applies, checked again here ---------

MAX_CATALOG_OPERATIONS: Final = 100
"""Most operations in one request's catalog (the demo's sales registry has 8)."""
MAX_CATALOG_CHARS: Final = 100_000
"""Characters of one request's catalog as compact JSON, about 25,000 tokens (the demo's: about 3,400)."""


def _checked(check: Callable[..., str | None], *args: str) -> Any:
    """``check(*args)``, an :class:`InputError` raised as the ``ValueError`` pydantic makes a 422 of."""
    try:
        return check(*args)
    except InputError as exc:
        raise ValueError(str(exc)) from None


def _at_most(count: int, limit: int, what: str, unit: str) -> None:
    if count > limit:
        raise ValueError(f"{what} has {count} {unit}; the limit is {limit}")


def _strings(value: Any) -> Iterator[str]:
    """Every string inside JSON data, dict keys included."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield str(key)
            yield from _strings(item)
    elif isinstance(value, list | tuple):
        for item in value:
            yield from _strings(item)


def _bounded_context(context: ConversationContext) -> ConversationContext:
    """``context`` if it keeps the bounds the memory store builds it to (:mod:`shared.bounds`) and holds no
    control character (:data:`shared.inputs.CONTROL_CHARACTERS`); else ``ValueError`` naming the part."""
    _at_most(len(context.memories), MAX_CONTEXT_MEMORIES, "memoria", "items")
    for index, item in enumerate(context.memories):
        _at_most(len(item), MAX_MEMORY_CHARS, f"memoria[{index}]", "characters")
        _checked(check_text, item, f"memoria[{index}]")
    _at_most(len(context.state), MAX_STATE_KEYS, "estado", "keys")
    for number, (key, value) in enumerate(context.state.items(), start=1):
        _at_most(len(key), MAX_STATE_KEY_CHARS, f"estado key {number}", "characters")
        _at_most(
            json_size(value), MAX_STATE_VALUE_CHARS, f"estado key {number}'s value", "characters of JSON"
        )
        for text in (key, *_strings(value)):
            _checked(check_text, text, f"estado key {number}")
    _at_most(len(context.recent_exchanges), MAX_CONTEXT_EXCHANGES, "ultimos_intercambios", "items")
    for index, exchange in enumerate(context.recent_exchanges):
        for name, text in (("usuario", exchange.user), ("asistente", exchange.assistant)):
            what = f"ultimos_intercambios[{index}].{name}"
            _at_most(len(text), MAX_EXCHANGE_CHARS, what, "characters")
            _checked(check_text, text, what)
    return context


def _bounded_catalog(catalog: list[OperationSpec]) -> list[OperationSpec]:
    """``catalog`` if its JSON has at most :data:`MAX_CATALOG_CHARS` characters and no string in it (names,
    descriptions, the parameters' schemas) holds a control character; else ``ValueError``."""
    data = [spec.model_dump(mode="json") for spec in catalog]
    _at_most(json_size(data), MAX_CATALOG_CHARS, "catalog", "characters of JSON")
    for index, spec in enumerate(data):
        for text in _strings(spec):
            _checked(check_text, text, f"catalog[{index}] ({str(spec['name'])[:40]!r})")
    return catalog


Question = Annotated[
    str,
    Field(min_length=1, max_length=MAX_QUESTION_CHARS),
    AfterValidator(lambda text: _checked(check_question, text)),
]
"""A user's question as the ERP accepts it (:func:`shared.inputs.check_question`): 1 to
:data:`~shared.inputs.MAX_QUESTION_CHARS` characters, not only whitespace, no control character but tab and
line ends."""
Context = Annotated[ConversationContext, AfterValidator(_bounded_context)]
"""A conversation context within the bounds the memory store builds it to (:mod:`shared.bounds`)."""
Catalog = Annotated[
    list[OperationSpec], Field(max_length=MAX_CATALOG_OPERATIONS), AfterValidator(_bounded_catalog)
]
"""At most :data:`MAX_CATALOG_OPERATIONS` operations in :data:`MAX_CATALOG_CHARS` characters of JSON."""


class AnalyzeRequest(BaseModel):
    """``POST /ai/analyze``: call 1.

    The HTTP client builds the same model, so the ERP side refuses what the server would refuse (422)."""

    message: Question = Field(description="The user's new question.")
    context: Context
    catalog: Catalog = Field(description="The operations the ERP can execute.")


class AnalyzeResponse(BaseModel):
    """The plan and what it cost."""

    plan: Plan
    usage: CallUsage


class RespondRequest(BaseModel):
    """``POST /ai/respond``: call 2."""

    question: Question = Field(description="The user's question.")
    results: list[OperationOutcome] = Field(description="One outcome per planned operation.")
    context: Context
    catalog: Catalog = Field(
        description="Call 1's catalog: call 2's prompt continues call 1's, so a prefix cache serves it."
    )


class RespondResponse(BaseModel):
    """The answer and what it cost."""

    answer: Answer
    usage: CallUsage


ErrorKind = Literal[
    "model_output",
    "provider",
    "timeout",
    "unauthorized",
    "not_found",
    "method_not_allowed",
    "request_timeout",
    "too_large",
    "invalid_request",
    "internal",
]
"""``unauthorized`` 401, ``not_found`` 404 (no such path), ``method_not_allowed`` 405 (the path exists, not
with that method: the ``Allow`` header lists the methods), ``request_timeout`` 408 (the body did not arrive
within the server's read timeout), ``too_large`` 413, ``invalid_request`` 422,
``model_output``/``provider``/``timeout`` 502, ``internal`` 500."""


class FieldError(BaseModel):
    """One reason a request body was refused (422), in FastAPI's ``detail`` shape without the input echo."""

    loc: list[str | int]
    """Where: ``["body", "context", "hoy"]``; ``["body"]`` for the body as a whole."""
    msg: str
    type: str


class ErrorResponse(BaseModel):
    """Body of every error response (401, 404, 405, 413, 422, 500, 502)."""

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

parse_stream_line: Callable[[str | bytes], AnswerDeltaLine | RespondLine | ErrorLine] = TypeAdapter(
    RespondStreamLine
).validate_json
"""Read one NDJSON line of ``/ai/respond``; raises ``pydantic.ValidationError`` for anything else."""
parse_analyze_stream_line: Callable[[str | bytes], AnswerDeltaLine | AnalyzeLine | ErrorLine] = TypeAdapter(
    AnalyzeStreamLine
).validate_json
"""Read one NDJSON line of ``/ai/analyze``; raises ``pydantic.ValidationError`` for anything else."""
