"""The offline model reads the context wherever the prompt puts it: in the system prompt, or (stable prompts
first, for prefix caching) in the turn's human message before the question."""

from __future__ import annotations

from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage
from langchain_core.tools import StructuredTool

from benchmarks.stand_ins.offline import OfflineSalesModel
from benchmarks.stand_ins.offline._prompt import extract_question, read_prompt
from tests.benchmarks.stand_ins.offline.offline_prompts import context

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
