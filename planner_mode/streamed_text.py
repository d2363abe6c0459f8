"""The user's text inside a model's JSON reply (``respuesta``, or call 1's ``respuesta_directa``), read while
the reply streams, with pydantic's partial JSON (``from_json(..., allow_partial="trailing-strings")``).

Text before the JSON (prose, a code fence, ``<think>`` blocks) is skipped, and so is a complete object
without the field, as :func:`planner_mode.parsing.parse_model_output` does. Text is never retracted: the
final, strictly parsed reply is authoritative.
"""

from __future__ import annotations

import json
import re

from pydantic_core import from_json

from shared.text import split_reasoning, strip_reasoning

__all__ = ["DirectAnswerText", "FieldText"]

_DECODER = json.JSONDecoder()
_OPENING = re.compile(r"(?:```(?:json)?)?")
"""What may come before a direct answer's object (reasoning removed, whitespace stripped)."""


def _in_reasoning(prefix: str) -> bool:
    """Whether the text after ``prefix`` is inside an open ``<think>`` block."""
    return split_reasoning(prefix + ".")[1] != ""


class FieldText:
    """The text of the top-level string field ``field`` of a streamed JSON reply, chunk by chunk.

    ``first_key``: read the field only when it is its object's first key and nothing but a code fence comes
    before the object (see :class:`DirectAnswerText`). ``strip``: the text as the engine shows it, without
    leading whitespace, trailing whitespace held back until visible text follows it. Not thread-safe: one
    instance per streamed reply.
    """

    def __init__(self, field: str, *, first_key: bool = False, strip: bool = False) -> None:
        self.field = field
        self.first_key = first_key
        self.strip = strip
        self._buffer = ""
        self._shown = ""
        self._start: int | None = None
        """Where the object being read starts, once one was found."""
        self._searched = 0
        """Where the search for the next object starts."""
        self._settled: str | None = None
        """The field's whole text once its object is complete (nothing more can change)."""
        self._refused = False
        """``first_key``: the reply's object started with another key (nothing will be shown)."""

    @property
    def text(self) -> str:
        """Everything returned so far."""
        return self._shown

    def feed(self, chunk: str) -> str:
        """Read the next raw chunk; return the text it added (possibly ``""``)."""
        self._buffer += chunk
        value = self._value()
        if value is None:
            return ""
        if self.strip:
            value = value.strip()
        if not value.startswith(self._shown):  # never retract what was shown
            return ""
        delta, self._shown = value[len(self._shown) :], value
        return delta

    def _value(self) -> str | None:
        """The field's text so far in the object being read, moving past objects that lack it."""
        if self._settled is not None or self._refused:
            return self._settled
        while True:
            if self._start is None:
                self._start = self._next_object()
                if self._start is None:
                    return None
            if self.first_key and _OPENING.fullmatch(strip_reasoning(self._buffer[: self._start])) is None:
                return None
            data: object
            try:
                data, end = _DECODER.raw_decode(self._buffer, self._start)
            except (ValueError, RecursionError):  # incomplete (still streaming), not JSON, or too deep
                try:
                    data = from_json(self._buffer[self._start :], allow_partial="trailing-strings")
                except ValueError:
                    data, end = None, self._start + 1
                else:
                    found = self._field(data)
                    if found is not None and isinstance(data, dict) and list(data)[-1] != self.field:
                        self._settled = found  # a later key has started: the field's text is whole
                    return found
            found = self._field(data)
            if found is not None or self.first_key:
                self._settled, self._refused = found, found is None
                return found
            self._start, self._searched = None, end

    def _field(self, data: object) -> str | None:
        if not isinstance(data, dict) or not data:
            return None
        if self.first_key and next(iter(data)) != self.field:
            self._refused = True
            return None
        value = data.get(self.field)
        return value if isinstance(value, str) else None

    def _next_object(self) -> int | None:
        """The next ``{`` outside reasoning, from where the search stands."""
        position = self._buffer.find("{", self._searched)
        while position != -1 and _in_reasoning(self._buffer[:position]):
            position = self._buffer.find("{", position + 1)
        if position == -1:
            self._searched = len(self._buffer)  # whether a later brace is in reasoning depends on its prefix
            return None
        return position


class DirectAnswerText(FieldText):
    """Call 1's direct answer (``respuesta_directa``) as the model writes it, stripped, only when it is the
    reply's first key: a reply that starts with it has chosen to answer directly, one that writes
    ``operaciones`` first has chosen a plan, whose ``respuesta_directa`` is never shown."""

    def __init__(self) -> None:
        super().__init__("respuesta_directa", first_key=True, strip=True)
