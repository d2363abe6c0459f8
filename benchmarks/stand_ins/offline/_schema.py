"""JSON-schema helpers (classify a requested schema, fill one with placeholders, conform a payload to it)
and calls to tools the offline model does not know as sales operations (weather, adders, test tools).

A union (``anyOf``/``oneOf``) is conformed to the first alternative whose type fits the value and whose
one-value ``enum``/``const`` properties it matches (the planner's schema ties each ``funcion`` to its own
``parametros`` that way); a value no alternative fits is left as it is. A conformed object has its keys in
the schema's ``properties`` order, the order a grammar built from the schema makes a model write them in.

An unknown tool is chosen when the question calls it (``magic_function(3)``), names it (a word of its name)
or ``tool_choice`` forces it; its arguments come from the call, the question's numbers and quoted or
capitalised text, or the schema's placeholders.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from typing import Any, Literal

from shared.text import fold

SchemaKind = Literal["plan", "answer", "other"]


def resolve(schema: dict[str, Any], root: dict[str, Any]) -> dict[str, Any]:
    """Follow a local ``$ref`` (``#/$defs/Name``) and unwrap single ``allOf``; otherwise return ``schema``."""
    seen = 0
    while isinstance(schema, dict) and seen < 20:
        seen += 1
        ref = schema.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/"):
            target: Any = root
            for part in ref[2:].split("/"):
                target = target.get(part, {}) if isinstance(target, dict) else {}
            schema = target if isinstance(target, dict) else {}
            continue
        all_of = schema.get("allOf")
        if isinstance(all_of, list) and len(all_of) == 1 and isinstance(all_of[0], dict):
            schema = all_of[0]
            continue
        break
    return schema


def properties(schema: dict[str, Any]) -> dict[str, Any]:
    """The ``properties`` of an object schema (after ``$ref`` resolution), or ``{}``."""
    props = resolve(schema, schema).get("properties")
    return props if isinstance(props, dict) else {}


def schema_kind(schema: dict[str, Any] | None) -> SchemaKind:
    """``plan`` when the schema has ``operaciones``, ``answer`` when it has ``respuesta``, else ``other``."""
    props = properties(schema or {})
    if "operaciones" in props:
        return "plan"
    if "respuesta" in props:
        return "answer"
    return "other"


def _non_null(options: list[Any]) -> dict[str, Any]:
    for option in options:
        if isinstance(option, dict) and option.get("type") != "null":
            return option
    return {}


def fill(schema: dict[str, Any], root: dict[str, Any], *, hint: str = "") -> Any:
    """A value valid for ``schema``: defaults, enums and consts first, then a placeholder by type."""
    schema = resolve(schema, root)
    if "const" in schema:
        return schema["const"]
    if "default" in schema and schema["default"] is not None:
        return schema["default"]
    enum = schema.get("enum")
    if isinstance(enum, list) and enum:
        return enum[0]
    for key in ("anyOf", "oneOf"):
        if isinstance(schema.get(key), list):
            return fill(_non_null(schema[key]), root, hint=hint)
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "null")
    if kind == "object" or (kind is None and "properties" in schema):
        return {name: fill(sub, root, hint=name) for name, sub in (schema.get("properties") or {}).items()}
    if kind == "array":
        items = schema.get("items")
        minimum = int(schema.get("minItems") or 0)
        return [fill(items, root, hint=hint) for _ in range(minimum)] if isinstance(items, dict) else []
    if kind == "integer":
        return _number(schema, 0)
    if kind == "number":
        return float(_number(schema, 0))
    if kind == "boolean":
        return False
    if kind == "null":
        return None
    text = str(schema.get("description") or hint or "valor").strip()
    return f"(offline) {text}"


def _number(schema: dict[str, Any], preferred: int) -> int:
    value = preferred
    if isinstance(schema.get("minimum"), int | float):
        value = max(value, int(schema["minimum"]))
    if isinstance(schema.get("exclusiveMinimum"), int | float):
        value = max(value, int(schema["exclusiveMinimum"]) + 1)
    if isinstance(schema.get("maximum"), int | float):
        value = min(value, int(schema["maximum"]))
    return value


_JSON_TYPES: dict[str, tuple[type, ...]] = {
    "object": (dict,),
    "array": (list,),
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "null": (type(None),),
}


