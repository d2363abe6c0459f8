"""Size bounds on everything the harness stores or sends to a model: no data can make a request oversized.

:func:`clip_text` and :func:`clip_json` cut visibly (:data:`TRUNCATION_MARK`, ``"… (N más)"``,
``"_truncado"``); the limits for one turn's writes, one context and one operation result are named here.
"""

from __future__ import annotations

import dataclasses
import itertools
import json
import math
from collections.abc import Mapping
from datetime import date, datetime, time
from decimal import Decimal
from enum import Enum
from typing import Any, Final

from pydantic import BaseModel

from shared.inputs import CONTROL_CHARACTERS

TRUNCATION_MARK: Final = "… [truncado]"
"""Ends every string :func:`clip_text` cut, so a model (and a reader) sees that text is missing."""
TRUNCATED_KEY: Final = "_truncado"
"""Key :func:`clip_json` adds to a dict that lost keys; its value says how many (``"… (N claves más)"``)."""
NESTING_MARK: Final = "… [anidado]"
"""What :func:`clip_json` puts in place of a container nested deeper than ``max_depth``."""

# -- what one turn may do and write ----------------------------------------------------------------------
MAX_OPERATIONS_PER_TURN: Final = 8
"""Operations one turn may ask the ERP for, in either mode: a larger plan is rejected, and a tool-calling turn
whose calls would pass it ends as ``limit`` before they run."""
MAX_MEMORY_ITEMS_PER_TURN: Final = 5
"""Memory items one answer may add (after removing repeats)."""
MAX_MEMORY_CHARS: Final = 300
"""Characters of one memory item: a fact in a sentence or two. Applied on write and again on read."""
MAX_STATE_KEYS: Final = 30
"""Keys of the conversation state (per update, and in a context)."""
MAX_STATE_KEY_CHARS: Final = 64
"""Characters of one state key."""
MAX_STATE_VALUE_CHARS: Final = 500
"""Characters of one state value's compact JSON."""
MAX_STATE_VALUE_ITEMS: Final = 20
"""Items of a list (or keys of a dict) inside one state value."""

# -- what one context may hold -------------------------------------------------------------------------------
MAX_CONTEXT_MEMORIES: Final = 10
"""Most memory items a context holds, whatever ``memory_limit`` asks for."""
MAX_CONTEXT_EXCHANGES: Final = 3
"""Most previous exchanges a context holds, whatever ``exchanges`` asks for."""
MAX_EXCHANGE_CHARS: Final = 2000
"""Characters of each message (user or assistant) of an exchange in a context."""

_JSON_ESCAPE_FACTOR: Final = 2
"""Context text goes through :func:`clean_text`, so JSON escaping at most doubles its length."""
_FIELD_OVERHEAD: Final = 32
"""Generous JSON punctuation and labels around one item (quotes, commas, ``{"usuario": …}``)."""
CONTEXT_MAX_CHARS: Final = (
    200  # hoy and the field names
    + MAX_CONTEXT_MEMORIES * (_JSON_ESCAPE_FACTOR * MAX_MEMORY_CHARS + _FIELD_OVERHEAD)
    + MAX_STATE_KEYS * (_JSON_ESCAPE_FACTOR * MAX_STATE_KEY_CHARS + MAX_STATE_VALUE_CHARS + _FIELD_OVERHEAD)
    + MAX_CONTEXT_EXCHANGES * 2 * (_JSON_ESCAPE_FACTOR * MAX_EXCHANGE_CHARS + _FIELD_OVERHEAD)
)
"""Upper bound on the characters of a context's JSON (``ConversationContext.model_dump_json()``), and so of
its rendered text, whatever is stored: 50,512 with the limits above (at most 4 bytes per character in UTF-8).
"""

# -- what one operation result may send to the answer call ---------------------------------------------------
RESULT_MAX_ITEMS: Final = 20
"""Rows of each list in one operation result sent to a model."""
RESULT_MAX_CHARS: Final = 4000
"""Characters of one operation result's compact JSON sent to a model."""

