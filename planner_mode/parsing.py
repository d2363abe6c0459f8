"""A tolerant JSON reader for models that do not honour structured output exactly.

Models wrap the JSON in a code fence, add prose around it, leave a trailing comma, or think aloud first
(``<think>…</think>``, sometimes with a draft object or a stray ``{``). :func:`parse_model_output` returns
the first JSON object of the reply *that validates* against the requested model:

1. Reasoning is dropped (:func:`shared.text.split_reasoning`); the text after an opening tag never closed is
   searched only when nothing outside it validates.
2. Candidates, in order: the whole text, each code fence's contents, then every ``{...}`` span that parses
   (one string-aware scan, so a stray ``{`` does not hide the object after it); objects nested in a
   candidate are not candidates of their own. Trailing commas are repaired.
3. JSON that Python accepts but JSON does not is refused: ``NaN``, ``Infinity``, a number that overflows to
   infinity, a lone UTF-16 surrogate escape (``"\\ud800"``).

Anything else raises :class:`~shared.errors.ModelOutputError`: "not valid JSON" when no candidate parsed,
else the schema error of the closest candidate. The work is bounded by a small multiple of the reply's length.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterator
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from shared.errors import ModelOutputError
from shared.text import MARKDOWN_FENCE, split_reasoning

__all__ = ["extract_json_object", "json_value_problem", "message_text", "parse_model_output"]

M = TypeVar("M", bound=BaseModel)

_STRUCTURE = re.compile(r'[{}"\\\n]')
"""The characters the span scan reacts to; everything else is skipped at C speed."""
_SURROGATE = re.compile("[\ud800-\udfff]")
_COMMA_BEFORE = re.compile(r",\s*\Z")
_COMMA_WINDOW = 256
_RAW_PREVIEW = 300
_OBJECT_START = re.compile(r'\{\s*["}]')
"""How every JSON object starts; a span that starts otherwise is not worth a parse attempt."""
_BUDGET_FACTOR = 16
_BUDGET_CONSTANT = 1_000_000
"""Failed parse attempts and repairs may cost at most ``16 × len(text) + 1e6`` characters of work; past
that, the search stops (only adversarial text gets there). A failed ``json`` parse costs the error's
*absolute* position, since ``JSONDecodeError`` counts the lines before it."""


def message_text(content: Any) -> str:
    """The text of a message ``content``: a string, or the text parts of a list of content blocks."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts: list[str] = []
        for block in content:
            if isinstance(block, str):
                parts.append(block)
            elif isinstance(block, dict) and isinstance(block.get("text"), str):
                parts.append(block["text"])
        return "".join(parts)
    return "" if content is None else str(content)


# -- JSON values Python accepts and JSON does not ------------------------------------------------------------


_DECODER = json.JSONDecoder()
"""Python's decoder reads ``NaN``, ``Infinity`` and an overflowing exponent as non-finite floats, which
:func:`json_value_problem` then refuses."""


