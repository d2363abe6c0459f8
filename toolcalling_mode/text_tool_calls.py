"""Tool calls a model wrote as text instead of as tool calls: read them, and recover them into real ones.

Small local models behind a server whose tool-call parser does not know their format reply with the call as
text: a fenced block (```` ```json {"name": "ventas_anuales", "arguments": {"anio": 2025}} ``` ````), the bare
object, a list of them, or Hermes-style ``<tool_call>{...}</tool_call>`` tags. Such a reply is never an
answer. :func:`parse_text_tool_calls` reads a reply that is *only* such calls (a ``<think>`` block aside);
prose that merely quotes JSON stays prose. :func:`recover_text_tool_calls` turns such a reply into the tool
calls it describes, under the rules of native calls: a call may name any tool, and one the request did not
offer (made up, or one the caller may not run) gets the ERP's error as its result, as a native call to it
does; arguments are validated by the tool when it runs; the same limits apply; each recovered call is counted
(``TurnResult.recovered_tool_calls``). Only the structured answer's own tools are never recovered from text.
"""

from __future__ import annotations

import json
import re
import uuid
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, ToolCall

from shared.text import MARKDOWN_FENCE, strip_reasoning

__all__ = [
    "contains_machinery",
    "looks_like_text_tool_call",
    "parse_text_tool_calls",
    "recover_text_tool_calls",
]

_TAG = re.compile(r"<tool_call>\s*(.*?)\s*</tool_call>", re.DOTALL)
_ARGUMENT_KEYS = ("arguments", "parameters", "args")
_TOOL_NAME = re.compile(r"[^\W\d][\w.-]{0,63}")
"""An identifier, in any script (a model names a made-up tool ``clima_mañana``); never words with spaces."""

TextToolCall = tuple[str, dict[str, Any]]
"""A tool call read from text: the tool's name and its arguments."""


def parse_text_tool_calls(text: str) -> list[TextToolCall] | None:
    """The tool calls ``text`` consists of, or ``None`` when it is not only tool calls written as text.

    Accepted pieces, any number of them separated by whitespace: fenced blocks (any language tag) and
    ``<tool_call>`` tags holding JSON, and bare JSON. Each JSON value is one call object
    ``{"name": str, "arguments": object}`` (``parameters`` or ``args`` instead of ``arguments``; arguments as
    a JSON string are decoded; missing arguments are ``{}``), or a list of them; a call wrapped in doubled
    braces (``{{"name": …}}``, a template's escaping copied) is read as the call inside.
    """
    body = strip_reasoning(text).strip()
    if not body:
        return None
    pieces: list[str] = []
    for pattern in (_TAG, MARKDOWN_FENCE):
        found = pattern.findall(body)
        if found:
            if pattern.sub("", body).strip():
                return None  # text besides the calls: prose
            pieces = found
            break
    else:
        pieces = [body]
    calls: list[TextToolCall] = []
    for piece in pieces:
        try:
            parsed = _json_values(piece.strip()) or _json_values(_undoubled(piece.strip()))
        except _TooDeep:
            return None  # never recovered; the final answer's check refuses it (contains_machinery)
        if parsed is None:
            return None
        for value in parsed:
            items = value if isinstance(value, list) else [value]
            for item in items:
                call = _call(item)
                if call is None:
                    return None
                calls.append(call)
    return calls or None


def _undoubled(text: str) -> str:
    """``{{…}}`` as ``{…}``: a small model copying a template's escaped braces writes its call that way."""
    if text.startswith("{{") and text.endswith("}}"):
        return text[1:-1]
    return ""


def looks_like_text_tool_call(text: str) -> bool:
    """Whether ``text`` is only tool calls written as text (any tool name)."""
    return parse_text_tool_calls(text) is not None


