"""The answer text inside the agent's model calls ("steps"), decoded as the model writes it.

:class:`AnswerSteps` is fed the AI messages of a turn's steps, as the chunks ``astream`` receives (a new
message id starts a new step) or, without a reader, as the run's whole messages (:meth:`AnswerSteps.replay`),
and returns the answer text each adds; shown text is never retracted. Plain answers are the text without
``<think>`` blocks (what may start a tag, and trailing whitespace, wait for what follows); structured answers
are the ``respuesta`` of the answer JSON, read by ``pydantic_core.from_json(..., allow_partial=...)`` from
the step's text (``ProviderStrategy``) or the structured answer tool's arguments (``ToolStrategy``).

Text a provider writes before its tool calls ("Voy a consultar…") is streamed like answer text, a later
step's text set apart from it (:data:`STEP_SEPARATOR`); ``TurnResult.answer`` supersedes what was shown. A
plain step that begins like a tool call written as text is held back until it ends, and shown only if it
is not one. :attr:`AnswerSteps.first` keeps which step wrote the first answer text, and what came before;
:attr:`AnswerSteps.last` the same for the last step that wrote some, whose text a turn keeps.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from typing import Any

from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage
from pydantic_core import from_json

from shared.bounds import reply_max_chars
from shared.errors import ReplyTooLongError
from shared.text import split_reasoning, strip_reasoning
from shared.turn import FirstAnswerCall
from toolcalling_mode.text_tool_calls import contains_machinery, looks_like_text_tool_call

STEP_SEPARATOR = "\n\n"
"""Put before the text of a step when an earlier step of the turn already showed some (a preamble)."""


_TOOL_CALL_OPENINGS = ("```", "{", "[", "<tool_call>")
"""How a tool call written as text begins (see :mod:`toolcalling_mode.text_tool_calls`)."""
_TAGS = ("<think>", "<thinking>", "</think>", "</thinking>")
_DECODER = json.JSONDecoder()


class _Channel:
    """One text inside a step (its content, or the structured answer tool's arguments), reread as it grows.

    ``json_field`` names the answer's field in a JSON object; ``None`` reads plain text, held back while it
    may be a tool call written as text (``guard``)."""

    def __init__(self, json_field: str | None, *, guard: bool = False) -> None:
        self._field = json_field
        self._guard = guard and json_field is None
        self._raw = ""
        self._shown = ""
        self._object = 0
        """Where the JSON object being read starts (the search for one, until found)."""
        self.prefix: str | None = None
        """What was written before the first answer character, once there was one."""

    def feed(self, chunk: str = "", *, final: bool = False) -> str:
        """The answer text ``chunk`` adds (``final``: the step ended, release what was held back)."""
        self._raw += chunk
        text = self._json() if self._field is not None else _visible(self._raw, final)
        if not text or not text.startswith(self._shown):
            return ""
        if self._guard and not self._shown and self._may_be_a_call(text, final):
            return ""
        if self.prefix is None:
            self.prefix = self._prefix()
        delta, self._shown = text[len(self._shown) :], text
        return delta

    @staticmethod
    def _may_be_a_call(text: str, final: bool) -> bool:
        """Whether the step's first visible ``text`` is (still) possibly a tool call written as text, or,
        the step ended, machinery no user may read (a call, JSON alone: :func:`contains_machinery`)."""
        if any(opening.startswith(text) or text.startswith(opening) for opening in _TOOL_CALL_OPENINGS):
            return not final or looks_like_text_tool_call(text) or contains_machinery(text)
        return False

    def _json(self) -> str:
        """The answer field of the first object outside reasoning that has it, as far as it is written."""
        while True:
            start = self._raw.find("{", self._object)
            while start != -1 and split_reasoning(self._raw[:start] + ".")[1]:  # inside <think>
                start = self._raw.find("{", start + 1)
            if start == -1:
                return ""
            self._object = start
            try:
                data, end = _DECODER.raw_decode(self._raw, start)
            except ValueError:  # still being written (or no JSON at all)
                try:
                    data, end = from_json(self._raw[start:], allow_partial="trailing-strings"), -1
                except ValueError:
                    data, end = None, start + 1
            value = data.get(self._field) if isinstance(data, dict) else None
            if isinstance(value, str) or end == -1:
                return value if isinstance(value, str) else ""
            self._object = end  # a complete object without the field (or no JSON): read the next one

    def _prefix(self) -> str:
        if self._field is not None:
            opening = re.compile(rf'"{re.escape(self._field)}"\s*:\s*"')
            match = opening.search(self._raw, self._object)
            return self._raw[: match.end()] if match else self._raw
        for index, char in enumerate(self._raw):  # the first character the reader sees
            if not char.isspace() and _visible(self._raw[: index + 1], final=False):
                return self._raw[:index]
        return self._raw


def _visible(raw: str, final: bool) -> str:
    """What a reader sees of plain text ``raw``; unless ``final``, what may start a tag waits."""
    tag_at = raw.rfind("<")
    if not final and tag_at != -1 and any(tag.startswith(raw[tag_at:].lower()) for tag in _TAGS):
        raw = raw[:tag_at]
    return strip_reasoning(raw)


class AnswerSteps:
    """Decode the answer text of a turn's model steps (see the module docstring)."""

    def __init__(
        self,
        json_field: str | None,
        answer_tools: Iterable[str] = (),
        *,
        max_tokens: int | None = None,
        bounded: bool = True,
    ) -> None:
        """``json_field``: ``"respuesta"`` for structured answers, ``None`` for plain text;
        ``answer_tools``: names of the structured answer tools (``ToolStrategy``), whose arguments are the
        answer JSON; ``max_tokens``: the model's output cap, which bounds what one streamed step may write
        (:func:`~shared.bounds.reply_max_chars`; past it, :class:`~shared.errors.ReplyTooLongError`), unless
        not ``bounded`` (whole messages the agent already admitted)."""
        self._max_tokens = max_tokens
        self._max_chars = reply_max_chars(max_tokens) if bounded else None
        self._written = 0
        """Characters the current step wrote (text and answer-tool arguments)."""
        self._json_field = json_field
        self._answer_tools = frozenset(answer_tools)
        self.step = -1
        """Index of the current step (``-1`` before the first)."""
        self.first: FirstAnswerCall | None = None
        """Set when the first answer text is decoded."""
        self.last: FirstAnswerCall | None = None
        """The last step that wrote answer text, and what it wrote before it: where the text a turn keeps
        (its final step's) starts, when earlier steps showed a preamble."""
        self._step_id: str | None = None
        self._shown_step: int | None = None
        """The last step that produced answer text."""
        self._content = _Channel(json_field, guard=True)
        self._arguments = _Channel(json_field)
        self._tool_names: dict[Any, str] = {}

    def feed(self, message: AIMessage) -> str:
        """The answer text ``message`` adds: a chunk of the current step, or a new step when its id differs
        (a whole ``AIMessage``, as a model that does not stream delivers it, is a step of its own). A new
        step first ends the previous one (:meth:`finish`)."""
        delta = ""
        if not isinstance(message, AIMessageChunk) or message.id is None or message.id != self._step_id:
            delta = self.finish()
            self._begin(message.id)
        pieces = self._answer_arguments(message)
        self._written += len(message.text) + sum(map(len, pieces))
        if self._max_chars is not None and self._written > self._max_chars:  # a server ignoring the cap
            raise ReplyTooLongError(self._max_tokens, self._max_chars)
        if message.text:
            delta += self._decoded(self._content, message.text)
        for arguments in pieces:
            delta += self._decoded(self._arguments, arguments)
        return delta

    def finish(self) -> str:
        """The current step ended: the text its decoders still held back (e.g. a plain reply ending in
        ``"a <"``, which might have been the start of a tag)."""
        return self._decoded(self._content, finish=True) + self._decoded(self._arguments, finish=True)

    @classmethod
    def replay(
        cls, json_field: str | None, answer_tools: Iterable[str], messages: Sequence[BaseMessage]
    ) -> AnswerSteps:
        """The decoders after a whole run: one step per AI message of ``messages``."""
        steps = cls(json_field, answer_tools, bounded=False)  # the agent bounded each reply it kept
        for message in messages:
            if isinstance(message, AIMessage):
                steps.feed(message)  # a whole message is a step of its own
        steps.finish()
        return steps

    def _begin(self, step_id: str | None) -> None:
        self.step += 1
        self._written = 0
        self._step_id = step_id
        self._content = _Channel(self._json_field, guard=True)
        self._arguments = _Channel(self._json_field)
        self._tool_names = {}

    def _decoded(self, channel: _Channel, chunk: str = "", *, finish: bool = False) -> str:
        delta = channel.feed(chunk, final=finish)
        if not delta:
            return ""
        if self._shown_step != self.step:
            self.last = FirstAnswerCall(call=self.step, prefix=channel.prefix or "")
        if self.first is None:
            self.first = self.last
        if self._shown_step is not None and self._shown_step != self.step:
            delta = STEP_SEPARATOR + delta
        self._shown_step = self.step
        return delta

    def _answer_arguments(self, message: AIMessage) -> list[str]:
        """Argument text of the structured answer tool in ``message`` (chunks as they stream)."""
        if not self._answer_tools:
            return []
        if isinstance(message, AIMessageChunk):
            pieces: list[str] = []
            for chunk in message.tool_call_chunks:
                key = chunk.get("index") if chunk.get("index") is not None else chunk.get("id")
                if chunk.get("name"):
                    self._tool_names[key] = str(chunk["name"])
                if self._tool_names.get(key) in self._answer_tools and chunk.get("args"):
                    pieces.append(str(chunk["args"]))
            return pieces
        return [
            json.dumps(call["args"], ensure_ascii=False)
            for call in message.tool_calls
            if call["name"] in self._answer_tools
        ]
