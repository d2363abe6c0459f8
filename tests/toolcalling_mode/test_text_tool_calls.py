"""Tool calls written as text: never an answer; recovered into real tool calls by default, or refused.

The model here writes what Qwen2.5-Coder-1.5B wrote behind llama.cpp's server: its call as a fenced JSON
block, which the server left as text (the ``text_tool_calls`` fault of the offline model reproduces it on the
sales registry).
"""

from __future__ import annotations

import time
from typing import Any

import pytest

from benchmarks.stand_ins.offline import OfflineSalesModel
from shared.bounds import reply_max_chars
from shared.errors import OutputLimitError
from shared.failures import user_message
from shared.security import DEMO_CALLER
from tests.toolcalling_mode.toolcalling_fakes import then_answer
from toolcalling_mode.text_tool_calls import contains_machinery, parse_text_tool_calls

FENCED = '```json\n{\n  "name": "ventas_anuales",\n  "arguments": {\n    "anio": 2025\n  }\n}\n```'

# -- reading ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "calls"),
    [
        (FENCED, [("ventas_anuales", {"anio": 2025})]),
        ('{"name": "ventas_anuales", "arguments": {"anio": 2025}}', [("ventas_anuales", {"anio": 2025})]),
        ('<tool_call>\n{"name": "a", "arguments": {}}\n</tool_call>', [("a", {})]),
        (
            '[{"name": "a", "arguments": {}}, {"name": "b", "parameters": {"x": 1}}]',
            [("a", {}), ("b", {"x": 1})],
        ),
        (
            '```\n{"name": "a", "arguments": "{\\"x\\": 1}"}\n```\n```json\n{"name": "b"}\n```',
            [("a", {"x": 1}), ("b", {})],
        ),
        ('<think>I should call a.</think>{"name": "a", "arguments": {}}', [("a", {})]),
        (
            '{{"name": "facturas_pendientes", "arguments": {"cliente": null}}}',
            [("facturas_pendientes", {"cliente": None})],
        ),
    ],
)
def test_a_reply_that_is_only_tool_calls_written_as_text_is_read(text: str, calls: list[Any]) -> None:
    assert parse_text_tool_calls(text) == calls


@pytest.mark.parametrize(
    "text",
    [
        "Vendimos ₲850.000.000 en 2025.",
        'Claro: {"name": "a", "arguments": {}}',  # prose around it
        '```json\n{"total": 850000000}\n```',  # JSON, but not a call
        '{"name": "Empresa ABC", "total": 120000000}',  # an object with a name is not a call
        '```json\n[{"name": "Empresa ABC"}, {"name": "Comercial Sur"}]\n```',  # names that are data
        '{"name": "a", "arguments": [1, 2]}',
        "",
    ],
)
def test_prose_and_other_json_are_not_tool_calls(text: str) -> None:
    assert parse_text_tool_calls(text) is None


# -- the engine --------------------------------------------------------------------------------------------


def test_a_text_tool_call_is_recovered_runs_and_is_counted(make_engine: Any) -> None:
    engine, _ = make_engine(
        then_answer('```json\n{"name": "ventas_anuales", "arguments": {"anio": 2025}}\n```')
    )

    result = engine.ask("c1", "¿Cuánto vendimos en 2025?", DEMO_CALLER)

    assert (result.failure, result.answer, result.plan_valid) == (None, "Listo.", True)
    assert [(op.function, op.parameters, op.ok) for op in result.operations] == [
        ("ventas_anuales", {"anio": 2025}, True)
    ]
    assert result.recovered_tool_calls == 1
    assert result.model_calls == 2


def test_an_unrecovered_text_tool_call_is_never_an_answer_but_model_output_and_invalid(
    make_engine: Any,
) -> None:
    engine, _ = make_engine(then_answer(FENCED), recover_text_tool_calls=False)

    result = engine.ask("c1", "¿Cuánto vendimos en 2025?", DEMO_CALLER)

    assert (result.failure, result.plan_valid, result.recovered_tool_calls) == ("model_output", False, 0)
    assert result.operations == [] and not result.recorded and result.answer == user_message("model_output")


def test_a_text_call_to_a_tool_not_offered_gets_the_erps_error_as_a_native_call_does(
    make_engine: Any,
) -> None:
    engine, model = make_engine(
        then_answer('```json\n{"name": "borrar_facturas", "arguments": {}}\n```', "No puedo borrar facturas.")
    )

    result = engine.ask("c1", "Borrá todas las facturas.", DEMO_CALLER)

    assert model.calls[1].tool_results[0].text.startswith("La operación 'borrar_facturas' no existe.")
    assert (result.answer, result.failure, result.recovered_tool_calls) == (
        "No puedo borrar facturas.",
        "invalid_plan",
        1,
    )
    assert [(op.function, op.error_kind) for op in result.operations] == [("borrar_facturas", "invalid")]


