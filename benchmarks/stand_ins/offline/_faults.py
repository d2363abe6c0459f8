"""How a fault mode changes a reply (what each mode does: :mod:`benchmarks.stand_ins.faults`): :func:`inject`
rewrites the offline model's :class:`Draft`, :func:`misbehave` a finished reply of any chat model."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any, Literal

from langchain_core.messages import BaseMessage

from benchmarks.stand_ins.faults import (
    HALLUCINATED_FUNCTION,
    INVENTED_REPLY,
    REPLY_FAULTS,
    THINK_BLOCK,
    FaultMode,
    break_arguments,
    malform_json,
    placeholder_plan,
    repeat_memory,
    truncate_json,
    wrong_types,
)
from benchmarks.stand_ins.offline._prompt import PromptView, read_prompt
from benchmarks.stand_ins.offline._schema import schema_kind
from benchmarks.stand_ins.offline._understand import KNOWN_OPERATIONS
from benchmarks.stand_ins.output_cap import call_json

RequestKind = Literal["plan", "answer"]

_SCHEMA_IGNORED_REPLY = "Claro, consulté el ERP y aquí está la respuesta a su pregunta."
_PLACEHOLDER_PREFERENCE = ("compras_cliente", "facturas_pendientes")
"""Operations a placeholder plan prefers for its ``cliente`` ``$ref`` (both take a customer)."""


@dataclass
class Draft:
    """A reply before faults, limits and metadata: text, the JSON behind it, and tool calls."""

    content: str = ""
    payload: Any = None
    tool_calls: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    invalid_calls: list[tuple[str, str]] = field(default_factory=list)
    repeat: str = ""
    """A runaway reply: ``content`` is followed by this text until the output cap cuts it."""
    compact: bool = False

    @classmethod
    def json(cls, payload: Any, *, compact: bool = False) -> Draft:
        separators = (",", ":") if compact else (", ", ": ")
        text = json.dumps(payload, ensure_ascii=False, separators=separators)
        return cls(content=text, payload=payload, compact=compact)


@dataclass(frozen=True)
class FaultSite:
    """What the faulty call was asked, so a fault can misbehave convincingly."""

    call_index: int
    kind: RequestKind | None
    tools_bound: bool
    catalog: tuple[str, ...] = ()

    @classmethod
    def read(
        cls, view: PromptView, schema: dict[str, Any] | None, *, tools_bound: bool, call_index: int
    ) -> FaultSite:
        return cls(call_index, request_kind(view, schema), tools_bound, catalog_names(view))


def prompt_kind(view: PromptView) -> RequestKind | None:
    """Plan or answer request, from the quoted keys the system prompt (or the whole prompt) asks for; when it
    asks for both, a prompt with results is the answer request."""
    text = view.system or view.all_text
    answer, plan = '"respuesta"' in text, '"operaciones"' in text
    if answer and plan:  # instructions for both calls: the one with results is the answer
        return "answer" if view.results is not None else "plan"
    if answer:
        return "answer"
    if plan:
        return "plan"
    return None


def request_kind(view: PromptView, schema: dict[str, Any] | None) -> RequestKind | None:
    if schema is None:
        return prompt_kind(view)
    kind = schema_kind(schema)
    return kind if kind != "other" else None


_DECLARED = re.compile(r"^\s*-\s*([A-Za-z_]\w*)\(([^)\n]*)", re.MULTILINE)
"""A catalog line: ``- compras_cliente(cliente, anio): …``."""


def declared_operations(view: PromptView) -> dict[str, str]:
    """The operations the prompt's catalog declares, in order, each with its parameter list's text."""
    declared: dict[str, str] = {}
    for name, parameters in _DECLARED.findall(view.catalog_text):
        declared.setdefault(name, parameters)
    return declared


def catalog_names(view: PromptView) -> tuple[str, ...]:
    """The operations the prompt's catalog offers, in order: those it declares, else the known operations
    it names outside quotes (a name quoted in a plan example is no offer)."""
    declared = declared_operations(view)
    if declared:
        return tuple(declared)
    text = view.catalog_text
    found = {
        name: match.start()
        for name in KNOWN_OPERATIONS
        if (match := re.search(rf"(?<![\"'])\b{name}\b(?![\"'])", text)) is not None
    }
    return tuple(sorted(found, key=found.__getitem__))


def _payload_kind(value: Any) -> RequestKind | None:
    if not isinstance(value, dict):
        return None
    if "operaciones" in value:
        return "plan"
    if "respuesta" in value:
        return "answer"
    return None


def _reshape(value: Any, kind: RequestKind | None, mode: FaultMode, site: FaultSite) -> Any | None:
    if kind == "plan" and mode == "placeholder_plan":
        operation = next((n for n in _PLACEHOLDER_PREFERENCE if n in site.catalog), None)
        return placeholder_plan(operation or (site.catalog[0] if site.catalog else "compras_cliente"))
    if mode == "schema_ignored" and kind is not None:
        return {"respuesta": _SCHEMA_IGNORED_REPLY} if kind == "plan" and site.call_index % 2 == 0 else {}
    if kind == "answer" and mode == "repeat_memory":
        return repeat_memory(value if isinstance(value, dict) else {})
    return None


def _runaway(draft: Draft, site: FaultSite) -> Draft:
    if draft.tool_calls:
        unit = "".join(call_json(name, args) + "\n" for name, args in draft.tool_calls)
        return Draft(content=draft.content + ("\n" if draft.content else "") + unit, repeat=unit)
    payload = draft.payload
    if _payload_kind(payload) == "plan":
        operations = payload.get("operaciones")
        first = operations[0] if isinstance(operations, list) and operations else None
        if first is None:
            name = site.catalog[0] if site.catalog else KNOWN_OPERATIONS[0]
            first = {"funcion": name, "parametros": {}}
        item = json.dumps(first, ensure_ascii=False)
        return Draft(content='{"operaciones": [' + item, repeat=", " + item)
    if _payload_kind(payload) == "answer":
        respuesta = str(payload.get("respuesta") or "")
        memoria = payload.get("memoria")
        memory = (
            memoria[0]
            if isinstance(memoria, list) and memoria
            else {"contenido": respuesta, "importancia": 0.5}
        )
        item = json.dumps(memory, ensure_ascii=False)
        prefix = '{"respuesta": ' + json.dumps(respuesta, ensure_ascii=False) + ', "memoria": [' + item
        return Draft(content=prefix, repeat=", " + item)
    text = draft.content or "Lo siento."
    return Draft(content=text, repeat=" " + text)


def inject(draft: Draft, mode: FaultMode, site: FaultSite) -> Draft:
    """``draft`` as a model suffering ``mode`` would have written it (the raising modes leave it alone)."""
    if mode == "empty":
        return Draft()
    if mode == "no_tool_calls":
        return Draft(content=INVENTED_REPLY) if site.tools_bound else draft
    if mode == "text_tool_calls":
        return Draft(content=text_tool_calls(draft.tool_calls)) if draft.tool_calls else draft
    if mode == "think_wrap":
        return Draft(
            THINK_BLOCK + draft.content, tool_calls=draft.tool_calls, invalid_calls=draft.invalid_calls
        )
    if mode == "runaway":
        return _runaway(draft, site)
    if mode in ("placeholder_plan", "schema_ignored", "repeat_memory"):
        calls = []
        for name, args in draft.tool_calls:
            reshaped = _reshape(args, _payload_kind(args), mode, site)
            calls.append((name, reshaped if reshaped is not None else args))
        fallback = site.kind if not draft.tool_calls and not site.tools_bound else None
        payload_kind = _payload_kind(draft.payload) or fallback
        reshaped = _reshape(draft.payload, payload_kind, mode, site)
        if reshaped is not None:
            return Draft.json(reshaped, compact=draft.compact)
        return Draft(content=draft.content, payload=draft.payload, tool_calls=calls)
    if draft.tool_calls:
        return _inject_tool_calls(draft, mode)
    if mode == "truncated_json":
        return Draft(content=truncate_json(draft.content))
    if draft.payload is None:
        return draft
    if mode == "malformed_json":
        return Draft(content=malform_json(draft.content))
    payload = json.loads(json.dumps(draft.payload))
    operations = payload.get("operaciones") if isinstance(payload, dict) else None
    if mode == "unknown_function" and isinstance(operations, list) and operations:
        operations[0]["funcion"] = HALLUCINATED_FUNCTION
    elif mode == "wrong_types" and isinstance(operations, list):
        for operation in operations:
            operation["parametros"] = wrong_types(operation.get("parametros") or {})
    elif mode == "wrong_types" and isinstance(payload, dict) and "memoria" in payload:
        payload["memoria"] = [dict(m, importancia="alta") for m in payload.get("memoria") or []]
        if isinstance(payload.get("estado"), dict):
            payload["estado"] = wrong_types(payload["estado"])
    return Draft.json(payload, compact=draft.compact)


def text_tool_calls(calls: list[tuple[str, dict[str, Any]]]) -> str:
    """``calls`` as text, one fenced JSON block each (a server that does not parse its model's tool calls)."""
    return "\n".join(
        "```json\n" + json.dumps({"name": name, "arguments": args}, ensure_ascii=False, indent=2) + "\n```"
        for name, args in calls
    )


def _inject_tool_calls(draft: Draft, mode: FaultMode) -> Draft:
    first_name, first_args = draft.tool_calls[0]
    rest = draft.tool_calls[1:]
    if mode in ("malformed_json", "truncated_json"):
        text = json.dumps(first_args, ensure_ascii=False)
        broken = break_arguments(text, mode)
        return Draft(content=draft.content, tool_calls=rest, invalid_calls=[(first_name, broken)])
    if mode == "unknown_function":
        return Draft(content=draft.content, tool_calls=[(HALLUCINATED_FUNCTION, first_args), *rest])
    if mode == "wrong_types":
        return Draft(
            content=draft.content, tool_calls=[(name, wrong_types(args)) for name, args in draft.tool_calls]
        )
    return draft


@dataclass(frozen=True)
class Misbehaviour:
    """A reply rewritten by a fault: text, tool calls, and the runaway repeat unit (``""`` when none)."""

    text: str
    tool_calls: list[tuple[str, dict[str, Any]]]
    repeat: str = ""


def misbehave(
    mode: FaultMode,
    messages: list[BaseMessage],
    *,
    text: str,
    tool_calls: list[tuple[str, dict[str, Any]]],
    tools_bound: bool,
    schema: dict[str, Any] | None,
    call_index: int,
) -> Misbehaviour:
    """Rewrite a finished reply to ``messages`` as a model suffering ``mode`` (one of :data:`REPLY_FAULTS`,
    else ``ValueError``); ``schema`` is the request's structured-output schema, if any. A ``runaway`` result
    carries ``repeat``: the caller appends it until its output cap and cuts there."""
    if mode not in REPLY_FAULTS:
        raise ValueError(
            f"Fault mode {mode!r} does not rewrite replies; use one of {', '.join(REPLY_FAULTS)}."
        )
    view = read_prompt(messages)
    try:
        payload: Any = json.loads(text) if text.strip() else None
    except json.JSONDecodeError:
        payload = None
    site = FaultSite.read(view, schema, tools_bound=tools_bound, call_index=call_index)
    draft = inject(Draft(content=text, payload=payload, tool_calls=list(tool_calls)), mode, site)
    return Misbehaviour(text=draft.content, tool_calls=draft.tool_calls, repeat=draft.repeat)
