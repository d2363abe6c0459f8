"""The tolerant parser recovers JSON that models wrap or damage slightly, and rejects the rest clearly."""

from __future__ import annotations

import pytest

from planner_mode.parsing import extract_json_object, message_text, parse_model_output
from planner_mode.plan import Plan
from shared.answer import Answer
from shared.errors import ModelOutputError


@pytest.mark.parametrize(
    "text",
    [
        '{"respuesta": "ok"}',
        '```json\n{"respuesta": "ok"}\n```',
        '```\n{"respuesta": "ok"}\n```',
        'Claro, aquí está:\n{"respuesta": "ok"}\nEspero que sirva.',
        '{"respuesta": "ok",}',
        '```json\n{"respuesta": "ok", "memoria": [],}\n```',
        '  \n{"respuesta": "ok"}  ',
    ],
)
def test_recovers_json_from_common_wrappings(text: str) -> None:
    assert extract_json_object(text)["respuesta"] == "ok"


def test_braces_and_commas_inside_strings_are_left_alone() -> None:
    text = 'Plan: {"respuesta": "a } b, ]", "estado": {"x": "{y},"},}'
    assert extract_json_object(text) == {"respuesta": "a } b, ]", "estado": {"x": "{y},"}}


def test_first_object_wins_when_prose_mentions_several() -> None:
    assert extract_json_object('{"a": 1} y luego {"b": 2}') == {"a": 1}


@pytest.mark.parametrize("text", ["", "   ", "no hay JSON aquí", '{"respuesta": "cortado', "[1, 2, 3]"])
def test_unrecoverable_text_raises_model_output_error_with_the_raw_text(text: str) -> None:
    with pytest.raises(ModelOutputError) as info:
        extract_json_object(text)
    assert info.value.raw == text


def test_schema_mismatch_names_the_field() -> None:
    with pytest.raises(ModelOutputError, match=r"operaciones\.0\.funcion"):
        parse_model_output('{"operaciones": [{"parametros": {}}]}', Plan)


def test_parse_model_output_returns_the_model() -> None:
    answer = parse_model_output('```json\n{"respuesta": "Hola", "estado": {"tema": "x"}}\n```', Answer)
    assert answer == Answer(respuesta="Hola", estado={"tema": "x"})


def test_message_text_joins_content_blocks() -> None:
    assert message_text([{"type": "text", "text": '{"a"'}, ": 1}"]) == '{"a": 1}'
    assert message_text(None) == ""


@pytest.mark.parametrize(
    "text",
    [
        '{"operaciones": ' + "[" * 5_000 + "]" * 5_000 + "}",  # deeper than the interpreter's recursion limit
        '{"anio": ' + "9" * 5_000 + "}",  # past Python's integer digit limit
    ],
    ids=["too-deep", "huge-integer"],
)
def test_json_that_python_refuses_is_a_model_output_error(text: str) -> None:
    with pytest.raises(ModelOutputError, match="not valid JSON"):
        extract_json_object(text)


def test_a_huge_damaged_output_is_rejected() -> None:
    # 400 000 commas and no closing brace, so the trailing-comma repair runs and fails. (The repair is one
    # linear pass; the old one copied the rest of the text at each comma. No timing is asserted here: tests
    # never depend on wall-clock speed.)
    text = '{"operaciones": [' + ", ".join(["1"] * 400_000)
    with pytest.raises(ModelOutputError):
        extract_json_object(text)
