"""The clean check: an answer is words for a person, not the machinery behind it.

It fails when it shows raw JSON (an object with a quoted key), an operation call written out
(``ventas_mensuales(anio=2025, mes=3)``), echoed prompt text (a line starting with one of
:data:`PROMPT_LABELS`, such as ``Nueva pregunta:``) or English prose
(:func:`benchmarks.scoring.reply.reads_as_english`: the users write Spanish).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from datetime import date

from benchmarks.scoring.reply import reads_as_english
from shared.memory.context import ConversationContext, Exchange, render_context
from toolcalling_mode.prompts import QUESTION_LABEL

__all__ = ["PROMPT_LABELS", "machinery_problems"]

_JSON_OBJECT = re.compile(r"\{\s*\"[^\"\n]{1,60}\"\s*:")


def _prompt_labels() -> tuple[str, ...]:
    """The labels of a rendered context with every section filled, and the question's label."""
    sample = ConversationContext(
        today=date(2026, 11, 30),
        memories=["m"],
        state={"k": "v"},
        recent_exchanges=[Exchange(user="u", assistant="a")],
    )
    lines = [line for line in render_context(sample).splitlines() if ":" in line and not line.startswith("-")]
    return tuple(dict.fromkeys([QUESTION_LABEL, *(line.split(":")[0] + ":" for line in lines)]))


PROMPT_LABELS: tuple[str, ...] = _prompt_labels()
"""What precedes the question and each section of its context in the prompts (both modes render them
alike): ``Nueva pregunta:``, ``Fecha de hoy:``, ``Estado de la conversación:`` …"""
_ECHOED = re.compile(rf"(?im)^[\s*#>]*({'|'.join(re.escape(label) for label in PROMPT_LABELS)})")


def machinery_problems(answer: str, operations: Iterable[str]) -> list[str]:
    """What machinery ``answer`` shows (empty list: none); ``operations`` are the ERP's operation names."""
    problems: list[str] = []
    if _JSON_OBJECT.search(answer):
        problems.append("the answer shows raw JSON (a tool call or a result) instead of an answer")
    names = sorted(operations, key=len, reverse=True)
    if names:
        call = re.search(rf"\b({'|'.join(map(re.escape, names))})\s*\(", answer, re.IGNORECASE)
        if call:
            problems.append(f"the answer writes out a call to {call.group(1)} instead of its result")
    echoed = _ECHOED.search(answer)
    if echoed:
        problems.append(f"the answer echoes the prompt ({echoed.group(1)} …) instead of answering")
    if reads_as_english(answer):
        problems.append("the answer is English text")
    return problems
