"""Tool-calling prompt templates: package data (``*.md``) loaded with :mod:`importlib.resources`.

Stable first, per-turn last, so that a provider's prefix cache reuses as much as it can: the system prompt
holds only the instructions; the turn's human message holds the rendered context, then the question
(``Nueva pregunta:``, as the planner's call 1). The templates avoid the words the offline model reads as
planner requests: it recognises a tool-calling turn by its bound tools and its ``Fecha de hoy:`` line.
"""

from __future__ import annotations

from functools import cache
from importlib import resources

__all__ = ["system_prompt", "turn_message"]

QUESTION_LABEL = "Nueva pregunta:"
"""What precedes the question in a turn's human message (the planner's label)."""


@cache
def _load(name: str) -> str:
    return resources.files(__package__).joinpath(name).read_text(encoding="utf-8").rstrip()


def system_prompt(*, structured: bool = False) -> str:
    """The agent's system prompt: the instructions, then (``structured``) the instructions for the
    structured final answer (``Answer``)."""
    parts = [_load("system.md")]
    if structured:
        parts.append(_load("structured.md"))
    return "\n\n".join(parts)


def turn_message(question: str, context: str) -> str:
    """A turn's human message: the rendered ``context``, then ``Nueva pregunta:`` and the question, both
    verbatim."""
    return f"{context}\n\n{QUESTION_LABEL}\n{question}"