# -- what one model reply may hold --------------------------------------------------------------------------
MAX_CHARS_PER_OUTPUT_TOKEN: Final = 32
"""More characters than any tokenizer writes per token: a reply longer than its output cap times this was not
held to the cap (a server that ignores ``max_tokens``), and is refused before any check reads it."""
UNCAPPED_REPLY_MAX_CHARS: Final = 65_536
"""Characters of a reply from a model built without an output cap (as 2,048 tokens would allow)."""
RAW_SHOWN_CHARS: Final = 2000
"""Characters of a refused reply kept on its error (what a log or a failure record shows of it)."""


def reply_max_chars(max_tokens: int | None) -> int:
    """The most characters a reply under an output cap of ``max_tokens`` can hold: every check that reads
    model text reads at most this much."""
    return max_tokens * MAX_CHARS_PER_OUTPUT_TOKEN if max_tokens else UNCAPPED_REPLY_MAX_CHARS


_MAX_INT_BITS: Final = 1024
_HUGE_NUMBER_MARK: Final = "… [número demasiado grande]"
_MIN_STRING_CHARS: Final = 40
"""Strings are never clipped below this while :func:`clip_json` shrinks a value to fit."""
_MAX_SHRINK_ROUNDS: Final = 12


def clip_text(text: str, max_chars: int) -> str:
    """``text`` if it has at most ``max_chars`` characters, else its start and :data:`TRUNCATION_MARK`."""
    if max_chars < 0:
        raise ValueError(f"max_chars must be >= 0, got {max_chars}")
    if len(text) <= max_chars:
        return text
    if max_chars <= len(TRUNCATION_MARK):
        return text[:max_chars]
    return text[: max_chars - len(TRUNCATION_MARK)].rstrip() + TRUNCATION_MARK


def single_line(text: str) -> str:
    """``text`` with its whitespace collapsed to single spaces and its other control characters removed."""
    return " ".join(clean_text(text).split())


def clip_line(text: str, max_chars: int) -> str:
    """:func:`single_line` of ``text`` clipped by :func:`clip_text`, in time bounded by ``max_chars``."""
    window = 4 * max_chars + len(TRUNCATION_MARK)
    line = clip_text(single_line(text[:window]), max_chars)
    lost = len(text) > window and not text[window:].isspace()
    if not lost or line.endswith(TRUNCATION_MARK) or max_chars <= len(TRUNCATION_MARK):
        return line
    return line[: max_chars - len(TRUNCATION_MARK)].rstrip() + TRUNCATION_MARK


def clean_text(text: str) -> str:
    """``text`` safe to store and to embed in JSON: control characters other than ``\\n``, ``\\t`` and
    ``\\r`` removed (other vertical whitespace becomes a space), lone surrogates become U+FFFD."""
    if text.isascii() and text.isprintable():
        return text
    return text.translate(_CLEAN_TABLE)


def _clean_table() -> dict[int, str | None]:
    table: dict[int, str | None] = {ord(char): " " if char.isspace() else None for char in CONTROL_CHARACTERS}
    table.update(dict.fromkeys(range(0xD800, 0xE000), "\ufffd"))
    return table


_CLEAN_TABLE: Final = _clean_table()


def json_size(value: Any) -> int:
    """Characters of ``value``'s compact JSON (non-ASCII kept as is, as models and the HTTP bodies see it)."""
    return len(json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False))


