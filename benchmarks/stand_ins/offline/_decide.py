"""What the offline model replies to one call: a plan, an answer, tool calls or text, as a :class:`Draft`.

The call's keyword arguments say what is asked (:class:`Request`), the prompt says the rest. Operations come
only from the catalog the prompt offers or the tools bound; unknown tools get generic calls.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from langchain_core.utils.function_calling import convert_to_json_schema, convert_to_openai_tool

from benchmarks.stand_ins.offline._answers import Executed, compose_answer, describe
from benchmarks.stand_ins.offline._faults import Draft, catalog_names, declared_operations, prompt_kind
from benchmarks.stand_ins.offline._figures import read_figures
from benchmarks.stand_ins.offline._prompt import PromptView, TurnCall
from benchmarks.stand_ins.offline._schema import (
    ToolSpec,
    alternatives,
    arguments,
    conform,
    enum_values,
    explicit_call,
    fill,
    mentions,
    named_tool,
    properties,
    resolve,
    schema_kind,
)
from benchmarks.stand_ins.offline._understand import KNOWN_OPERATIONS, YEAR_OPERATIONS, Step, understand


@dataclass
class Request:
    """What the caller asked for, from the call's keyword arguments."""

    tools: list[ToolSpec] = field(default_factory=list)
    tool_choice: str | None = None
    schema: dict[str, Any] | None = None
    json_mode: bool = False


def _normalise_tool_choice(choice: Any) -> str | None:
    if choice is None or choice is False:
        return None
    if choice is True or choice in ("any", "required"):
        return "required"
    if isinstance(choice, dict):
        name = (choice.get("function") or {}).get("name") or choice.get("name")
        return str(name) if name else "required"
    return str(choice)


def _schema_from_format(value: Any) -> tuple[dict[str, Any] | None, bool]:
    """``(schema, json_mode)`` from an OpenAI ``response_format`` or an Ollama ``format`` value."""
    if value is None or value == "":
        return None, False
    if value == "json":
        return None, True
    if isinstance(value, type):
        return convert_to_json_schema(value), False
    if isinstance(value, dict):
        if value.get("type") == "json_object":
            return None, True
        if value.get("type") == "json_schema":
            inner = value.get("json_schema") or {}
            schema = inner.get("schema") if isinstance(inner, dict) else None
            return (schema if isinstance(schema, dict) else None), schema is None
        return value, False
    return None, False


def read_request(kwargs: dict[str, Any]) -> Request:
    request = Request(tool_choice=_normalise_tool_choice(kwargs.get("tool_choice")))
    for tool in kwargs.get("tools") or []:
        function = convert_to_openai_tool(tool)["function"]
        parameters = function.get("parameters") or {"type": "object", "properties": {}}
        request.tools.append(ToolSpec(name=function["name"], parameters=parameters))
    for key in ("response_format", "format"):
        schema, json_mode = _schema_from_format(kwargs.get(key))
        if schema is not None or json_mode:
            request.schema, request.json_mode = schema, json_mode
            break
    return request


def decide(view: PromptView, request: Request) -> Draft:
    if request.tools and request.tool_choice != "none":
        return _tool_step(view, request)
    kind = schema_kind(request.schema) if request.schema is not None else prompt_kind(view)
    compact = view.compact_json
    payload = _payload(view, kind, request.schema)
    if payload is not None:
        return Draft.json(payload, compact=compact)
    if request.schema is not None:
        return Draft.json(fill(request.schema, request.schema), compact=compact)
    if request.json_mode:
        keys = re.findall(r"['\"](\w+)['\"]", view.human)
        if keys:
            return Draft.json({key: f"(offline) {key}" for key in dict.fromkeys(keys)}, compact=compact)
        return Draft.json({"respuesta": _plain_reply(view)}, compact=compact)
    return Draft(content=_plain_reply(view))


def _payload(view: PromptView, kind: str | None, schema: dict[str, Any] | None) -> Any:
    """The plan or answer a ``kind`` of request gets, conformed to its schema; ``None`` for other kinds."""
    if kind not in ("plan", "answer"):
        return None
    payload = _plan(view, schema) if kind == "plan" else _answer(view)
    return conform(payload, schema, schema) if schema else payload


