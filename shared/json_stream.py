"""The answer's text, decoded incrementally from a model's reply as it streams.

Both modes stream the user's answer while the model is still writing: the planner's call 2 writes a JSON
object whose ``respuesta`` the user reads before ``memoria`` and ``estado`` are written; a tool-calling agent
writes plain text, possibly after ``<think>…</think>`` reasoning. :class:`AnswerTextStream` is fed the raw
chunks in order and returns, each time, the answer text those chunks completed:

- ``AnswerTextStream("respuesta")`` decodes the string value of the top-level field ``respuesta`` as it
  grows. Text before the JSON (prose, a code fence, ``<think>`` blocks, a stray ``{`` that does not start an
  object) is skipped; a top-level object without the field is skipped too (the next one is searched, like
  :func:`planner_mode.parsing.parse_model_output` does); keys nested deeper never match. Escapes are decoded
  as ``json.loads`` decodes them, ``\\uXXXX`` surrogate pairs included, wherever the chunks split them.
- ``AnswerTextStream(None)`` passes plain text through without its ``<think>…</think>`` (or
  ``<thinking>``) blocks, and without leading or trailing whitespace (as :func:`shared.text.strip_reasoning`
  trims): whitespace is held back until more text follows it.

Chunk boundaries never change the result: any split of a reply gives the same :attr:`~AnswerTextStream.text`.
What cannot be known while streaming is not guessed: a reasoning block closed without having been opened
(the chat template wrote ``<think>``) was already passed on as text, and text is never retracted. The
final, strictly parsed answer is authoritative; the stream is only what the user reads meanwhile.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Literal

__all__ = ["AnswerTextStream"]

_OPEN_TAGS = ("<think>", "<thinking>")
_CLOSE_TAGS = ("</think>", "</thinking>")
_TAGS = _OPEN_TAGS + _CLOSE_TAGS
"""Reasoning tags, lower case (they are matched case-insensitively, like :mod:`shared.text`)."""

_SIMPLE_ESCAPES = {'"': '"', "\\": "\\", "/": "/", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t"}
_HEX = frozenset("0123456789abcdefABCDEF")
_WHITESPACE = frozenset(" \t\n\r")
"""JSON's insignificant whitespace."""

_STRING_RUN = re.compile(r'[^"\\]+')
_SEEK_RUN = re.compile(r"[^{<]+")
_TEXT_RUN = re.compile(r"[^<]+")
_THINK_RUN = re.compile(r"[^<]+")
_NESTED_RUN = re.compile(r'[^{}\[\]"]+')

_State = Literal[
    "seek", "key", "key_string", "colon", "value", "answer", "skip_string", "nested", "scalar", "next", "done"
]
"""Where the JSON scan is: outside any object (``seek``), expecting a key or ``}`` (``key``), inside a key
(``key_string``), expecting ``:`` (``colon``), expecting a value (``value``), inside the answer's string
(``answer``), inside another string value (``skip_string``), inside a nested object or array (``nested``),
inside a number or literal (``scalar``), after a value (``next``), or past the answer (``done``)."""


