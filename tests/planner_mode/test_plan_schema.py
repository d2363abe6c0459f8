"""The JSON schemas of call 1 (Plan) and call 2 (Answer), as the provider receives them.

Call 1 sends :func:`planner_mode.plan_schema.plan_json_schema` of the caller's catalog (pinned here for the
demo's manager); ``Plan.model_json_schema()`` is the unconstrained schema (``PlannerAI(plan_schema="free")``).
"""

from __future__ import annotations

import json

from inline_snapshot import snapshot

from planner_mode.plan import Answer, Plan
from planner_mode.plan_schema import plan_json_schema
from shared.operations import sales_registry
from shared.security import DEMO_CALLER


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
     "description": "Un valor puede ser {\\"$ref\\":\\"op1.campo\\"}.",
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
     "maxLength": 300,
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
   "maxItems": 5,
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


def test_the_managers_plan_schema_is_pinned() -> None:
    """What call 1 asks the provider for, for the demo's manager: key order included (a grammar writes the
    keys in the schema's order)."""
    schema = plan_json_schema(sales_registry().catalog(DEMO_CALLER))
    assert json.dumps(schema, ensure_ascii=False, indent=1) == snapshot("""\
{
 "title": "Plan",
 "description": "Plan de ejecución para el ERP, no una respuesta.",
 "type": "object",
 "additionalProperties": false,
 "properties": {
  "respuesta_directa": {
   "type": "string",
   "description": "Solo sin operaciones: respuesta breve (saludo, charla, imposible)."
  },
  "operaciones": {
   "type": "array",
   "description": "En orden.",
   "items": {
    "anyOf": [
     {
      "type": "object",
      "additionalProperties": false,
      "properties": {
       "id": {
        "$ref": "#/$defs/id"
       },
       "funcion": {
        "type": "string",
        "enum": [
         "ventas_anuales"
        ]
       },
       "parametros": {
        "additionalProperties": false,
        "properties": {
         "anio": {
          "$ref": "#/$defs/anio"
         }
        },
        "required": [
         "anio"
        ],
        "type": "object"
       }
      },
      "required": [
       "funcion",
       "parametros"
      ]
     },
     {
      "type": "object",
      "additionalProperties": false,
      "properties": {
       "id": {
        "$ref": "#/$defs/id"
       },
       "funcion": {
        "type": "string",
        "enum": [
         "mejor_cliente"
        ]
       },
       "parametros": {
        "additionalProperties": false,
        "properties": {
         "anio": {
          "$ref": "#/$defs/anio"
         }
        },
        "required": [
         "anio"
        ],
        "type": "object"
       }
      },
      "required": [
       "funcion",
       "parametros"
      ]
     },
     {
      "type": "object",
      "additionalProperties": false,
      "properties": {
       "id": {
        "$ref": "#/$defs/id"
       },
       "funcion": {
        "type": "string",
        "enum": [
         "compras_cliente"
        ]
       },
       "parametros": {
        "additionalProperties": false,
        "properties": {
         "cliente": {
          "$ref": "#/$defs/cliente"
         },
         "anio": {
          "$ref": "#/$defs/anio"
         }
        },
        "required": [
         "cliente",
         "anio"
        ],
        "type": "object"
       }
      },
      "required": [
       "funcion",
       "parametros"
      ]
     },
     {
      "type": "object",
      "additionalProperties": false,
      "properties": {
       "id": {
        "$ref": "#/$defs/id"
       },
       "funcion": {
        "type": "string",
        "enum": [
         "ventas_mensuales"
        ]
       },
       "parametros": {
        "additionalProperties": false,
        "properties": {
         "anio": {
          "$ref": "#/$defs/anio"
         },
         "mes": {
          "anyOf": [
           {
            "maximum": 12,
            "minimum": 1,
            "type": "integer"
           },
           {
            "$ref": "#/$defs/ref"
           }
          ]
         }
        },
        "required": [
         "anio"
        ],
        "type": "object"
       }
      },
      "required": [
       "funcion",
       "parametros"
      ]
     },
     {
      "type": "object",
      "additionalProperties": false,
      "properties": {
       "id": {
        "$ref": "#/$defs/id"
       },
       "funcion": {
        "type": "string",
        "enum": [
         "top_productos"
        ]
       },
       "parametros": {
        "additionalProperties": false,
        "properties": {
         "anio": {
          "$ref": "#/$defs/anio"
         },
         "limite": {
          "anyOf": [
           {
            "maximum": 50,
            "minimum": 1,
            "type": "integer"
           },
           {
            "$ref": "#/$defs/ref"
           }
          ]
         }
        },
        "required": [
         "anio"
        ],
        "type": "object"
       }
      },
      "required": [
       "funcion",
       "parametros"
      ]
     },
     {
      "type": "object",
      "additionalProperties": false,
      "properties": {
       "id": {
        "$ref": "#/$defs/id"
       },
       "funcion": {
        "type": "string",
        "enum": [
         "ventas_por_categoria"
        ]
       },
       "parametros": {
        "additionalProperties": false,
        "properties": {
         "anio": {
          "$ref": "#/$defs/anio"
         }
        },
        "required": [
         "anio"
        ],
        "type": "object"
       }
      },
      "required": [
       "funcion",
       "parametros"
      ]
     },
     {
      "type": "object",
      "additionalProperties": false,
      "properties": {
       "id": {
        "$ref": "#/$defs/id"
       },
       "funcion": {
        "type": "string",
        "enum": [
         "facturas_pendientes"
        ]
       },
       "parametros": {
        "additionalProperties": false,
        "properties": {
         "cliente": {
          "$ref": "#/$defs/cliente"
         }
        },
        "type": "object"
       }
      },
      "required": [
       "funcion"
      ]
     },
     {
      "type": "object",
      "additionalProperties": false,
      "properties": {
       "id": {
        "$ref": "#/$defs/id"
       },
       "funcion": {
        "type": "string",
        "enum": [
         "buscar_cliente"
        ]
       },
       "parametros": {
        "additionalProperties": false,
        "properties": {
         "texto": {
          "anyOf": [
           {
            "maxLength": 120,
            "minLength": 1,
            "type": "string"
           },
           {
            "$ref": "#/$defs/ref"
           }
          ]
         }
        },
        "required": [
         "texto"
        ],
        "type": "object"
       }
      },
      "required": [
       "funcion",
       "parametros"
      ]
     }
    ]
   },
   "maxItems": 8
  }
 },
 "$defs": {
  "id": {
   "type": "string",
   "description": "Solo si otra operación usa su resultado con $ref."
  },
  "ref": {
   "type": "object",
   "description": "{\\"$ref\\":\\"id.campo\\"}: un campo del resultado de otra operación.",
   "additionalProperties": {
    "type": "string"
   },
   "minProperties": 1,
   "maxProperties": 1
  },
  "anio": {
   "anyOf": [
    {
     "maximum": 2100,
     "minimum": 2000,
     "type": "integer"
    },
    {
     "$ref": "#/$defs/ref"
    }
   ]
  },
  "cliente": {
   "anyOf": [
    {
     "maxLength": 120,
     "minLength": 1,
     "type": "string"
    },
    {
     "$ref": "#/$defs/ref"
    }
   ]
  }
 }
}\
""")
