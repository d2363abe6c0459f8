"""Calls to tools the offline model does not know as sales operations (weather, adders, test tools).

A tool is chosen when the question calls it explicitly (``magic_function(3)``), names it (a word of its name,
e.g. "weather" for ``get_weather``), or when ``tool_choice`` forces a call. Arguments come from the explicit
call, from the question's numbers and quoted or capitalised text, or from the schema's placeholders.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from typing import Any

from benchmarks.stand_ins.offline._schema import fill, resolve
from shared.text import fold

_GENERIC_WORDS = {
    "get",
    "set",
    "tool",
    "function",
    "call",
    "run",
    "the",
    "and",
    "with",
    "from",
    "para",
    "por",
}


@dataclass(frozen=True)
class ToolSpec:
    """A bound tool as the model sees it: its name and parameters schema."""

    name: str
    parameters: dict[str, Any]

    @property
    def property_names(self) -> list[str]:
        props = resolve(self.parameters, self.parameters).get("properties")
        return list(props) if isinstance(props, dict) else []


def explicit_call(question: str, tools: list[ToolSpec]) -> tuple[ToolSpec, dict[str, Any]] | None:
    """A call written in the question as ``name(arg, ...)``."""
    for spec in tools:
        match = re.search(rf"\b{re.escape(spec.name)}\s*\(([^)]*)\)", question)
        if not match:
            continue
        args: dict[str, Any] = {}
        raw = [part.strip() for part in match.group(1).split(",") if part.strip()]
        for name, text in zip(spec.property_names, raw, strict=False):
            key, sep, literal = text.partition("=")
            if sep and key.strip().isidentifier():
                name, text = key.strip(), literal.strip()
            try:
                args[name] = ast.literal_eval(text)
            except (ValueError, SyntaxError):
                args[name] = text
        return spec, args
    return None


def named_tool(question: str, tools: list[ToolSpec]) -> ToolSpec | None:
    """The first tool one of whose name words (4+ letters, not generic) appears in the question."""
    words = set(re.findall(r"[a-z0-9]+", fold(question)))
    for spec in tools:
        parts = [p for p in re.split(r"[_\-\s]+|(?<=[a-z])(?=[A-Z])", spec.name) if p]
        if any(len(p) >= 4 and p.lower() not in _GENERIC_WORDS and p.lower() in words for p in parts):
            return spec
    return None


def arguments(spec: ToolSpec, question: str, *, all_properties: bool = False) -> dict[str, Any]:
    """Arguments for ``spec`` taken from the question where possible, placeholders otherwise."""
    schema = resolve(spec.parameters, spec.parameters)
    props: dict[str, Any] = schema.get("properties") or {}
    required = set(schema.get("required") or [])
    numbers = [int(n) for n in re.findall(r"(?<![\w.])-?\d+(?![\w.])", question)]
    texts = _texts(question)
    args: dict[str, Any] = {}
    for name, sub in props.items():
        if not all_properties and name not in required:
            continue
        sub_schema = resolve(sub, spec.parameters)
        kind = sub_schema.get("type")
        if kind in ("integer", "number") and numbers:
            value: Any = numbers.pop(0)
            args[name] = float(value) if kind == "number" else value
        elif kind == "string" and "enum" not in sub_schema and texts:
            args[name] = texts.pop(0)
        else:
            args[name] = fill(sub, spec.parameters, hint=name)
    return args


def _texts(question: str) -> list[str]:
    quoted = re.findall(r"[\"“«'']([^\"”»'']{1,80})[\"”»'']", question)
    if quoted:
        return quoted
    capitalised = re.findall(r"(?<!^)(?<![.?!] )\b([A-Z][\w\-]*(?:,?\s+[A-Z][\w\-]*)*)", question)
    return [c for c in capitalised if c.lower() not in {"i", "use", "using"}] or [question.strip()]
