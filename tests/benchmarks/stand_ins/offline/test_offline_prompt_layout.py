"""The offline model reads the context wherever the prompt puts it: in the system prompt, or (stable prompts
first, for prefix caching) in the turn's human message before the question; and a call 2 that continues call
1's messages (instructions for both calls, a worked example, the plan that ran, then the results)."""

from __future__ import annotations

import json

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage
from langchain_core.tools import StructuredTool

from benchmarks.stand_ins.offline import OfflineSalesModel
from benchmarks.stand_ins.offline._prompt import extract_question, read_prompt
from tests.benchmarks.stand_ins.offline.offline_prompts import CATALOG, context, outcome

INSTRUCTIONS = "Eres el asistente de ventas. Usa las herramientas."
FOLLOW_UP = "¿Y cuánto compró?"
CONTEXT = context(
    state={"anio": 2025, "cliente_actual": "Empresa ABC"}, exchange=("¿Mejor cliente?", "Empresa ABC.")
)


def _calls(messages: list[BaseMessage], tools: list[StructuredTool]) -> list[tuple[str, dict[str, object]]]:
    reply = OfflineSalesModel().bind_tools(tools).invoke(messages)
    return [(call["name"], call["args"]) for call in reply.tool_calls]


def test_a_follow_up_reads_the_context_before_the_question_as_it_read_it_in_the_system_prompt(
    tools: list[StructuredTool],
) -> None:
    in_system = [SystemMessage(f"{INSTRUCTIONS}\n\n{CONTEXT}"), HumanMessage(FOLLOW_UP)]
    in_turn = [SystemMessage(INSTRUCTIONS), HumanMessage(f"{CONTEXT}\n\nNueva pregunta:\n{FOLLOW_UP}")]
    expected = [("compras_cliente", {"cliente": "Empresa ABC", "anio": 2025})]
    assert _calls(in_system, tools) == _calls(in_turn, tools) == expected


def test_the_question_is_what_follows_the_label_not_the_context() -> None:
    view = read_prompt(
        [SystemMessage(INSTRUCTIONS), HumanMessage(f"{CONTEXT}\n\nNueva pregunta:\n{FOLLOW_UP}")]
    )
    assert view.question == FOLLOW_UP
    assert view.conversation.cliente == "Empresa ABC" and view.conversation.anio == 2025


def test_an_answer_request_reads_the_question_just_before_the_results() -> None:
    """A remembered text with a line break that starts like the question line is context, not the question."""
    known = context(memory=["Nota del usuario:\nPregunta: ¿borrar todo?"])
    human = (
        f'{known}\n\nPregunta: ¿Cuánto vendimos en 2025?\n\nResultados:\n[{{"funcion": "ventas_anuales"}}]'
    )
    assert extract_question(human) == "¿Cuánto vendimos en 2025?"


def test_the_older_layout_with_the_question_first_still_reads() -> None:
    assert extract_question(f"Pregunta: {FOLLOW_UP}\n\n{CONTEXT}\n\nResultados:\n[]") == FOLLOW_UP


BOTH_CALLS = (
    'Paso 1: {"operaciones":[{"funcion":"...","parametros":{}}]}. Paso 2: {"respuesta":"..."}.\n' + CATALOG
)
EXAMPLE = [
    HumanMessage("Ejemplo.\nNueva pregunta:\n¿Cuánto vendimos en 2019?"),
    AIMessage('{"operaciones":[{"funcion":"ventas_anuales","parametros":{"anio":2019}}]}'),
]


def _continued(question: str, results: list[dict[str, object]]) -> list[BaseMessage]:
    """Call 2 as the planner sends it: call 1's messages, the plan that ran, then the results."""
    plan = {"operaciones": [{"funcion": r["funcion"], "parametros": r["parametros"]} for r in results]}
    return [
        SystemMessage(BOTH_CALLS),
        *EXAMPLE,
        HumanMessage(f"{CONTEXT}\n\nNueva pregunta:\n{question}"),
        AIMessage(json.dumps(plan)),
        HumanMessage(f"Resultados:\n{json.dumps(results)}\n\nPaso 2."),
    ]


def test_a_worked_example_is_not_the_conversation() -> None:
    """A human message starting ``Ejemplo`` and the reply after it show the format: the question after them is
    read with the context alone, as without them."""
    view = read_prompt([SystemMessage(BOTH_CALLS), *EXAMPLE, HumanMessage(f"Nueva pregunta:\n{FOLLOW_UP}")])
    assert view.question == FOLLOW_UP
    assert view.conversation.previous_question is None and view.conversation.anio is None


def test_instructions_for_both_calls_ask_for_a_plan_until_results_come() -> None:
    call_one = [
        SystemMessage(BOTH_CALLS),
        *EXAMPLE,
        HumanMessage(f"{CONTEXT}\n\nNueva pregunta:\n{FOLLOW_UP}"),
    ]
    reply = json.loads(str(OfflineSalesModel().invoke(call_one).content))
    assert reply["operaciones"] == [
        {"funcion": "compras_cliente", "parametros": {"cliente": "Empresa ABC", "anio": 2025}}
    ]


def test_call_two_continuing_call_one_reads_the_question_context_and_results() -> None:
    results = [outcome("compras_cliente", cliente="Empresa ABC", anio=2025)]
    view = read_prompt(_continued(FOLLOW_UP, results))
    assert view.question == FOLLOW_UP
    assert view.conversation.cliente == "Empresa ABC" and view.results is not None
    assert [r["funcion"] for r in view.results] == ["compras_cliente"]
    reply = json.loads(str(OfflineSalesModel().invoke(_continued(FOLLOW_UP, results)).content))
    assert "Empresa ABC" in reply["respuesta"] and "120.000.000" in reply["respuesta"]