def _plan(view: PromptView, schema: dict[str, Any] | None) -> dict[str, Any]:
    available = set(catalog_names(view))  # the question cannot add an operation
    named = _schema_operations(schema)
    if named is not None:  # a schema that names the operations (the planner's enum) narrows the catalog
        available &= named
    declared = declared_operations(view)
    takes_year = (
        {n for n, p in declared.items() if re.search(r"\banio\b", p)} if declared else YEAR_OPERATIONS
    )
    understanding = understand(view.question, view.conversation, available, takes_year)
    with_ids = "$ref" in view.all_text or _items_have_id(schema)
    steps = [s for s in understanding.steps if with_ids or s.needs is None]
    referenced = {s.needs for s in steps if s.needs is not None}
    # An ``id`` only on a step another step references: a model writes no more than the plan needs.
    operations = [
        ({"id": s.key} if s.key in referenced else {}) | {"funcion": s.funcion, "parametros": s.parametros}
        for s in steps
    ]
    direct = not operations and (
        "respuesta_directa" in view.all_text or mentions(schema, "respuesta_directa")
    )
    plan: dict[str, Any] = {}
    if not direct or not _direct_answer_alone(view, schema):
        plan["operaciones"] = operations
    if mentions(schema, "pregunta"):  # the article's key, written only when the schema asks for it
        plan["pregunta"] = view.question
    if direct:
        plan["respuesta_directa"] = understanding.reply or "¿En qué puedo ayudarte con las ventas?"
    if schema is None:  # no schema to follow (it would order the keys): the order the prompt names them in
        plan = dict(sorted(plan.items(), key=lambda item: _first_mention(view.system, item[0])))
    return plan


_DIRECT_ALONE = re.compile(r'\{\s*"respuesta_directa"\s*:')


def _direct_answer_alone(view: PromptView, schema: dict[str, Any] | None) -> bool:
    """Whether a direct answer is written without ``"operaciones": []``: the prompt shows one alone and the
    schema, if any, does not require ``operaciones``."""
    required = resolve(schema, schema).get("required") if schema else None
    if isinstance(required, list) and "operaciones" in required:
        return False
    return _DIRECT_ALONE.search(view.all_text) is not None


def _first_mention(text: str, key: str) -> int:
    """Where ``text`` first names the quoted ``key`` (after every named key when it does not)."""
    found = text.find(f'"{key}"')
    return found if found >= 0 else len(text)


def _operation_items(schema: dict[str, Any] | None) -> list[dict[str, Any]]:
    """The schemas a plan's operation may follow (one per branch of a union of ``operaciones`` items)."""
    if not schema:
        return []
    operations = resolve(properties(schema).get("operaciones") or {}, schema)
    items = operations.get("items")
    return alternatives(items, schema) if isinstance(items, dict) else []


def _items_have_id(schema: dict[str, Any] | None) -> bool:
    return any("id" in (item.get("properties") or {}) for item in _operation_items(schema))


def _schema_operations(schema: dict[str, Any] | None) -> set[str] | None:
    """The operation names a plan schema allows in ``funcion``, or ``None`` when it allows any string."""
    items = _operation_items(schema)
    if not items or schema is None:
        return None
    if (resolve(properties(schema).get("operaciones") or {}, schema)).get("maxItems") == 0:
        return set()
    names: set[str] = set()
    for item in items:
        funcion = (item.get("properties") or {}).get("funcion")
        values = enum_values(funcion, schema) if isinstance(funcion, dict) else None
        if values is None:
            return None
        names.update(str(value) for value in values)
    return names


def _answer(view: PromptView) -> dict[str, Any]:
    items = [
        Executed(
            funcion=str(r.get("funcion", "")),
            parametros=dict(r["parametros"]) if isinstance(r.get("parametros"), dict) else {},
            resultado=r.get("resultado"),
            error=None if r.get("error") is None else str(r["error"]),
        )
        for r in view.results or []
    ]
    fallback = None
    if not items:
        fallback = understand(view.question, view.conversation, frozenset(KNOWN_OPERATIONS)).reply or None
    return compose_answer(items, view.conversation, fallback)


def _plain_reply(view: PromptView) -> str:
    if view.results:
        return str(_answer(view)["respuesta"])
    understanding = understand(view.question, view.conversation, frozenset(KNOWN_OPERATIONS))
    if understanding.kind == "operations":
        return (
            "Para responder necesito consultar el ERP, y en esta llamada no tengo herramientas ni "
            "resultados: pregúntame a través del asistente de ventas."
        )
    return understanding.reply