def _fits(value: Any, schema: dict[str, Any]) -> bool:
    """Whether ``value`` has the schema's type and the value of each of its one-value ``enum``/``const``
    properties (a discriminator such as the planner's ``funcion``)."""
    kind = schema.get("type")
    if kind is None:
        kind = "object" if "properties" in schema else "array" if "items" in schema else None
    kinds = kind if isinstance(kind, list) else [kind] if isinstance(kind, str) else []
    if kinds:
        is_bool = isinstance(value, bool)
        if not any(
            isinstance(value, _JSON_TYPES.get(k, ())) and (k == "boolean" or not is_bool) for k in kinds
        ):
            return False
    props = schema.get("properties")
    if isinstance(value, dict) and isinstance(props, dict):
        for name, sub in props.items():
            fixed = _fixed_value(sub)
            if fixed is not _NO_VALUE and name in value and value[name] != fixed:
                return False
    return True


_NO_VALUE = object()


def _fixed_value(schema: Any) -> Any:
    """The only value ``schema`` allows (``const``, or an ``enum`` of one), else ``_NO_VALUE``."""
    if not isinstance(schema, dict):
        return _NO_VALUE
    if "const" in schema:
        return schema["const"]
    enum = schema.get("enum")
    return enum[0] if isinstance(enum, list) and len(enum) == 1 else _NO_VALUE


def alternatives(schema: dict[str, Any], root: dict[str, Any]) -> list[dict[str, Any]]:
    """The alternatives of an ``anyOf``/``oneOf`` schema (resolved), or ``[schema]`` for any other."""
    schema = resolve(schema, root)
    for key in ("anyOf", "oneOf"):
        options = schema.get(key)
        if isinstance(options, list):
            return [resolve(option, root) for option in options if isinstance(option, dict)]
    return [schema]


def conform(value: Any, schema: dict[str, Any], root: dict[str, Any]) -> Any:
    """Adapt a payload to a schema: keys in the schema's order, missing required keys filled, extras the
    schema forbids dropped, recursively."""
    schema = resolve(schema, root)
    if any(isinstance(schema.get(key), list) for key in ("anyOf", "oneOf")):
        if value is None:
            return value
        chosen = next((option for option in alternatives(schema, root) if _fits(value, option)), None)
        if chosen is None:
            return value
        schema = chosen
    if isinstance(value, dict) and isinstance(schema.get("properties"), dict):
        # In the schema's order, as a grammar built from it makes a model write; extras last.
        props: dict[str, Any] = schema["properties"]
        required = set(schema.get("required") or [])
        result: dict[str, Any] = {}
        for name, sub in props.items():
            if name in value:
                result[name] = conform(value[name], sub, root)
            elif name in required:
                result[name] = fill(sub, root, hint=name)
        if schema.get("additionalProperties") is not False:
            result.update((name, item) for name, item in value.items() if name not in props)
        return result
    if isinstance(value, list) and isinstance(schema.get("items"), dict):
        return [conform(item, schema["items"], root) for item in value]
    return value


def enum_values(schema: dict[str, Any], root: dict[str, Any]) -> list[Any] | None:
    """Every value an ``enum``/``const`` schema (or a union of them) allows, or ``None`` when it is open."""
    values: list[Any] = []
    for option in alternatives(schema, root):
        if "const" in option:
            values.append(option["const"])
        elif isinstance(option.get("enum"), list):
            values.extend(option["enum"])
        else:
            return None
    return values


def mentions(schema: dict[str, Any] | None, word: str) -> bool:
    """Whether ``word`` occurs anywhere in the schema's text (property names, descriptions)."""
    return bool(schema) and re.search(re.escape(word), repr(schema)) is not None


# -- tools the model does not know ---------------------------------------------------------------------

_GENERIC_WORDS = frozenset(
    {"get", "set", "tool", "function", "call", "run", "the", "and", "with", "from", "para", "por"}
)


@dataclass(frozen=True)
class ToolSpec:
    """A bound tool as the model sees it: its name and parameters schema."""

    name: str
    parameters: dict[str, Any]

    @property
    def property_names(self) -> list[str]:
        return list(properties(self.parameters))


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
