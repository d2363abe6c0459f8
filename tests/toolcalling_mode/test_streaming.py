"""AnswerSteps: which text of an agent's model steps is answer text, and where the first answer came from."""

from __future__ import annotations

import json

from langchain_core.messages import AIMessage, AIMessageChunk
from langchain_core.messages.tool import tool_call_chunk

from shared.turn import FirstAnswerCall
from toolcalling_mode._streaming import AnswerSteps


def chunk(text: str, step: str = "run-1", **fields: object) -> AIMessageChunk:
    return AIMessageChunk(content=text, id=step, **fields)  # type: ignore[arg-type]


def test_plain_chunks_of_one_step_are_the_answer_without_the_reasoning() -> None:
    steps = AnswerSteps(None)

    deltas = [steps.feed(chunk(text)) for text in ["<think>", "hmm", "</think>\n", "Vendimos ", "₲850."]]

    assert "".join(deltas) + steps.finish() == "Vendimos ₲850."
    assert steps.first == FirstAnswerCall(call=0, prefix="<think>hmm</think>\n")


def test_a_new_message_id_starts_a_new_step() -> None:
    steps = AnswerSteps(None)
    steps.feed(
        chunk("", "run-1", tool_call_chunks=[tool_call_chunk(name="ventas_anuales", args="{}", index=0)])
    )

    delta = steps.feed(chunk("Listo.", "run-2"))

    assert delta == "Listo."
    assert steps.step == 1
    assert steps.first == FirstAnswerCall(call=1, prefix="")


def test_arguments_of_ordinary_tool_calls_are_never_answer_text() -> None:
    steps = AnswerSteps("respuesta", answer_tools={"Answer"})
    arguments = json.dumps({"respuesta": "no soy la respuesta"})

    delta = steps.feed(chunk("", tool_call_chunks=[tool_call_chunk(name="buscar", args=arguments, index=0)]))

    assert delta == "" and steps.first is None


def test_structured_answers_stream_the_respuesta_field_of_the_json_content() -> None:
    steps = AnswerSteps("respuesta")
    pieces = ['{"respues', 'ta": "Ven', "dimos ", '₲850.", "memoria": ["x"]}']

    text = "".join(steps.feed(chunk(piece)) for piece in pieces)

    assert text == "Vendimos ₲850."
    assert steps.first == FirstAnswerCall(call=0, prefix='{"respuesta": "')


def test_structured_answers_decode_escapes_split_across_chunks_and_skip_objects_without_the_field() -> None:
    steps = AnswerSteps("respuesta")
    pieces = ['<think>{"x": 1}</think>{"tema": "ventas"} ', '{"respuesta": "\\u20b', '2850 \\"neto\\""}']

    text = "".join(steps.feed(chunk(piece)) for piece in pieces)

    assert text == '₲850 "neto"'
    assert steps.first == FirstAnswerCall(
        call=0, prefix='<think>{"x": 1}</think>{"tema": "ventas"} {"respuesta": "'
    )


def test_structured_answers_stream_the_arguments_of_the_answer_tool_followed_by_index() -> None:
    steps = AnswerSteps("respuesta", answer_tools={"Answer"})
    first = chunk(
        "", tool_call_chunks=[tool_call_chunk(name="Answer", args='{"respuesta": "Ven', id="a", index=0)]
    )
    rest = chunk("", tool_call_chunks=[tool_call_chunk(name=None, args='dimos."}', id=None, index=0)])

    assert steps.feed(first) + steps.feed(rest) == "Vendimos."


def test_a_whole_message_is_a_step_of_its_own() -> None:
    steps = AnswerSteps("respuesta", answer_tools={"Answer"})
    answer = AIMessage(content="", tool_calls=[{"name": "Answer", "args": {"respuesta": "Hola."}, "id": "a"}])

    assert steps.feed(AIMessage(content="", id="same")) == ""
    assert steps.feed(answer) == "Hola."
    assert steps.first is not None and steps.first.call == 1


def test_text_held_back_at_the_end_of_a_step_comes_out_when_the_next_step_starts() -> None:
    steps = AnswerSteps(None)
    shown = steps.feed(chunk("a <", "run-1"))

    shown += steps.feed(chunk("b", "run-2"))

    assert shown == "a <\n\nb"  # the step separator sets the steps' texts apart


def test_replay_finds_the_same_first_answer_as_the_stream() -> None:
    messages = [
        AIMessage(content="", tool_calls=[{"name": "ventas_anuales", "args": {"anio": 2025}, "id": "1"}]),
        AIMessage(content="<think>x</think>Vendimos ₲850."),
    ]

    steps = AnswerSteps.replay(None, (), messages)

    assert steps.first == FirstAnswerCall(call=1, prefix="<think>x</think>")
