"""A tolerant JSON reader for models that do not honour structured output exactly.

Small local models often wrap the JSON in a Markdown code fence, add a sentence before or after it, or leave a
trailing comma. :func:`parse_model_output` recovers the first JSON object from such text and validates it
against a pydantic model; anything it cannot recover raises :class:`~shared.errors.ModelOutputError`.
"""

from __future__ import annotations

import json
import re
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from shared.errors import ModelOutputError

__all__ = ["extract_json_object", "message_text", "parse_model_output"]

M = TypeVar("M", bound=BaseModel)

_FENCE = re.compile(r"```[a-zA-Z0-9_-]*\s*\n?(.*?)```", re.DOTALL)
_RAW_PREVIEW = 300


def message_text(content: Any) -> str:
    """The text of a message ``content``: a string, or the text parts of a list of content blocks."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts: list[str] = []
        for block in content:
            if isinstance(block, str):
                parts.append(block)
            elif isinstance(block, dict) and isinstance(block.get("text"), str):
                parts.append(block["text"])
        return "".join(parts)
    return "" if content is None else str(content)


def _balanced_objects(text: str) -> list[str]:
    """Every top-level ``{...}`` span of ``text``, string- and escape-aware, in order."""
    spans: list[str] = []
    depth = 0
    start = -1
    in_string = False
    escaped = False
    for index, char in enumerate(text):
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
            continue
        if char == '"':
            in_string = depth > 0
        elif char == "{":
            if depth == 0:
                start = index
            depth += 1
        elif char == "}" and depth > 0:
            depth -= 1
            if depth == 0:
                spans.append(text[start : index + 1])
    return spans


def _drop_trailing_commas(text: str) -> str:
    """Remove commas directly before ``}`` or ``]`` (whitespace allowed in between) outside strings.

    One pass, linear in ``len(text)``: a model output of any size costs no more than reading it.
    """
    out: list[str] = []
    in_string = False
    escaped = False
    pending_comma: int | None = None  # index in ``out`` of a comma followed so far only by whitespace
    for char in text:
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif not char.isspace():
            if char in "}]" and pending_comma is not None:
                out[pending_comma] = ""
            pending_comma = len(out) if char == "," else None
            in_string = char == '"'
        out.append(char)
    return "".join(out)


def _loads_object(candidate: str) -> dict[str, Any] | None:
    for text in (candidate, _drop_trailing_commas(candidate)):
        try:
            value = json.loads(text)
        except (ValueError, RecursionError):
            # JSONDecodeError is a ValueError, and so is an integer past Python's digit limit; nesting deeper
            # than the interpreter's recursion limit raises RecursionError. All mean "not usable JSON".
            continue
        if isinstance(value, dict):
            return value
    return None


def extract_json_object(text: str) -> dict[str, Any]:
    """Return the first JSON object found in ``text``.

    Tries, in order: the whole text, the contents of each Markdown code fence, and each balanced ``{...}``
    span; each candidate is also retried without trailing commas. Raises ``ModelOutputError`` if none parses.
    """
    stripped = text.strip()
    if not stripped:
        raise ModelOutputError("The model returned an empty response.", raw=text)
    candidates = [stripped, *(m.group(1).strip() for m in _FENCE.finditer(stripped))]
    for source in list(candidates):
        candidates.extend(_balanced_objects(source))
    for candidate in candidates:
        value = _loads_object(candidate)
        if value is not None:
            return value
    raise ModelOutputError(f"The model's response is not valid JSON: {stripped[:_RAW_PREVIEW]!r}", raw=text)


def parse_model_output(text: str, model: type[M]) -> M:
    """Recover a JSON object from ``text`` and validate it as ``model``; raise ``ModelOutputError``."""
    data = extract_json_object(text)
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        details = "; ".join(
            f"{'.'.join(str(p) for p in err['loc']) or '(root)'}: {err['msg']}" for err in exc.errors()
        )
        raise ModelOutputError(
            f"The model's JSON does not match the {model.__name__} schema: {details}", raw=text
        ) from None