def _tool_step(view: PromptView, request: Request) -> Draft:
    specs = request.tools
    answer_tool = next((t for t in specs if schema_kind(t.parameters) == "answer"), None)
    data_tools = [t for t in specs if t is not answer_tool]
    sales = {t.name for t in data_tools if t.name in KNOWN_OPERATIONS}
    generic = [t for t in data_tools if t.name not in KNOWN_OPERATIONS]
    by_name = {t.name: t for t in specs}
    choice = request.tool_choice
    data_calls = [c for c in view.turn_calls if answer_tool is None or c.name != answer_tool.name]

    forced = by_name.get(choice) if choice not in (None, "auto", "required") else None
    if forced is not None and (forced is not answer_tool or not data_tools):
        return _forced_call(view, forced)
    if answer_tool is not None and view.results is not None:
        return _final(view, request, answer_tool, _answer(view))

    takes_year = {t.name for t in data_tools if "anio" in t.property_names}
    understanding = understand(view.question, view.conversation, sales, takes_year)
    if understanding.kind == "operations":
        issued = _match_calls(list(understanding.steps), data_calls)
        batch = _next_batch(list(understanding.steps), issued)
        if batch:
            return Draft(tool_calls=[(s.funcion, _fit(s.parametros, by_name[s.funcion])) for s in batch])
        items = [_executed(issued[s.key]) for s in understanding.steps if s.key in issued]
        return _final(
            view, request, answer_tool, compose_answer(items, view.conversation, understanding.reply or None)
        )

    if not data_calls:
        found = explicit_call(view.question, generic)
        if found is None:
            spec = named_tool(view.question, generic)
            if spec is None and choice == "required" and answer_tool is None and data_tools:
                spec = data_tools[0]
            found = (spec, arguments(spec, view.question)) if spec else None
        if found is not None:
            return Draft(tool_calls=[(found[0].name, found[1])])
        return _final(view, request, answer_tool, compose_answer([], view.conversation, understanding.reply))
    text = " ".join(
        describe(_executed(c)) if c.name in KNOWN_OPERATIONS else f"Resultado de {c.name}: {c.result}"
        for c in data_calls
    )
    return _final(view, request, answer_tool, {"respuesta": text, "memoria": [], "estado": {}})


def _forced_call(view: PromptView, spec: ToolSpec) -> Draft:
    payload = _payload(view, schema_kind(spec.parameters), spec.parameters)
    if payload is not None:
        return Draft(tool_calls=[(spec.name, payload)])
    if spec.name in KNOWN_OPERATIONS:
        takes_year = {spec.name} if "anio" in spec.property_names else set()
        understanding = understand(view.question, view.conversation, {spec.name}, takes_year)
        for step in understanding.steps:
            if step.funcion == spec.name and step.needs is None:
                return Draft(tool_calls=[(spec.name, _fit(step.parametros, spec))])
    found = explicit_call(view.question, [spec])
    args = found[1] if found else arguments(spec, view.question, all_properties=True)
    return Draft(tool_calls=[(spec.name, args)])


def _final(
    view: PromptView, request: Request, answer_tool: ToolSpec | None, payload: dict[str, Any]
) -> Draft:
    """The turn's answer: a call to the answer tool, JSON, or the plain ``respuesta`` text."""
    compact = view.compact_json
    if answer_tool is not None:
        return Draft(
            tool_calls=[(answer_tool.name, conform(payload, answer_tool.parameters, answer_tool.parameters))]
        )
    if request.schema is not None:
        if schema_kind(request.schema) == "answer":
            return Draft.json(conform(payload, request.schema, request.schema), compact=compact)
        return Draft.json(fill(request.schema, request.schema), compact=compact)
    if request.json_mode:
        return Draft.json(payload, compact=compact)
    return Draft(content=str(payload["respuesta"]))


def _fit(params: dict[str, Any], spec: ToolSpec) -> dict[str, Any]:
    """Keep only the parameters the tool declares (all of them when it declares none)."""
    names = spec.property_names
    return {k: v for k, v in params.items() if not names or k in names}


def _match_calls(steps: list[Step], calls: list[TurnCall]) -> dict[str, TurnCall]:
    """Which step each call of this turn carried out: by name first, then unmatched calls in order."""
    issued: dict[str, TurnCall] = {}
    unused = list(calls)
    for step in steps:
        for call in unused:
            if call.name == step.funcion:
                issued[step.key] = call
                unused.remove(call)
                break
    for step in steps:
        if step.key not in issued and unused:
            issued[step.key] = unused.pop(0)
    return issued


def _next_batch(steps: list[Step], issued: dict[str, TurnCall]) -> list[Step]:
    """Steps not yet called whose inputs are ready; a step whose dependency failed is dropped."""
    batch: list[Step] = []
    for step in steps:
        if step.key in issued:
            continue
        if step.needs is None:
            batch.append(step)
            continue
        dependency = issued.get(step.needs)
        if dependency is None or dependency.result is None or dependency.is_error:
            continue
        value = _result_field(dependency.result, "cliente")
        if value is None:
            continue
        params = {
            k: (value if isinstance(v, dict) and "$ref" in v else v) for k, v in step.parametros.items()
        }
        batch.append(Step(key=step.key, funcion=step.funcion, parametros=params))
    return batch


def _result_field(result: str, key: str) -> Any:
    try:
        data = read_figures(json.loads(result))
    except json.JSONDecodeError:
        return None
    return data.get(key) if isinstance(data, dict) else None


def _executed(call: TurnCall) -> Executed:
    if call.is_error or call.result is None:
        return Executed(call.name, call.args, error=call.result or "sin respuesta de la herramienta")
    try:
        result: Any = read_figures(json.loads(call.result))
    except json.JSONDecodeError:
        result = call.result
    return Executed(call.name, call.args, resultado=result)
