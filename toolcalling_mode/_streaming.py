"""The answer text inside the agent's model calls, decoded as the model writes it.

A tool-calling turn is a sequence of model calls ("steps"). :class:`AnswerSteps` is fed the AI messages of
those steps, either as the streamed chunks ``astream`` receives (a new message id starts a new step) or, after
``ask``/``aask``, as the whole messages of the run (:meth:`AnswerSteps.replay`), and returns the answer text
each one adds. Each step gets fresh decoders (:class:`shared.json_stream.AnswerTextStream`):

- plain answers: the step's text with ``<think>…</think>`` removed;
- ``structured=True``: the decoded ``respuesta`` of the answer JSON, read from the step's text
  (``ProviderStrategy``: the JSON is the reply) and from the arguments of the structured answer tool
  (``ToolStrategy``: the JSON is a tool call). Arguments of every other tool call are never answer text.

**Text in a step that also calls tools.** A step's text is decoded as it arrives, before the step's tool
calls are known (the offline model and most providers send text first, tool calls last), so a text that
a provider writes before its tool calls ("Voy a consultar las ventas…") is streamed like any answer text.
Holding every step's text until the step ends would stream no answer at all until the last call finished.
The offline model's tool-call steps carry no visible text (at most a ``<think>`` block, removed), and most
providers send empty content with tool calls, so the streamed text is then exactly the final answer. When a
provider does write such a preamble, the next step's text is set apart from it (:data:`STEP_SEPARATOR`), and
the final ``TurnResult.answer`` (the last step's text) supersedes what was shown, as :mod:`shared.events`
specifies for any mismatch.

**Tool calls written as text.** A plain step whose visible text begins like one (a fence, ``{``, ``[``,
``<tool_call>``) is held back until the step ends, then shown only if it is not a tool call written as
text (:func:`~toolcalling_mode.text_tool_calls.looks_like_text_tool_call`): such a step is recovered into
tool calls, or fails the turn, and is never answer text.

:attr:`AnswerSteps.first` remembers which step wrote the first answer text and what that step wrote before
it: the inputs of the simulated time to the first answer token (:func:`simulated_first_answer_ms`).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage

from shared.json_stream import AnswerTextStream
from shared.llm.usage import SimulatedCall, first_text_ms
from toolcalling_mode.text_tool_calls import looks_like_text_tool_call

STEP_SEPARATOR = "\n\n"
"""Put before the text of a step when an earlier step of the turn already showed some (a preamble)."""


@dataclass(frozen=True)
class FirstAnswer:
    """Where a turn's first answer text came from."""

    step: int
    """0-based index of the model call that wrote it."""
    prefix: str
    """What that call wrote before the first answer character (a ``<think>`` block, ``{"respuesta": "``)."""


_TOOL_CALL_OPENINGS = ("```", "{", "[", "<tool_call>")
"""How a tool call written as text begins (see :mod:`toolcalling_mode.text_tool_calls`)."""


class _TextCallGuard:
    """Holds a plain step's text back while it may be a tool call written as text."""

    def __init__(self) -> None:
        self._held = ""
        self._open = True  # still undecided

    def feed(self, delta: str) -> str:
        if not self._open:
            return delta
        self._held += delta
        start = self._held.lstrip()
        if not start or any(o.startswith(start) or start.startswith(o) for o in _TOOL_CALL_OPENINGS):
            return ""
        self._open = False
        released, self._held = self._held, ""
        return released

    def finish(self) -> str:
        released, self._held = self._held, ""
        if self._open and looks_like_text_tool_call(released):
            return ""
        return released


@dataclass
class _Channel:
    """One decoded text inside a step: its content, or the arguments of the structured answer tool."""

    stream: AnswerTextStream
    raw: list[str] = field(default_factory=list)
    guard: _TextCallGuard | None = None
    """Plain content only: holds back what may be a tool call written as text."""

    def feed(self, chunk: str) -> str:
        self.raw.append(chunk)
        delta = self.stream.feed(chunk)
        return self.guard.feed(delta) if self.guard is not None else delta

    def finish(self) -> str:
        delta = self.stream.finish()
        if self.guard is None:
            return delta
        return self.guard.finish() if not delta else self.guard.feed(delta) + self.guard.finish()

    def prefix(self) -> str:
        return "".join(self.raw)[: self.stream.prefix_chars]


