"""The call-2 answer schema (shared/answer.py): strict where it matters, forgiving on common slips."""

from __future__ import annotations

import pytest
from pydantic import Field, ValidationError

from shared.answer import Answer, MemoryItem, ProviderSchemaModel, bound_memories
from shared.bounds import (
    MAX_MEMORY_CHARS,
    MAX_MEMORY_ITEMS_PER_TURN,
    MAX_STATE_KEYS,
    MAX_STATE_VALUE_CHARS,
    TRUNCATION_MARK,
    json_size,
)


def test_null_memory_and_state_mean_empty_and_an_importance_slightly_out_of_range_is_clamped() -> None:
    answer = Answer.model_validate({"respuesta": "Hola", "memoria": None, "estado": None})
    assert (answer.memories, answer.state) == ([], {})
    answer = Answer.model_validate(
        {
            "respuesta": "x",
            "memoria": [{"contenido": "a", "importancia": 1.2}, {"contenido": "b", "importancia": -1}],
        }
    )
    assert [item.importance for item in answer.memories] == [1.0, 0.0]


@pytest.mark.parametrize(
    "payload",
    [
        {"memoria": []},
        {"respuesta": None},
        {"respuesta": "x", "memoria": [{"contenido": "a", "importancia": "alta"}]},
        {"respuesta": "x", "memoria": [{"importancia": 0.5}]},
    ],
)
def test_what_matters_is_still_required(payload: dict[str, object]) -> None:
    with pytest.raises(ValidationError):
        Answer.model_validate(payload)


def test_the_schema_sent_to_providers_keeps_the_bounds() -> None:
    """A provider decoding under the schema cannot write more memory than the ERP keeps."""
    schema = Answer.model_json_schema()
    item = schema["$defs"]["MemoryItem"]["properties"]
    assert (item["importancia"]["minimum"], item["importancia"]["maximum"]) == (0.0, 1.0)
    assert item["contenido"]["maxLength"] == MAX_MEMORY_CHARS
    assert schema["properties"]["memoria"]["maxItems"] == MAX_MEMORY_ITEMS_PER_TURN


def test_the_schema_sent_to_providers_is_compact_and_asks_for_the_answer_first() -> None:
    """Every schema token is paid on every call: no titles, a short Spanish description, no extra keys;
    ``respuesta`` first and the only required key (memory and state are optional)."""
    schema = Answer.model_json_schema()
    assert list(schema["properties"]) == ["respuesta", "memoria", "estado"]
    assert schema["required"] == ["respuesta"]
    assert schema["additionalProperties"] is False
    assert not any("title" in prop for prop in schema["properties"].values())
    assert schema["description"] == Answer.schema_description
    assert "article" not in str(schema)  # the developer docstring stays out of what the model reads


def test_optional_fields_are_offered_as_their_plain_type() -> None:
    class Example(ProviderSchemaModel):
        schema_description = "Ejemplo."
        schema_omit = ("interno",)

        nota: str | None = Field(default=None, description="Opcional.")
        interno: str = ""

    schema = Example.model_json_schema()
    assert schema["properties"] == {"nota": {"description": "Opcional.", "type": "string"}}
    assert Example.model_validate({"interno": "x"}).interno == "x"  # left out of the schema, still accepted
    assert "interno" in Example.model_json_schema(mode="serialization")["properties"]


# -- size bounds: sanitised, never refused -------------------------------------------------------------------


def test_a_memory_item_repeated_forever_is_stored_once() -> None:
    looping = [{"contenido": "El mejor cliente es Empresa ABC.", "importancia": 0.5}] * 5000
    looping.append({"contenido": "  el mejor CLIENTE es  Empresa ABC. ", "importancia": 0.9})
    answer = Answer.model_validate({"respuesta": "ok", "memoria": looping})
    assert answer.memories == [MemoryItem(contenido="El mejor cliente es Empresa ABC.", importancia=0.9)]


def test_memory_keeps_the_most_important_items_in_their_order() -> None:
    items = [{"contenido": f"hecho {i}", "importancia": i / 10} for i in range(10)]
    answer = Answer.model_validate({"respuesta": "ok", "memoria": items})
    assert len(answer.memories) == MAX_MEMORY_ITEMS_PER_TURN == 5
    assert [item.content for item in answer.memories] == [f"hecho {i}" for i in range(5, 10)]


def test_a_wall_of_text_memory_item_is_clipped_to_one_visible_line() -> None:
    answer = Answer.model_validate(
        {
            "respuesta": "ok",
            "memoria": [
                {"contenido": "bla\n" * 100_000, "importancia": 0.5},
                {"contenido": " ", "importancia": 1},
            ],
        }
    )
    [item] = answer.memories
    assert MAX_MEMORY_CHARS - 5 <= len(item.content) <= MAX_MEMORY_CHARS
    assert item.content.endswith(TRUNCATION_MARK)
    assert "\n" not in item.content


def test_state_keys_and_values_are_bounded() -> None:
    estado: dict[str, object] = {f"clave{i}": "v" * 100_000 for i in range(1000)}
    answer = Answer.model_validate({"respuesta": "ok", "estado": estado})
    assert len(answer.state) == MAX_STATE_KEYS
    assert all(json_size(value) <= MAX_STATE_VALUE_CHARS for value in answer.state.values())
    assert json_size(answer.state) < 20_000


def test_a_normal_answer_is_unchanged_by_the_bounds() -> None:
    payload = {
        "respuesta": "En 2025 vendimos ₲850.000.000.",
        "memoria": [{"contenido": "Hablamos de ventas de 2025.", "importancia": 0.8}],
        "estado": {"tema": "ventas", "anio": 2025, "cliente_actual": None},
    }
    assert Answer.model_validate(payload).model_dump() == payload


def test_bound_memories_is_what_the_answer_applies() -> None:
    items = [MemoryItem(contenido="a", importancia=0.1), MemoryItem(contenido="A", importancia=0.3)]
    assert bound_memories(items) == [MemoryItem(contenido="a", importancia=0.3)]
    assert bound_memories(items, max_items=0) == []