_CALL_START = re.compile(r'\{\s*+"name"\s*+:')
"""Where a JSON call object may start inside prose (``{"name":``); linear: no backtracking into a run."""
_CALL_TAGS = ("<tool_call>", "</tool_call>", "<tools>", "<function_call>")
MAX_CALL_STARTS = 50
"""Call-looking objects read in one reply: a reply with more is machinery anyway."""


def contains_machinery(text: str) -> bool:
    """Whether ``text`` holds anything a user must never read as an answer: a tool call written as text
    anywhere in it (any tool name, after prose or inside it, in tags), a reply that is only a JSON object or
    list, or JSON nested too deep to read. Linear in the text's length, whatever it holds."""
    body = strip_reasoning(text)
    if any(tag in body for tag in _CALL_TAGS):
        return True
    decoder = json.JSONDecoder()
    for count, match in enumerate(_CALL_START.finditer(body)):
        if count >= MAX_CALL_STARTS:
            return True
        try:
            value, _end = decoder.raw_decode(body, match.start())
        except RecursionError:
            return True  # nested deeper than the decoder reads: no answer is written so
        except json.JSONDecodeError:
            continue
        if isinstance(value, dict) and isinstance(value.get("name"), str):
            return True
    stripped = MARKDOWN_FENCE.sub(lambda found: found.group(1), body).strip()
    if stripped[:1] in ("{", "["):
        try:
            values = _json_values(stripped)
        except _TooDeep:
            return True
        return values is not None and all(isinstance(value, dict | list) for value in values)
    return False


class _TooDeep(ValueError):
    """JSON nested deeper than the decoder reads (no call or answer is written so)."""


def _json_values(text: str) -> list[Any] | None:
    """Every JSON value in ``text`` written one after another (whitespace between); ``None`` otherwise.

    Raises:
        _TooDeep: the JSON nests deeper than the decoder reads.
    """
    decoder = json.JSONDecoder()
    values: list[Any] = []
    position = 0
    while position < len(text):
        try:
            value, end = decoder.raw_decode(text, position)
        except json.JSONDecodeError:
            return None
        except RecursionError:
            raise _TooDeep(f"JSON nested too deep at {position}") from None
        values.append(value)
        position = end
        while position < len(text) and text[position].isspace():
            position += 1
    return values or None


def _call(item: Any) -> TextToolCall | None:
    if not isinstance(item, dict) or not isinstance(item.get("name"), str):
        return None
    if not _TOOL_NAME.fullmatch(item["name"].strip()):
        return None  # "Empresa ABC" is data, not a tool: tool names are identifiers
    if set(item) - {"name", "type", "id", *_ARGUMENT_KEYS}:
        return None  # some other object that happens to have a "name"
    arguments: Any = next((item[key] for key in _ARGUMENT_KEYS if key in item), {})
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments or "{}")
        except json.JSONDecodeError:
            return None
    if arguments is None:
        arguments = {}
    if not isinstance(arguments, dict):
        return None
    return item["name"].strip(), arguments


def recover_text_tool_calls(message: BaseMessage, excluded: frozenset[str] = frozenset()) -> BaseMessage:
    """``message`` with the tool calls its text consists of when none names a tool in ``excluded`` (each
    with an id ``text-call-…``, ``response_metadata["recovered_tool_calls"]`` their number); otherwise
    ``message`` itself."""
    if not isinstance(message, AIMessage) or message.tool_calls or message.invalid_tool_calls:
        return message
    calls = parse_text_tool_calls(message.text)
    if calls is None or any(name in excluded for name, _ in calls):
        return message  # prose, or the structured answer written as text: left as written
    tool_calls = [
        ToolCall(name=name, args=arguments, id=f"text-call-{uuid.uuid4().hex[:12]}", type="tool_call")
        for name, arguments in calls
    ]
    metadata = {**message.response_metadata, "recovered_tool_calls": len(calls)}
    return message.model_copy(update={"content": "", "tool_calls": tool_calls, "response_metadata": metadata})
