"""The call-1 JSON schema for one caller's catalog: every operation named, each tied to its own parameters.

:func:`plan_json_schema` is a pure function of the catalog (``OperationRegistry.catalog(caller)``), so the
in-process planner and the AI server send the same schema. Its shape::

    {"title": "Plan", "type": "object", "additionalProperties": false,
     "properties": {
       "respuesta_directa": {"type": "string"},
       "operaciones": {"type": "array", "maxItems": 8, "items": {"anyOf": [
         {"type": "object", "additionalProperties": false, "required": ["funcion", "parametros"],
          "properties": {"id": {"$ref": "#/$defs/id"},
                         "funcion": {"type": "string", "enum": ["ventas_anuales"]},
                         "parametros": {"type": "object", "additionalProperties": false,
                                        "required": ["anio"],
                                        "properties": {"anio": {"$ref": "#/$defs/anio"}}}}},
         …one branch per operation…]}}},
     "$defs": {"id": …, "ref": {"type": "object", "additionalProperties": {"type": "string"}, …},
               "anio": {"anyOf": [{"type": "integer", "minimum": 2000, "maximum": 2100},
                                  {"$ref": "#/$defs/ref"}]}}}

Why it looks so, provider by provider:

- ``anyOf``, never ``oneOf`` and never at the root (OpenAI refuses a root ``anyOf``; Gemini lists no
  ``oneOf``); ``funcion`` as a one-value ``enum`` (Gemini's subset has no ``const``).
- A ``$ref`` value is "an object of one string" (``$defs.ref``): llama.cpp's converter reads any object with
  a ``"$ref"`` key as a schema reference, so the key cannot be declared;
  :func:`planner_mode.validation.validate_plan` checks the rest.
- Constraints only, no descriptions, in the parameters (the prompt's catalog describes them); optional
  ``X | None`` written as ``X``; a parameter several operations declare alike is written once in ``$defs``.
- ``respuesta_directa`` first: grammars write properties in the schema's order, so a direct answer is the
  first thing call 1 writes and can stream.
- At most :data:`~planner_mode.plan.MAX_PLAN_OPERATIONS` operations; an empty catalog allows none.

``union=False`` gives the plain variant: ``funcion`` an ``enum`` of every name, ``parametros`` any object.
The schema narrows what a model may write; it is not the ERP's check.
"""

from __future__ import annotations

import copy
import json
from collections import Counter
from collections.abc import Sequence
from typing import Any, Final, Literal

from planner_mode.plan import MAX_PLAN_OPERATIONS, Plan, PlannedOperation
from shared.operations.registry import OperationSpec

__all__ = ["CatalogKey", "PlanSchemaStyle", "catalog_key", "plan_json_schema"]

PlanSchemaStyle = Literal["union", "enum", "free", "none"]
"""Which call-1 schema is sent: ``union`` (each operation with its own parameters), ``enum`` (operation names
only), ``free`` (the :class:`~planner_mode.plan.Plan` model's schema, any operation name) or ``none`` (no
structured output is asked for: the reply is the model's text, read by the same parser)."""

CatalogKey = tuple[tuple[str, str], ...]
"""What a plan schema depends on: each operation's name and its parameters' JSON, in catalog order."""

_DEFS_ID: Final = "id"
_DEFS_REF: Final = "ref"
_NOT_CONSTRAINTS: Final = frozenset({"title", "description", "default", "examples"})
"""Keys dropped from parameter schemas: documentation the prompt's catalog already carries."""


def catalog_key(catalog: Sequence[OperationSpec]) -> CatalogKey:
    """A hashable key that changes whenever :func:`plan_json_schema` of ``catalog`` would.

    Two catalogs with the same operation names but different parameters (two ERPs behind one AI server) get
    different keys. Costs tens of microseconds for the demo's eight operations.
    """
    return tuple((spec.name, json.dumps(spec.parameters, ensure_ascii=False)) for spec in catalog)


def plan_json_schema(catalog: Sequence[OperationSpec], *, union: bool = True) -> dict[str, Any]:
    """The JSON schema call 1 must follow for ``catalog``: a new dict on every call (the caller owns it).

    With ``union`` (the default), ``operaciones`` items are an ``anyOf`` with one branch per operation whose
    ``funcion`` is that operation's name and whose ``parametros`` are that operation's parameter schema (each
    value may also be a ``{"$ref": "id.campo"}`` reference). Without it, ``funcion`` is an enum of every
    name and ``parametros`` any object. See the module docstring for why each piece looks as it does.
    """
    definitions: dict[str, Any] = {
        _DEFS_ID: {"type": "string", "description": PlannedOperation.model_fields["id"].description},
    }
    operations: dict[str, Any] = {
        "type": "array",
        "description": Plan.model_fields["operations"].description,
    }
    if not catalog:
        operations.update(items={"type": "object"}, maxItems=0)
    elif union:
        definitions[_DEFS_REF] = {
            "type": "object",
            "description": '{"$ref":"id.campo"}: un campo del resultado de otra operación.',
            "additionalProperties": {"type": "string"},
            "minProperties": 1,
            "maxProperties": 1,
        }
        parameters = [_parameters(spec, definitions) for spec in catalog]
        _share_repeated_parameters(parameters, definitions)
        operations["items"] = {
            "anyOf": [_item([spec.name], params) for spec, params in zip(catalog, parameters, strict=True)]
        }
        operations["maxItems"] = MAX_PLAN_OPERATIONS
    else:
        any_parameters = {
            "type": "object",
            "description": PlannedOperation.model_fields["parameters"].description,
        }
        operations["items"] = _item([spec.name for spec in catalog], any_parameters)
        operations["maxItems"] = MAX_PLAN_OPERATIONS
    schema: dict[str, Any] = {
        "title": "Plan",
        "description": Plan.schema_description,
        "type": "object",
        "additionalProperties": False,
        "properties": {
            # First: a model decoding under the schema's grammar writes the properties in this order, so a
            # direct answer is the first thing it writes and streams to the user as it is written.
            "respuesta_directa": {
                "type": "string",
                "description": Plan.model_fields["direct_answer"].description,
            },
            "operaciones": operations,
        },
    }
    if catalog:
        schema["$defs"] = definitions
    return schema


