"""The call-2 answer schema (shared/answer.py): strict where it matters, forgiving on common slips."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from shared.answer import Answer


def test_null_memory_and_state_mean_empty() -> None:
    answer = Answer.model_validate({"respuesta": "Hola", "memoria": None, "estado": None})
    assert (answer.memoria, answer.estado) == ([], {})


def test_importance_slightly_out_of_range_is_clamped() -> None:
    answer = Answer.model_validate(
        {
            "respuesta": "x",
            "memoria": [{"contenido": "a", "importancia": 1.2}, {"contenido": "b", "importancia": -1}],
        }
    )
    assert [item.importancia for item in answer.memoria] == [1.0, 0.0]


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
    item = Answer.model_json_schema()["$defs"]["MemoryItem"]["properties"]["importancia"]
    assert (item["minimum"], item["maximum"]) == (0.0, 1.0)