def json_value_problem(value: Any) -> str | None:
    """Why a parsed JSON ``value`` is unusable (a non-finite number, a lone surrogate), or ``None``; walks the
    value without recursion."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            if _SURROGATE.search(item):
                return "it contains a lone UTF-16 surrogate escape (such as \\ud800), which is not text"
        elif isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
        elif isinstance(item, float) and not math.isfinite(item):
            return "it contains a non-finite number (NaN, Infinity or an exponent that overflows)"
    return None


# -- candidates ----------------------------------------------------------------------------------------------


def _brace_spans(text: str) -> list[tuple[int, int]]:
    """Every matched ``{…}`` pair of ``text`` as ``(start, end)`` bounds, sorted by start, in one stack scan
    (a stray ``{`` stays open on the stack). Quotes start a string only inside a brace, and a raw newline
    ends one, so an odd quote in prose does not swallow the rest of the text."""
    spans: list[tuple[int, int]] = []
    stack: list[int] = []
    in_string = False
    escaped_at = -1
    for match in _STRUCTURE.finditer(text):
        index = match.start()
        char = match.group()
        if in_string:
            if index == escaped_at:
                continue
            if char == "\\":
                escaped_at = index + 1
            elif char in '"\n':
                in_string = False
        elif char == '"':
            in_string = bool(stack)
        elif char == "{":
            stack.append(index)
        elif char == "}" and stack:
            spans.append((stack.pop(), index + 1))
    spans.sort()
    return spans


def _drop_trailing_commas(text: str) -> str:
    """Remove commas right before ``}`` or ``]`` (whitespace between) outside strings, in one linear pass."""
    out: list[str] = []
    in_string = False
    escaped = False
    pending_comma: int | None = None  # index in ``out`` of a comma followed so far only by whitespace
    for char in text:
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif not char.isspace():
            if char in "}]" and pending_comma is not None:
                out[pending_comma] = ""
            pending_comma = len(out) if char == "," else None
            in_string = char == '"'
        out.append(char)
    return "".join(out)


def _is_trailing_comma(text: str, position: int) -> bool:
    """Whether a JSON error at ``position`` is a ``}`` or ``]`` after a comma (a bounded look back)."""
    if position >= len(text) or text[position] not in "}]":
        return False
    return _COMMA_BEFORE.search(text, max(0, position - _COMMA_WINDOW), position) is not None


class _Search:
    """The candidate objects of one reply, in order; remembers why candidates were unusable."""

    def __init__(self, text: str) -> None:
        self.problem: str | None = None
        """Why the first parsed-but-unusable candidate was refused (NaN, lone surrogate)."""
        self.only_reasoning = False
        """The reply had reasoning tags and nothing outside them."""
        self.json_error: str | None = None
        """Why the reply's leading ``{…}`` (the whole reply, or a fence's contents) is not valid JSON."""
        self._budget = _BUDGET_FACTOR * len(text) + _BUDGET_CONSTANT

    def _accept(self, value: Any) -> dict[str, Any] | None:
        if not isinstance(value, dict):
            return None
        problem = json_value_problem(value)
        if problem is not None:
            self.problem = self.problem or problem
            return None
        return value

    def _repaired(self, text: str) -> Any:
        if len(text) > self._budget:
            return None
        self._budget -= len(text)
        try:
            return _DECODER.decode(_drop_trailing_commas(text))
        except (ValueError, RecursionError):
            return None

    def whole(self, text: str) -> tuple[bool, dict[str, Any] | None]:
        """``(parsed, object)`` for a whole candidate text (the reply, or a fence's contents)."""
        try:
            value = _DECODER.decode(text)
        except json.JSONDecodeError as exc:
            value = self._repaired(text) if _is_trailing_comma(text, exc.pos) else None
            if value is None:
                if exc.msg != "Extra data":  # "Extra data": the leading object itself is fine
                    self._note_json_error(text, f"{exc.msg} at line {exc.lineno} column {exc.colno}")
                return False, None
        except RecursionError:
            self._note_json_error(text, "nested too deeply")
            return False, None
        except ValueError as exc:  # an integer past Python's digit limit
            self._note_json_error(text, str(exc))
            return False, None
        return isinstance(value, dict), self._accept(value)

    def _note_json_error(self, text: str, message: str) -> None:
        if self.json_error is None and text.startswith("{"):
            self.json_error = message

    def spans(self, text: str, skip: set[tuple[int, int]]) -> Iterator[dict[str, Any]]:
        """Each ``{…}`` span of ``text`` that parses, outermost first; what a parsed one nests is skipped."""
        covered_until = -1
        for start, end in _brace_spans(text):
            if start < covered_until or self._budget <= 0:
                continue
            if (start, end) in skip:
                covered_until = end
                continue
            if not _OBJECT_START.match(text, start):
                continue
            try:
                value, stop = _DECODER.raw_decode(text, start)
            except json.JSONDecodeError as exc:
                self._budget -= exc.pos + 1
                if not _is_trailing_comma(text, exc.pos):
                    continue
                value, stop = self._repaired(text[start:end]), end
                if value is None:
                    continue
            except (ValueError, RecursionError):
                self._budget -= end - start
                continue
            covered_until = stop
            accepted = self._accept(value)
            if accepted is not None:
                yield accepted

    def candidates(self, source: str) -> Iterator[dict[str, Any]]:
        """Every candidate object of ``source``: whole text, fences, then spans."""
        source = source.strip()
        if not source:
            return
        skip: set[tuple[int, int]] = set()
        parsed, value = self.whole(source)
        if parsed:
            skip.add((0, len(source)))
        if value is not None:
            yield value
        for fence in MARKDOWN_FENCE.finditer(source):
            content = fence.group(1)
            start = fence.start(1) + len(content) - len(content.lstrip())
            content = content.strip()
            parsed, value = self.whole(content)
            if parsed:
                skip.add((start, start + len(content)))
            if value is not None:
                yield value
        yield from self.spans(source, skip)


def _objects(text: str) -> tuple[Iterator[dict[str, Any]], _Search]:
    """The candidate objects of a reply, and the search (for the error when none is usable)."""
    answer, reasoning, had_reasoning = split_reasoning(text)
    search = _Search(text)
    search.only_reasoning = had_reasoning and not answer.strip() and not reasoning.strip()

    def generate() -> Iterator[dict[str, Any]]:
        yield from search.candidates(answer)
        yield from search.candidates(reasoning)

    return generate(), search


def _no_json_error(text: str, search: _Search) -> ModelOutputError:
    stripped = text.strip()
    if not stripped:
        return ModelOutputError("The model returned an empty response.", raw=text)
    if search.only_reasoning:
        return ModelOutputError(
            "The model's response has no JSON outside its reasoning (<think>…</think>): "
            f"{stripped[:_RAW_PREVIEW]!r}",
            raw=text,
        )
    reason = search.problem or search.json_error
    because = f" ({reason})" if reason else ""
    return ModelOutputError(
        f"The model's response is not valid JSON{because}: {stripped[:_RAW_PREVIEW]!r}", raw=text
    )


def extract_json_object(text: str) -> dict[str, Any]:
    """Return the first JSON object found in ``text`` (reasoning dropped; see the module docstring).

    Raises ``ModelOutputError`` if no candidate parses.
    """
    objects, search = _objects(text)
    for value in objects:
        return value
    raise _no_json_error(text, search)


def _schema_details(exc: ValidationError) -> str:
    return "; ".join(
        f"{'.'.join(str(p) for p in err['loc']) or '(root)'}: {err['msg']}" for err in exc.errors()
    )


def parse_model_output(text: str, model: type[M]) -> M:
    """Return the first JSON object of ``text`` that validates as ``model``; raise ``ModelOutputError``.

    When objects parsed but none validates, the error is the schema error of the closest one: the one with
    the most top-level keys the schema knows, then the fewest errors, then the first.
    """
    objects, search = _objects(text)
    fields = {info.alias or name for name, info in model.model_fields.items()}
    best: tuple[tuple[int, int], ValidationError] | None = None
    for value in objects:
        try:
            return model.model_validate(value)
        except ValidationError as exc:
            score = (-len(fields.intersection(value)), exc.error_count())
            if best is None or score < best[0]:
                best = (score, exc)
    if best is None:
        raise _no_json_error(text, search)
    details = _schema_details(best[1])
    if search.json_error is not None:
        # The reply is one broken object (a missing colon, a cut): that is the news, not its inner objects.
        raise ModelOutputError(
            f"The model's response is not valid JSON ({search.json_error}), and no object inside it matches "
            f"the {model.__name__} schema (closest: {details}): {text.strip()[:_RAW_PREVIEW]!r}",
            raw=text,
        )
    raise ModelOutputError(
        f"The model's JSON does not match the {model.__name__} schema: {details}", raw=text
    )
