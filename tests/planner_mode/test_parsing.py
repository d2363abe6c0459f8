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


# -- reasoning models, stray braces, drafts: the object that validates wins ----------------------------------

PLAN_JSON = (
    '{"operaciones": [{"funcion": "ventas_anuales", "parametros": {"anio": 2025}}], "pregunta": "¿Cuánto?"}'
)


def planned_functions(text: str) -> list[str]:
    return [op.function for op in parse_model_output(text, Plan).operations]


@pytest.mark.parametrize(
    "text",
    [
        f'<think>Primero un borrador: {{"draft": 1}}. Mejor así.</think>\n{PLAN_JSON}',
        f'<think>\nUso {{"operaciones": [{{"funcion": "mejor_cliente"}}]}}? No.\n</think>\n\n{PLAN_JSON}',
        f'<THINK>{{"operaciones": []}}</THINK>```json\n{PLAN_JSON}\n```',
        f'El usuario pregunta {{"draft": 1}} … listo.\n</think>\n{PLAN_JSON}',  # <think> was in the template
    ],
    ids=["think-with-draft", "think-with-a-valid-looking-draft", "think-then-fence", "only-a-closing-tag"],
)
def test_reasoning_blocks_are_dropped_before_looking_for_the_json(text: str) -> None:
    assert planned_functions(text) == ["ventas_anuales"]


def test_an_unclosed_think_at_the_start_is_searched_for_the_answer() -> None:
    assert planned_functions(f"<think>Necesito las ventas de 2025.\n{PLAN_JSON}") == ["ventas_anuales"]


def test_a_plan_written_only_inside_the_reasoning_is_not_an_answer() -> None:
    with pytest.raises(ModelOutputError, match="reasoning"):
        parse_model_output(f"<think>{PLAN_JSON}</think>", Plan)


@pytest.mark.parametrize(
    "text",
    [
        f"Claro {{ aquí va el plan:\n{PLAN_JSON}",
        f"{{\n{PLAN_JSON}",
        f'Ver {{ la pantalla de 27" y\n{PLAN_JSON}',  # an odd quote after the stray brace
        f"{{{{{{ {PLAN_JSON} }}",
        f'{{"draft": 1}} y el plan: {PLAN_JSON}',
        f'```json\n{{"borrador": true}}\n```\n```json\n{PLAN_JSON}\n```',
        f'{{"operaciones": [{{"parametros": 1}}],}} no, mejor {PLAN_JSON[:-1]},}}',  # trailing comma repaired
    ],
    ids=["stray-brace", "stray-brace-line", "odd-quote", "several-stray", "draft", "two-fences", "repair"],
)
def test_stray_braces_and_drafts_do_not_hide_the_object_that_validates(text: str) -> None:
    assert planned_functions(text) == ["ventas_anuales"]


def test_when_nothing_validates_the_error_is_the_closest_candidates_schema_error() -> None:
    text = '{"draft": 1} luego {"operaciones": [{"parametros": {}}]} y {"foo": "bar"}'
    with pytest.raises(
        ModelOutputError, match=r"Plan schema: operaciones\.0\.funcion: Field required"
    ) as info:
        parse_model_output(text, Plan)
    assert info.value.raw == text


@pytest.mark.parametrize(
    "value", ["NaN", "Infinity", "-Infinity", "1e999", "-1e999"], ids=lambda v: v.lstrip("-")
)
def test_non_finite_numbers_are_rejected(value: str) -> None:
    text = f'{{"respuesta": "ok", "estado": {{"total": {value}}}}}'
    with pytest.raises(ModelOutputError, match=r"not valid JSON.*(NaN|Infinity|finite)"):
        parse_model_output(text, Answer)
    with pytest.raises(ModelOutputError):
        extract_json_object(text)


@pytest.mark.parametrize("escape", ["\\ud800", "\\udc00", "\\ude00\\ud83d"])
def test_a_lone_surrogate_escape_is_rejected(escape: str) -> None:
    with pytest.raises(ModelOutputError, match="surrogate"):
        parse_model_output(f'{{"respuesta": "hola {escape}"}}', Answer)


def test_a_surrogate_pair_is_a_normal_character() -> None:
    assert parse_model_output('{"respuesta": "ok \\ud83d\\ude00"}', Answer).text == "ok 😀"


@pytest.mark.parametrize(
    "text",
    [
        "{" * 200_000 + '{"respuesta": "ok"}',
        "{x" * 100_000 + '{"respuesta": "ok"}' + "}" * 100_000,
        '{"a": {' * 30_000 + '{"respuesta": "ok"}',
        '{"' * 100_000 + '{"respuesta": "ok"}',
        "<think>" * 50_000 + '{"respuesta": "ok"}',
        "</think>{" * 50_000 + '{"respuesta": "ok"}',
    ],
    ids=[
        "many-stray",
        "nested-junk",
        "unclosed-objects",
        "stray-quotes",
        "many-think-tags",
        "many-closing-tags",
    ],
)
def test_large_adversarial_outputs_still_find_the_answer(text: str) -> None:
    # Bounded work per character (no timing asserted): a quadratic search would make this test crawl.
    assert parse_model_output(text, Answer).text == "ok"


@pytest.mark.parametrize(
    "text",
    [
        '{"a": ' * 100_000,
        '{"a":[' * 50_000 + "]}" * 50_000,
        '{"x": [1,],' * 20_000 + '{"respuesta": "ok"}' + "}" * 20_000,
        '{"a": 1} ' * 20_000,
        '```json\n{"a": 1,}\n```\n' * 5_000,
    ],
    ids=["unclosed", "deep", "nested-repairs", "many-drafts", "many-fences"],
)
def test_pathological_outputs_end_in_a_model_output_error(text: str) -> None:
    # The search stops after a work budget proportional to the text (see ``parsing``), so a reply built to
    # make it quadratic gets a clear error instead of an endless parse.
    with pytest.raises(ModelOutputError):
        parse_model_output(text, Answer)


def test_a_broken_reply_reports_the_json_error_not_only_its_inner_objects() -> None:
    # A missing colon breaks the plan; its inner operation object still parses, but is not a plan.
    text = '{"operaciones" [{"funcion": "ventas_anuales", "parametros": {"anio": 2025}}], "pregunta": "x"}'
    with pytest.raises(
        ModelOutputError, match=r"not valid JSON \(Expecting ':' delimiter at line 1 column 16\)"
    ):
        parse_model_output(text, Plan)


def test_the_json_error_says_where() -> None:
    with pytest.raises(
        ModelOutputError, match=r"not valid JSON \(Expecting ',' delimiter at line 2 column 1\)"
    ):
        extract_json_object('{"respuesta": "a"\n"memoria": []}')
