"""Tool-calling prompt templates: package data (``*.md``) loaded with :mod:`importlib.resources`.

**Stable first, per-turn last**, so that a provider's prompt (prefix) cache reuses as much as it can: the
system prompt holds only the instructions (the same for every turn and conversation); what a turn adds
comes after it. In the windowed policy that is the rendered context (today's date, state, memory, last
exchange), which :func:`turn_message` puts before the question in the turn's human message, as the
planner's call 1 does (``Nueva pregunta:``). In the full-history policy it is only today's date, which
changes once a day: :func:`system_prompt` appends it to the instructions, so the replayed history that
follows is the same prefix turn after turn.

The templates avoid the quoted words the offline model reads as planner requests, so the same offline model
recognises a tool-calling turn by its bound tools and its ``Fecha de hoy:`` line.
"""

from __future__ import annotations

from functools import cache
from importlib import resources

__all__ = ["system_prompt", "turn_message"]

QUESTION_LABEL = "Nueva pregunta:"
"""What precedes the question in a windowed turn's human message (the planner's label)."""


@cache
def _load(name: str) -> str:
    return resources.files(__package__).joinpath(name).read_text(encoding="utf-8").rstrip()


def system_prompt(context: str | None = None, *, structured: bool = False) -> str:
    """The agent's system prompt: the instructions, then (``structured``) the instructions for the
    structured final answer (``Answer``), then ``context`` verbatim when given (full history: the rendered
    ``Fecha de hoy: …`` line)."""
    parts = [_load("system.md")]
    if structured:
        parts.append(_load("structured.md"))
    text = "\n\n".join(parts)
    return f"{text}\n\n{context}" if context else text


def turn_message(question: str, context: str) -> str:
    """A windowed turn's human message: the rendered ``context``, then ``Nueva pregunta:`` and the question,
    both verbatim."""
    return f"{context}\n\n{QUESTION_LABEL}\n{question}"
