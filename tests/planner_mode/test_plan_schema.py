"""The JSON schemas of call 1 (Plan) and call 2 (Answer), as the provider receives them."""

from __future__ import annotations

import json

from inline_snapshot import snapshot

from planner_mode.plan import Answer, Plan


def test_the_schemas_sent_to_providers_are_pinned() -> None:
    """What call 1 and call 2 ask the provider for: a silent change (a long docstring becoming the schema's
    description, say) changes every prompt's token count and every benchmark figure."""
    assert json.dumps(Plan.model_json_schema(), ensure_ascii=False, indent=1, sort_keys=True) == snapshot(
        """\
{
 "$defs": {
  "PlannedOperation": {
   "additionalProperties": false,
   "description": "Una operación del catálogo.",
   "properties": {
    "funcion": {
     "description": "Nombre exacto en el catálogo.",
     "type": "string"
    },
    "id": {
     "description": "Solo si otra operación usa su resultado con $ref.",
     "type": "string"
    },
    "parametros": {
     "additionalProperties": true,
     "description": "Un valor puede ser {\\"$ref\\": \\"op1.campo\\"}.",
     "type": "object"
    }
   },
   "required": [
    "funcion"
   ],
   "title": "PlannedOperation",
   "type": "object"
  }
 },
 "additionalProperties": false,
 "description": "Plan de ejecución para el ERP, no una respuesta.",
 "properties": {
  "operaciones": {
   "description": "En orden.",
   "items": {
    "$ref": "#/$defs/PlannedOperation"
   },
   "type": "array"
  },
  "respuesta_directa": {
   "description": "Solo sin operaciones: respuesta breve (saludo, charla, imposible).",
   "type": "string"
  }
 },
 "title": "Plan",
 "type": "object"
}\
"""
    )
    assert json.dumps(Answer.model_json_schema(), ensure_ascii=False, indent=1, sort_keys=True) == snapshot(
        """\
{
 "$defs": {
  "MemoryItem": {
   "additionalProperties": false,
   "description": "Un hecho a recordar, en una frase.",
   "properties": {
    "contenido": {
     "type": "string"
    },
    "importancia": {
     "maximum": 1.0,
     "minimum": 0.0,
     "type": "number"
    }
   },
   "required": [
    "contenido",
    "importancia"
   ],
   "title": "MemoryItem",
   "type": "object"
  }
 },
 "additionalProperties": false,
 "description": "Respuesta al usuario; memoria y estado son opcionales.",
 "properties": {
  "estado": {
   "additionalProperties": true,
   "description": "Solo las claves del estado de la conversación que cambian.",
   "type": "object"
  },
  "memoria": {
   "description": "Hechos a recordar.",
   "items": {
    "$ref": "#/$defs/MemoryItem"
   },
   "type": "array"
  },
  "respuesta": {
   "description": "Texto para el usuario, en español.",
   "type": "string"
  }
 },
 "required": [
  "respuesta"
 ],
 "title": "Answer",
 "type": "object"
}\
"""
    )