def clip_json(
    value: Any,
    *,
    max_items: int = RESULT_MAX_ITEMS,
    max_chars: int = RESULT_MAX_CHARS,
    max_depth: int = 8,
    max_string_chars: int | None = None,
) -> Any:
    """``value`` as JSON-ready data (dicts with string keys, lists, strings, numbers, booleans, ``None``)
    whose compact JSON (:func:`json_size`) has at most ``max_chars`` characters, with every cut visible."""
    if max_items < 1 or max_chars < 2 or max_depth < 0:
        raise ValueError("clip_json needs max_items >= 1, max_chars >= 2 and max_depth >= 0")
    items = max_items
    strings = max_chars if max_string_chars is None else max(1, max_string_chars)
    clipped: Any = None
    for _ in range(_MAX_SHRINK_ROUNDS):
        clipped = _Clipper(items, strings, max_depth, node_budget=max_chars).clip(value, 0)
        if json_size(clipped) <= max_chars:
            return clipped
        if items == 1 and strings <= _MIN_STRING_CHARS:
            break
        items = max(1, items // 2)
        strings = max(_MIN_STRING_CHARS, strings // 2)
    text = json.dumps(clipped, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    # Only the quotes are added around a string whose characters need no escaping: keep cutting until the
    # escaped form fits (each round at least halves what is left over).
    limit = max_chars - 2
    while True:
        candidate = clip_text(text, limit)
        overflow = json_size(candidate) - max_chars
        if overflow <= 0:
            return candidate
        limit = max(0, limit - max(overflow, 1))


def clip_state(
    state: Mapping[str, Any],
    *,
    max_keys: int = MAX_STATE_KEYS,
    max_key_chars: int = MAX_STATE_KEY_CHARS,
    max_value_chars: int = MAX_STATE_VALUE_CHARS,
    max_value_items: int = MAX_STATE_VALUE_ITEMS,
) -> dict[str, Any]:
    """A conversation state (or a state update) within bounds: at most ``max_keys`` keys (the first ones),
    each key cut to ``max_key_chars`` single-line characters, each value through :func:`clip_json`."""
    bounded: dict[str, Any] = {}
    for key, value in state.items():
        if len(bounded) >= max_keys:
            break
        name = clip_line(str(key), max_key_chars)
        if not name or name in bounded:
            continue
        bounded[name] = (
            None
            if value is None
            else clip_json(value, max_items=max_value_items, max_chars=max_value_chars, max_depth=4)
        )
    return bounded


class _Clipper:
    """One structural pass of :func:`clip_json`: cuts lists, dicts, strings and depth; counts the nodes it
    emits and stops descending once ``node_budget`` is spent (each node costs at least one JSON character,
    so more could never fit)."""

    def __init__(self, max_items: int, max_string_chars: int, max_depth: int, node_budget: int) -> None:
        self.max_items = max_items
        self.max_string_chars = max_string_chars
        self.max_depth = max_depth
        self.budget = node_budget

    def text(self, value: str) -> str:
        return clean_text(clip_text(value, self.max_string_chars))

    def clip(self, value: Any, depth: int) -> Any:
        self.budget -= 1
        if isinstance(value, Enum):
            value = value.value
        if value is None or isinstance(value, bool):
            return value
        if isinstance(value, int):
            # Python refuses to print integers of more than 4,300 digits; no real figure comes near.
            return value if value.bit_length() <= _MAX_INT_BITS else _HUGE_NUMBER_MARK
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, float):
            return value if math.isfinite(value) else str(value)
        if isinstance(value, Decimal):
            return self.clip(float(value) if value.is_finite() else str(value), depth)
        if isinstance(value, datetime | date | time):
            return value.isoformat()
        if isinstance(value, BaseModel):
            return self._nested(value.model_dump(mode="json"), depth)
        if dataclasses.is_dataclass(value) and not isinstance(value, type):
            fields = {field.name: getattr(value, field.name) for field in dataclasses.fields(value)}
            return self._nested(fields, depth)
        if isinstance(value, Mapping | list | tuple | set | frozenset):
            return self._nested(value, depth)
        return self.text(str(value))

    def _nested(
        self, value: Mapping[Any, Any] | list[Any] | tuple[Any, ...] | set[Any] | frozenset[Any], depth: int
    ) -> Any:
        if depth >= self.max_depth or self.budget <= 0:
            return NESTING_MARK
        if isinstance(value, Mapping):
            out: dict[str, Any] = {}
            for key, item in itertools.islice(value.items(), self.max_items):
                if self.budget <= 0:
                    break
                out[self.text(str(key))] = self.clip(item, depth + 1)
            if len(value) > len(out):
                out[TRUNCATED_KEY] = f"… ({len(value) - len(out)} claves más)"
            return out
        items: list[Any] = []
        for item in itertools.islice(value, self.max_items):
            if self.budget <= 0:
                break
            items.append(self.clip(item, depth + 1))
        if len(value) > len(items):
            items.append(f"… ({len(value) - len(items)} más)")
        return items
