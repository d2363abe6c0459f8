"""The JSON schemas of call 1 (Plan) and call 2 (Answer), as the provider receives them.

Call 1 sends :func:`planner_mode.plan_schema.plan_json_schema` of the caller's catalog (pinned here for the
demo's manager); ``Plan.model_json_schema()`` is the unconstrained schema (``PlannerAI(plan_schema="free")``).
"""

from __future__ import annotations

import json
from typing import Any

from inline_snapshot import snapshot

from planner_mode.plan import Answer, Plan
from planner_mode.plan_schema import plan_json_schema
from shared.operations import sales_registry
from shared.security import DEMO_CALLER


def compact(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def pinned(value: Any, path: str = "") -> list[str]:
    """``value`` as ``path = compact JSON`` lines: a subtree on one line when short, else its parts (key
    order kept: a grammar writes the keys in the schema's order)."""
    text = compact(value)
    if len(path) + len(text) <= 96 or not isinstance(value, dict | list) or not value:
        return [f"{path} = {text}"]
    items = value.items() if isinstance(value, dict) else enumerate(value)
    return [line for key, item in items for line in pinned(item, f"{path}.{key}" if path else str(key))]


def sorted_keys(value: Any) -> Any:
    return json.loads(json.dumps(value, sort_keys=True))


def test_the_schemas_sent_to_providers_are_pinned() -> None:
    """What call 1 and call 2 ask the provider for: a silent change (a long docstring becoming the schema's
    description, say) changes every prompt's token count and every benchmark figure."""
    assert "\n".join(pinned(sorted_keys(Plan.model_json_schema()))) == snapshot("""\
$defs.PlannedOperation.additionalProperties = false
$defs.PlannedOperation.description = "Una operación del catálogo."
$defs.PlannedOperation.properties.funcion.description = "Nombre exacto en el catálogo."
$defs.PlannedOperation.properties.funcion.type = "string"
$defs.PlannedOperation.properties.id.description = "Solo si otra operación usa su resultado con $ref."
$defs.PlannedOperation.properties.id.type = "string"
$defs.PlannedOperation.properties.parametros.additionalProperties = true
$defs.PlannedOperation.properties.parametros.description = "Un valor puede ser {\\"$ref\\":\\"op1.campo\\"}."
$defs.PlannedOperation.properties.parametros.type = "object"
$defs.PlannedOperation.required = ["funcion"]
$defs.PlannedOperation.title = "PlannedOperation"
$defs.PlannedOperation.type = "object"
additionalProperties = false
description = "Plan de ejecución para el ERP, no una respuesta."
properties.operaciones.description = "En orden."
properties.operaciones.items = {"$ref":"#/$defs/PlannedOperation"}
properties.operaciones.type = "array"
properties.respuesta_directa.description = "Solo sin operaciones: respuesta breve (saludo, charla, imposible)."
properties.respuesta_directa.type = "string"
title = "Plan"
type = "object"\
""")  # noqa: E501
    assert "\n".join(pinned(sorted_keys(Answer.model_json_schema()))) == snapshot("""\
$defs.MemoryItem.additionalProperties = false
$defs.MemoryItem.description = "Un hecho a recordar, en una frase."
$defs.MemoryItem.properties.contenido = {"maxLength":300,"type":"string"}
$defs.MemoryItem.properties.importancia = {"maximum":1.0,"minimum":0.0,"type":"number"}
$defs.MemoryItem.required = ["contenido","importancia"]
$defs.MemoryItem.title = "MemoryItem"
$defs.MemoryItem.type = "object"
additionalProperties = false
description = "Respuesta al usuario; memoria y estado son opcionales."
properties.estado.additionalProperties = true
properties.estado.description = "Solo las claves del estado de la conversación que cambian."
properties.estado.type = "object"
properties.memoria.description = "Hechos a recordar."
properties.memoria.items = {"$ref":"#/$defs/MemoryItem"}
properties.memoria.maxItems = 5
properties.memoria.type = "array"
properties.respuesta = {"description":"Texto para el usuario, en español.","type":"string"}
required = ["respuesta"]
title = "Answer"
type = "object"\
""")


def test_the_managers_plan_schema_is_pinned() -> None:
    """What call 1 asks the provider for, for the demo's manager: key order included (a grammar writes the
    keys in the schema's order). Each operation is one branch around its parameters, pinned one a line."""
    schema = plan_json_schema(sales_registry().catalog(DEMO_CALLER))
    branches = schema["properties"]["operaciones"]["items"].pop("anyOf")
    parameters: dict[str, Any] = {}
    for branch in branches:
        name = branch["properties"]["funcion"]["enum"][0]
        parameters[name] = branch["properties"]["parametros"]
        envelope = {
            "type": "object",
            "additionalProperties": False,
            "properties": {
                "id": {"$ref": "#/$defs/id"},
                "funcion": {"type": "string", "enum": [name]},
                "parametros": parameters[name],
            },
            "required": ["funcion", "parametros"] if parameters[name].get("required") else ["funcion"],
        }
        assert json.dumps(branch) == json.dumps(envelope)  # the same keys, in the same order
    assert "\n".join(f"{name} = {compact(value)}" for name, value in parameters.items()) == snapshot("""\
ventas_anuales = {"additionalProperties":false,"properties":{"anio":{"$ref":"#/$defs/anio"}},"required":["anio"],"type":"object"}
mejor_cliente = {"additionalProperties":false,"properties":{"anio":{"$ref":"#/$defs/anio"}},"required":["anio"],"type":"object"}
compras_cliente = {"additionalProperties":false,"properties":{"cliente":{"$ref":"#/$defs/cliente"},"anio":{"$ref":"#/$defs/anio"}},"required":["cliente","anio"],"type":"object"}
ventas_mensuales = {"additionalProperties":false,"properties":{"anio":{"$ref":"#/$defs/anio"},"mes":{"anyOf":[{"maximum":12,"minimum":1,"type":"integer"},{"$ref":"#/$defs/ref"}]}},"required":["anio"],"type":"object"}
top_productos = {"additionalProperties":false,"properties":{"anio":{"$ref":"#/$defs/anio"},"limite":{"anyOf":[{"maximum":50,"minimum":1,"type":"integer"},{"$ref":"#/$defs/ref"}]}},"required":["anio"],"type":"object"}
ventas_por_categoria = {"additionalProperties":false,"properties":{"anio":{"$ref":"#/$defs/anio"}},"required":["anio"],"type":"object"}
facturas_pendientes = {"additionalProperties":false,"properties":{"cliente":{"$ref":"#/$defs/cliente"}},"type":"object"}
buscar_cliente = {"additionalProperties":false,"properties":{"texto":{"anyOf":[{"maxLength":120,"minLength":1,"type":"string"},{"$ref":"#/$defs/ref"}]}},"required":["texto"],"type":"object"}\
""")  # noqa: E501
    assert "\n".join(pinned(schema)) == snapshot("""\
title = "Plan"
description = "Plan de ejecución para el ERP, no una respuesta."
type = "object"
additionalProperties = false
properties.respuesta_directa.type = "string"
properties.respuesta_directa.description = "Solo sin operaciones: respuesta breve (saludo, charla, imposible)."
properties.operaciones = {"type":"array","description":"En orden.","items":{},"maxItems":8}
$defs.id = {"type":"string","description":"Solo si otra operación usa su resultado con $ref."}
$defs.ref.type = "object"
$defs.ref.description = "{\\"$ref\\":\\"id.campo\\"}: un campo del resultado de otra operación."
$defs.ref.additionalProperties = {"type":"string"}
$defs.ref.minProperties = 1
$defs.ref.maxProperties = 1
$defs.anio = {"anyOf":[{"maximum":2100,"minimum":2000,"type":"integer"},{"$ref":"#/$defs/ref"}]}
$defs.cliente = {"anyOf":[{"maxLength":120,"minLength":1,"type":"string"},{"$ref":"#/$defs/ref"}]}\
""")  # noqa: E501
