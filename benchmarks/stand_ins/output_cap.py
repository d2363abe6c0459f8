"""Output caps, for the offline model and the emulators alike: a reply longer than its cap is cut there.

A reply counts its text and each tool call as ``{"name", "arguments"}`` JSON (:mod:`shared.llm.tokens`). A
cut reply keeps no tool call: the calls it was still writing are only text, as when a real server's tool-call
parser meets half a call (and LangChain would complete partial JSON into a valid call in a stream).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from benchmarks.stand_ins.faults import RUNAWAY_CONTEXT_TOKENS, grow
from shared.llm.tokens import CHARS_PER_TOKEN, approx_json_tokens, approx_tokens

ToolCall = tuple[str, dict[str, Any]]


def call_json(name: str, args: dict[str, Any]) -> str:
    """A tool call written out as text."""
    return json.dumps({"name": name, "arguments": args}, ensure_ascii=False)


def reply_tokens(text: str, calls: Sequence[ToolCall]) -> int:
    return approx_tokens(text) + sum(approx_json_tokens({"name": name, "arguments": a}) for name, a in calls)


def fit_reply(
    text: str, calls: Sequence[ToolCall], cap: int | None, *, repeat: str = "", other_tokens: int = 0
) -> tuple[str, int | None]:
    """``(text, cut_at)``: the reply's text, and the cap it was cut at (``None``: it fits, calls and all).

    A ``repeat`` unit (a ``runaway`` reply) is appended until the cap, else :data:`RUNAWAY_CONTEXT_TOKENS`.
    ``other_tokens`` are output tokens neither in ``text`` nor in ``calls``.
    """
    if repeat:
        cap = RUNAWAY_CONTEXT_TOKENS if cap is None else cap
        text = grow(text, repeat, cap)
    if cap is None or reply_tokens(text, calls) + other_tokens <= cap:
        return text, None
    written = text + "".join(("\n" if text or i else "") + call_json(*call) for i, call in enumerate(calls))
    return written[: max(0, cap) * CHARS_PER_TOKEN], cap
