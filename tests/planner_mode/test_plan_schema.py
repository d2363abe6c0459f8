"""The JSON schemas of call 1 (Plan) and call 2 (Answer), as the provider receives them."""
# ruff: noqa: E501  (the snapshots hold the schemas verbatim)

from __future__ import annotations

import json

from inline_snapshot import snapshot

from planner_mode.plan import Answer, Plan


def test_the_schemas_sent_to_providers_are_pinned() -> None:
    """What call 1 and call 2 ask the provider for: a silent change (a long docstring becoming the schema's
    description, say) changes every prompt's token count and every benchmark figure."""
    assert json.dumps(Plan.model_json_schema(), ensure_ascii=False, indent=1, sort_keys=True) == snapshot(
        '{\n "$defs": {\n  "PlannedOperation": {\n   "description": "One operation of a plan: which ERP function to run and with which parameters.",\n   "properties": {\n    "funcion": {\n     "description": "Nombre exacto de una operación del catálogo.",\n     "title": "Funcion",\n     "type": "string"\n    },\n    "id": {\n     "anyOf": [\n      {\n       "type": "string"\n      },\n      {\n       "type": "null"\n      }\n     ],\n     "default": null,\n     "description": "Identificador opcional (\\"op1\\") para que otra operación use su resultado con $ref.",\n     "title": "Id"\n    },\n    "parametros": {\n     "additionalProperties": true,\n     "description": "Parámetros de la operación. Un valor puede ser {\\"$ref\\": \\"op1.campo\\"}.",\n     "title": "Parametros",\n     "type": "object"\n    }\n   },\n   "required": [\n    "funcion"\n   ],\n   "title": "PlannedOperation",\n   "type": "object"\n  }\n },\n "description": "The article\'s call-1 output: an execution plan, never an answer for the user.",\n "properties": {\n  "operaciones": {\n   "description": "Operaciones a ejecutar, en orden.",\n   "items": {\n    "$ref": "#/$defs/PlannedOperation"\n   },\n   "title": "Operaciones",\n   "type": "array"\n  },\n  "pregunta": {\n   "default": "",\n   "description": "La pregunta del usuario.",\n   "title": "Pregunta",\n   "type": "string"\n  },\n  "respuesta_directa": {\n   "anyOf": [\n    {\n     "type": "string"\n    },\n    {\n     "type": "null"\n    }\n   ],\n   "default": null,\n   "description": "Respuesta breve cuando no hace falta ninguna operación (saludos, agradecimientos).",\n   "title": "Respuesta Directa"\n  }\n },\n "title": "Plan",\n "type": "object"\n}'
    )
    assert json.dumps(Answer.model_json_schema(), ensure_ascii=False, indent=1, sort_keys=True) == snapshot(
        '{\n "$defs": {\n  "MemoryItem": {\n   "description": "A fact the model suggests the ERP should remember.",\n   "properties": {\n    "contenido": {\n     "description": "Hecho a recordar, en una frase.",\n     "title": "Contenido",\n     "type": "string"\n    },\n    "importancia": {\n     "description": "Importancia entre 0 y 1.",\n     "maximum": 1.0,\n     "minimum": 0.0,\n     "title": "Importancia",\n     "type": "number"\n    }\n   },\n   "required": [\n    "contenido",\n    "importancia"\n   ],\n   "title": "MemoryItem",\n   "type": "object"\n  }\n },\n "description": "`{\\"respuesta\\": …, \\"memoria\\": [...], \\"estado\\": {...}}` as in the article, section 9.",\n "properties": {\n  "estado": {\n   "additionalProperties": true,\n   "description": "Estado estructurado de la conversación: tema, anio, cliente_actual, etc.",\n   "title": "Estado",\n   "type": "object"\n  },\n  "memoria": {\n   "description": "Memoria sugerida.",\n   "items": {\n    "$ref": "#/$defs/MemoryItem"\n   },\n   "title": "Memoria",\n   "type": "array"\n  },\n  "respuesta": {\n   "description": "Respuesta para el usuario, en español.",\n   "title": "Respuesta",\n   "type": "string"\n  }\n },\n "required": [\n  "respuesta"\n ],\n "title": "Answer",\n "type": "object"\n}'
    )