def test_recovered_arguments_are_validated_as_native_ones_are(make_engine: Any) -> None:
    engine, _ = make_engine(then_answer('{"name": "ventas_anuales", "arguments": {"anio": "dos mil"}}'))

    result = engine.ask("c1", "¿Cuánto vendimos?", DEMO_CALLER)

    assert result.recovered_tool_calls == 1
    assert [op.error_kind for op in result.operations] == ["invalid"]
    assert result.plan_valid is False


async def test_a_streamed_turn_never_shows_the_text_tool_call(demo_engine: Any) -> None:
    model = OfflineSalesModel(faults="text_tool_calls")
    engine = demo_engine(model)
    shown: list[str] = []
    result = None
    async for event in engine.astream("s1", "¿Cuánto vendimos en 2025?", DEMO_CALLER):
        text = getattr(event, "text", None)
        if text:
            shown.append(text)
        result = getattr(event, "result", result)

    assert result is not None and result.failure is None
    assert result.recovered_tool_calls >= 1
    assert [op.function for op in result.operations] == ["ventas_anuales"]
    assert "".join(shown) == result.answer and '"arguments"' not in result.answer


async def test_both_drivers_agree_on_the_offline_fault(demo_engine: Any) -> None:
    engine = demo_engine(OfflineSalesModel(faults="text_tool_calls"))
    sync = engine.ask("d1", "¿Cuánto vendimos en 2025?", DEMO_CALLER)
    off = demo_engine(OfflineSalesModel(faults="text_tool_calls"), recover_text_tool_calls=False)
    refused = await off.aask("d2", "¿Cuánto vendimos en 2025?", DEMO_CALLER)

    assert (sync.failure, sync.plan_valid, sync.recovered_tool_calls) == (None, True, 1)
    assert (refused.failure, refused.plan_valid) == ("model_output", False)


# -- machinery is never an answer ---------------------------------------------------------------------------

DEEP = '{"name": "ventas_anuales", "arguments": ' + '{"a": ' * 50_000 + "1" + "}" * 50_001


@pytest.mark.parametrize(
    "text",
    [
        'Claro. {"name":"ventas_por_categoria","arguments":{"anio":2025}}',  # prose, then a call
        'Aquí está: {"name": "clima_mañana", "arguments": {"ciudad": "Asunción"}} listo',  # not an identifier
        '<tools>{"name": "ventas_anuales", "arguments": {"anio": 2025}}</tools>',
        '{"name": "DELETE FROM invoices", "arguments": {}}',
        '{"products": [{"producto": "Yerba", "total": 1}]}',  # only JSON
        '```json\n[{"total": 850000000}]\n```',
        DEEP,
    ],
    ids=[
        "prose-then-call",
        "non-identifier-name",
        "tools-tags",
        "sql-as-name",
        "json-only",
        "fenced",
        "deep",
    ],
)
def test_call_text_anywhere_or_a_json_only_reply_is_machinery(text: str) -> None:
    assert contains_machinery(text)


@pytest.mark.parametrize(
    "text",
    [
        "Vendimos ₲850.000.000 en 2025.",
        "Los 3 productos más vendidos:\n1. Yerba mate (₲41.092.500)\n2. Aceite de soja",
        "[Nota] El cliente {Empresa ABC} compró ₲120.000.000.",
        "No puedo hacer eso.",
    ],
)
def test_answers_are_not_machinery(text: str) -> None:
    assert not contains_machinery(text)


def test_reading_hostile_text_for_machinery_takes_time_in_proportion_to_it() -> None:
    def cost(n: int) -> float:
        text = '{"name": ' * n
        started = time.process_time()
        contains_machinery(text)
        return time.process_time() - started

    small, large = min(cost(2_000) for _ in range(3)), min(cost(20_000) for _ in range(3))
    assert large < 30 * max(small, 1e-4)


@pytest.mark.parametrize("text", [DEEP, 'Claro. {"name":"ventas_por_categoria","arguments":{"anio":2025}}'])
def test_a_final_answer_holding_call_text_is_model_output_never_shown_or_stored(
    make_engine: Any, text: str
) -> None:
    engine, _ = make_engine(lambda _messages, _info: text)
    result = engine.ask("c1", "¿Cómo se repartieron las ventas?", DEMO_CALLER)
    assert result.failure == "model_output" and not result.recorded
    # DEEP is also longer than a reply may be: refused as such, before its nesting is read
    too_long = len(text) > reply_max_chars(None)
    assert result.answer == user_message("model_output", OutputLimitError(None) if too_long else None)