class AnswerSteps:
    """Decode the answer text of a turn's model steps (see the module docstring)."""

    def __init__(self, json_field: str | None, answer_tools: Iterable[str] = ()) -> None:
        """``json_field``: ``"respuesta"`` for structured answers, ``None`` for plain text;
        ``answer_tools``: names of the structured answer tools (``ToolStrategy``), whose arguments are the
        answer JSON."""
        self._json_field = json_field
        self._answer_tools = frozenset(answer_tools)
        self.step = -1
        """Index of the current step (``-1`` before the first)."""
        self.first: FirstAnswer | None = None
        """Set when the first answer text is decoded."""
        self._step_id: str | None = None
        self._shown_step: int | None = None
        """The last step that produced answer text."""
        self._content = self._content_channel()
        self._arguments = _Channel(AnswerTextStream(json_field))
        self._tool_names: dict[Any, str] = {}

    def _content_channel(self) -> _Channel:
        guard = _TextCallGuard() if self._json_field is None else None
        return _Channel(AnswerTextStream(self._json_field), guard=guard)

    def feed(self, message: AIMessage) -> str:
        """The answer text ``message`` adds: a chunk of the current step, or a new step when its id differs
        (a whole ``AIMessage``, as a model that does not stream delivers it, is a step of its own). A new
        step first ends the previous one (:meth:`finish`)."""
        delta = ""
        if not isinstance(message, AIMessageChunk) or message.id is None or message.id != self._step_id:
            delta = self.finish()
            self._begin(message.id)
        return delta + self._feed(message)

    def finish(self) -> str:
        """The current step ended: the text its decoders still held back (e.g. a plain reply ending in
        ``"a <"``, which might have been the start of a tag)."""
        return self._decoded(self._content, finish=True) + self._decoded(self._arguments, finish=True)

    @classmethod
    def replay(
        cls, json_field: str | None, answer_tools: Iterable[str], messages: Sequence[BaseMessage]
    ) -> AnswerSteps:
        """The decoders after a whole run: one step per AI message of ``messages``."""
        steps = cls(json_field, answer_tools)
        for message in messages:
            if isinstance(message, AIMessage):
                steps.finish()
                steps._begin(None)
                steps._feed(message)
        steps.finish()
        return steps

    def _begin(self, step_id: str | None) -> None:
        self.step += 1
        self._step_id = step_id
        self._content = self._content_channel()
        self._arguments = _Channel(AnswerTextStream(self._json_field))
        self._tool_names = {}

    def _feed(self, message: AIMessage) -> str:
        delta = ""
        text = message.text
        if text:
            delta += self._decoded(self._content, text)
        for arguments in self._answer_arguments(message):
            delta += self._decoded(self._arguments, arguments)
        return delta

    def _decoded(self, channel: _Channel, chunk: str = "", *, finish: bool = False) -> str:
        delta = channel.finish() if finish else channel.feed(chunk)
        if not delta:
            return ""
        if self.first is None:
            self.first = FirstAnswer(step=self.step, prefix=channel.prefix())
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


def simulated_first_answer_ms(
    calls: Sequence[SimulatedCall], model_calls: int, first: FirstAnswer | None
) -> float | None:
    """Simulated time to the first answer token: the simulated time of the calls before the answering call,
    plus that call's time to its first token, plus the tokens it wrote before the answer (``prefix``).

    ``calls`` are the tracker's :class:`~shared.llm.usage.SimulatedCall` s in completion order (the agent's
    calls run one after another). ``None`` unless there was answer text and every one of the turn's
    ``model_calls`` reported its simulated timings.
    """
    if first is None or not calls or len(calls) != model_calls or first.step >= len(calls):
        return None
    return first_text_ms((call.total_ms for call in calls[: first.step]), calls[first.step], first.prefix)