def _item(names: list[str], parameters: dict[str, Any]) -> dict[str, Any]:
    """An ``operaciones`` item: ``funcion`` among ``names``, with ``parameters``."""
    return {
        "type": "object",
        "additionalProperties": False,
        "properties": {
            "id": {"$ref": f"#/$defs/{_DEFS_ID}"},
            "funcion": {"type": "string", "enum": names},
            "parametros": parameters,
        },
        "required": ["funcion", "parametros"] if parameters.get("required") else ["funcion"],
    }


def _parameters(spec: OperationSpec, definitions: dict[str, Any]) -> dict[str, Any]:
    """``spec.parameters`` reduced to constraints, each parameter also accepting a reference.

    Definitions of nested models (``$defs`` of the parameters schema) move to the plan schema's ``$defs``
    under ``<operation>.<name>`` and their references are rewritten, so two operations' ``Periodo`` models
    cannot collide.
    """
    source = copy.deepcopy(spec.parameters)
    local_defs = source.pop("$defs", None) or {}
    renamed = {f"#/$defs/{name}": f"#/$defs/{spec.name}.{name}" for name in local_defs}
    for name, definition in local_defs.items():
        definitions[f"{spec.name}.{name}"] = _constraints(definition, renamed)
    reduced: dict[str, Any] = _constraints(source, renamed)
    reduced.setdefault("type", "object")
    properties = reduced.get("properties")
    if isinstance(properties, dict):
        reduced["properties"] = {name: _or_reference(prop) for name, prop in properties.items()}
    return reduced


def _share_repeated_parameters(parameters: list[dict[str, Any]], definitions: dict[str, Any]) -> None:
    """A parameter that several operations declare alike (``anio`` in seven of the demo's eight: same name,
    same constraints) is written once, in ``$defs`` under its name, and referenced: the schema grows by one
    short reference per use, not by the parameter's whole schema. A second, different ``anio`` would be
    ``anio.2``."""
    uses = Counter(
        (name, json.dumps(prop, sort_keys=True))
        for params in parameters
        for name, prop in (params.get("properties") or {}).items()
    )
    labels: dict[tuple[str, str], str] = {}
    for params in parameters:
        properties = params.get("properties") or {}
        for name, prop in properties.items():
            key = (name, json.dumps(prop, sort_keys=True))
            if uses[key] < 2:
                continue
            if key not in labels:
                label, suffix = name, 2
                while label in definitions:
                    label, suffix = f"{name}.{suffix}", suffix + 1
                labels[key] = label
                definitions[label] = prop
            properties[name] = {"$ref": f"#/$defs/{labels[key]}"}


def _or_reference(prop: Any) -> Any:
    """A parameter's schema as "this, or a ``$ref`` object" (one flat ``anyOf``)."""
    if not isinstance(prop, dict):
        return prop
    reference = {"$ref": f"#/$defs/{_DEFS_REF}"}
    variants = prop.get("anyOf")
    if isinstance(variants, list) and set(prop) == {"anyOf"}:
        return {"anyOf": [*variants, reference]}
    return {"anyOf": [prop, reference]}


def _constraints(node: Any, renamed: dict[str, str]) -> Any:
    """``node`` without documentation keys, optional ``X | None`` as ``X``, local references renamed."""
    if isinstance(node, list):
        return [_constraints(item, renamed) for item in node]
    if not isinstance(node, dict):
        return node
    optional_null = node.get("default", ...) is None
    result: dict[str, Any] = {}
    for key, value in node.items():
        if key in _NOT_CONSTRAINTS:
            continue
        if key == "properties" and isinstance(value, dict):
            result[key] = {name: _constraints(sub, renamed) for name, sub in value.items()}
        elif key == "$ref" and isinstance(value, str):
            result[key] = renamed.get(value, value)
        else:
            result[key] = _constraints(value, renamed)
    variants = result.get("anyOf")
    if optional_null and isinstance(variants, list):
        kept = [variant for variant in variants if variant != {"type": "null"}]
        if len(kept) == 1 and isinstance(kept[0], dict):
            rest = {key: value for key, value in result.items() if key != "anyOf"}
            return {**kept[0], **rest}
        result["anyOf"] = kept
    return result