class AnswerTextStream:
    """Feed a streamed reply chunk by chunk; get back the answer text each chunk completed.

    ``json_field`` names the top-level string field holding the answer (default ``"respuesta"``);
    ``None`` reads the reply as plain text. Not thread-safe: one instance per streamed reply.
    """

    def __init__(self, json_field: str | None = "respuesta") -> None:
        self.json_field = json_field
        self._parts: list[str] = []
        self._out: list[str] = []
        self._base = 0
        """Raw characters fed before the current chunk."""
        self._first: int | None = None
        """Raw offset of the answer's first character, once one was decoded."""
        # reasoning tags (plain text, and before the JSON)
        self._thinking = False
        self._tag: str | None = None
        """The start of what may be a reasoning tag, held back until it is one or is not."""
        self._tag_at = 0
        # plain text
        self._space = ""
        """Whitespace held back until visible text follows it."""
        # JSON
        self._state: _State = "seek"
        self._key: list[str] = []
        self._matched = False
        self._depth = 0
        self._in_string = False
        """Inside a string of a nested value, or of a skipped value (``skip_string``)."""
        self._escaped = False
        """The previous character of a skipped string was a backslash."""
        self._escape: str | None = None
        """The answer's or key's escape being read: ``""`` right after the backslash, then ``"u12"``…"""
        self._escape_at = 0
        self._high: int | None = None
        """A decoded high surrogate waiting for a ``\\uXXXX`` low half."""
        self._high_at = 0

    @property
    def text(self) -> str:
        """The answer text decoded so far (the concatenation of every :meth:`feed` result)."""
        return "".join(self._parts)

    @property
    def prefix_chars(self) -> int:
        """Raw characters before the answer's first character (all those fed, until one arrives)."""
        return self._first if self._first is not None else self._base

    @property
    def complete(self) -> bool:
        """Whether the answer's JSON string was closed (always ``False`` for plain text)."""
        return self._state == "done"

    def feed(self, chunk: str) -> str:
        """Read the next raw chunk; return the answer text it completed (possibly ``""``)."""
        self._out = []
        step = self._plain_step if self.json_field is None else self._json_step
        index, end = 0, len(chunk)
        while index < end:
            index = step(chunk, index)
        self._base += end
        delta = "".join(self._out)
        if delta:
            self._parts.append(delta)
        return delta

    def finish(self) -> str:
        """The reply ended: return the text still held back (plain text ending in what looked like the start
        of a tag, such as ``"a <"``); ``""`` otherwise. Trailing whitespace is dropped, not returned."""
        self._out = []
        if self._tag is not None and self.json_field is None and not self._thinking:
            held, self._tag = self._tag, None
            self._visible(held, self._tag_at)
        delta = "".join(self._out)
        if delta:
            self._parts.append(delta)
        return delta

    # -- output ---------------------------------------------------------------------------------------------

    def _emit(self, text: str, at: int) -> None:
        if text:
            if self._first is None:
                self._first = at
            self._out.append(text)

    # -- reasoning tags -------------------------------------------------------------------------------------

    def _tag_step(self, chunk: str, index: int, not_a_tag: Callable[[str, int], None]) -> int:
        """Extend the held-back tag with ``chunk[index]``; a tag that is not one goes to ``not_a_tag``."""
        assert self._tag is not None
        candidate = self._tag + chunk[index]
        lowered = candidate.lower()
        if lowered in _TAGS:
            self._tag = None
            self._thinking = lowered in _OPEN_TAGS
            return index + 1
        if any(tag.startswith(lowered) for tag in _TAGS):
            self._tag = candidate
            return index + 1
        held, self._tag = self._tag, None
        not_a_tag(held, self._tag_at)
        return index  # the character is read again, outside the tag

    def _skip_reasoning(self, chunk: str, index: int) -> int:
        """Inside ``<think>``: skip to the next ``<``, which may close it."""
        if chunk[index] == "<":
            self._tag, self._tag_at = "<", self._base + index
            return index + 1
        match = _THINK_RUN.match(chunk, index)
        assert match is not None
        return match.end()

    # -- plain text ------------------------------------------------------------------------------------------

    def _plain_step(self, chunk: str, index: int) -> int:
        if self._tag is not None:
            return self._tag_step(chunk, index, _ignore if self._thinking else self._visible)
        if self._thinking:
            return self._skip_reasoning(chunk, index)
        if chunk[index] == "<":
            self._tag, self._tag_at = "<", self._base + index
            return index + 1
        match = _TEXT_RUN.match(chunk, index)
        assert match is not None
        self._visible(match.group(), self._base + index)
        return match.end()

    def _visible(self, text: str, at: int) -> None:
        if self._first is None:
            stripped = text.lstrip()
            at += len(text) - len(stripped)
            text = stripped
        else:
            text = self._space + text
        body = text.rstrip()
        self._space = text[len(body) :]
        self._emit(body, at)

    # -- JSON ------------------------------------------------------------------------------------------------

    def _json_step(self, chunk: str, index: int) -> int:
        """One step of the JSON scan: one structural character, or a run of characters that cannot matter."""
        state = self._state
        char = chunk[index]
        if state == "answer" or state == "key_string":
            return self._string_step(chunk, index)
        if state == "seek":
            return self._seek_step(chunk, index)
        if state in ("skip_string", "nested"):
            return self._skip_step(chunk, index)
        if state == "done":
            return len(chunk)
        if char in _WHITESPACE and state != "scalar":
            return index + 1
        if state == "key":
            if char == '"':
                self._state, self._key, self._matched = "key_string", [], False
                return index + 1
            self._state = "seek"  # `}` closes an empty object (or a trailing comma); anything else is no JSON
            return index + 1 if char == "}" else index
        if state == "colon":
            if char == ":":
                self._state = "value"
                return index + 1
            self._state = "seek"
            return index
        if state == "value":
            if char == '"':
                self._state = "answer" if self._matched else "skip_string"
                self._in_string, self._escaped = True, False
            elif char in "{[":
                self._state, self._depth, self._in_string = "nested", 1, False
            elif char in ",}]:":
                self._state = "seek"
                return index
            else:
                self._state = "scalar"
            return index + 1
        if state == "scalar":
            if char in ",}" or char in _WHITESPACE:
                self._state = "next"
                return index
            return index + 1
        # state == "next": after a value
        if char == ",":
            self._state = "key"
            return index + 1
        self._state = "seek"  # `}` closes the object without the field; anything else is no JSON
        return index + 1 if char == "}" else index

    def _seek_step(self, chunk: str, index: int) -> int:
        if self._tag is not None:
            return self._tag_step(chunk, index, _ignore)
        if self._thinking:
            return self._skip_reasoning(chunk, index)
        char = chunk[index]
        if char == "{":
            self._state = "key"
            return index + 1
        if char == "<":
            self._tag, self._tag_at = "<", self._base + index
            return index + 1
        match = _SEEK_RUN.match(chunk, index)
        assert match is not None
        return match.end()

    def _skip_step(self, chunk: str, index: int) -> int:
        """A string value that is not the answer, or a nested object or array: skipped, strings respected."""
        if self._in_string:
            char = chunk[index]
            if self._escaped:
                self._escaped = False
            elif char == "\\":
                self._escaped = True
            elif char == '"':
                self._in_string = False
                if self._state == "skip_string":
                    self._state = "next"
            else:
                match = _STRING_RUN.match(chunk, index)
                assert match is not None
                return match.end()
            return index + 1
        char = chunk[index]
        if char == '"':
            self._in_string = True
        elif char in "{[":
            self._depth += 1
        elif char in "}]":
            self._depth -= 1
            if self._depth == 0:
                self._state = "next"
        else:
            match = _NESTED_RUN.match(chunk, index)
            assert match is not None
            return match.end()
        return index + 1

    # -- strings (the answer, and keys) ----------------------------------------------------------------------

    def _string_step(self, chunk: str, index: int) -> int:
        char = chunk[index]
        at = self._base + index
        if self._escape is not None:
            return self._escape_step(char, index)
        if char == "\\":
            self._escape, self._escape_at = "", at
            return index + 1
        if char == '"':
            self._flush_high()
            self._close_string()
            return index + 1
        match = _STRING_RUN.match(chunk, index)
        assert match is not None
        self._decoded(match.group(), at)
        return match.end()

    def _escape_step(self, char: str, index: int) -> int:
        escape = self._escape
        assert escape is not None
        if escape == "":
            if char == "u":
                self._escape = "u"
                return index + 1
            self._escape = None
            self._decoded(_SIMPLE_ESCAPES.get(char, char), self._escape_at)
            return index + 1
        if char not in _HEX:  # not JSON: drop the broken escape, read the character as text
            self._escape = None
            return index
        escape += char
        if len(escape) < 5:
            self._escape = escape
            return index + 1
        self._escape = None
        self._code_point(int(escape[1:], 16), self._escape_at)
        return index + 1

    def _code_point(self, code: int, at: int) -> None:
        """A ``\\uXXXX`` escape, paired with a waiting high surrogate as ``json.loads`` pairs them."""
        if self._high is not None:
            if 0xDC00 <= code <= 0xDFFF:
                high, self._high = self._high, None
                self._put(chr(0x10000 + ((high - 0xD800) << 10) + (code - 0xDC00)), self._high_at)
                return
            self._flush_high()
        if 0xD800 <= code <= 0xDBFF:
            self._high, self._high_at = code, at
            return
        self._put(chr(code), at)

    def _decoded(self, text: str, at: int) -> None:
        self._flush_high()
        self._put(text, at)

    def _flush_high(self) -> None:
        if self._high is not None:
            high, self._high = self._high, None
            self._put(chr(high), self._high_at)

    def _put(self, text: str, at: int) -> None:
        if self._state == "answer":
            self._emit(text, at)
        else:
            self._key.append(text)

    def _close_string(self) -> None:
        if self._state == "answer":
            self._state = "done"
            return
        self._matched = "".join(self._key) == self.json_field
        self._state = "colon"


def _ignore(_text: str, _at: int) -> None:
    """What is not a reasoning tag before the JSON is skipped like any other text there."""
