"""Tool-calling prompt templates: package data (``*.md``) loaded with :mod:`importlib.resources`.

The templates avoid the quoted words the offline model reads as planner requests, so the same offline model
recognises a tool-calling turn by its bound tools and its ``Fecha de hoy:`` line.
"""

from __future__ import annotations

from functools import cache
from importlib import resources
from string import Template


@cache
def _load(name: str) -> str:
    return resources.files(__package__).joinpath(name).read_text(encoding="utf-8")


def system_prompt(context: str, *, structured: bool = False) -> str:
    """The agent's system prompt: instructions, then ``context`` (the rendered ``Fecha de hoy: …`` block).

    ``structured`` appends the instructions for the structured final answer (``Answer``).
    """
    text = Template(_load("system.md")).substitute(contexto=context).rstrip()
    if structured:
        text += "\n" + _load("structured.md").rstrip()
    return text
