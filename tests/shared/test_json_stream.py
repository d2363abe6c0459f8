"""AnswerTextStream: the answer's text decoded from a streamed reply, wherever the chunks split it."""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterable

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from shared.json_stream import AnswerTextStream
from shared.text import strip_reasoning


def chunks_of(text: str, size: int) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)] or [""]


def stream(raw: Iterable[str], json_field: str | None = "respuesta") -> AnswerTextStream:
    """``raw`` fed chunk by chunk, then finished."""
    decoder = AnswerTextStream(json_field)
    deltas = [decoder.feed(chunk) for chunk in raw]
    deltas.append(decoder.finish())
    assert "".join(deltas) == decoder.text  # feed returns exactly what it added
    return decoder


def every_split(raw: str, json_field: str | None = "respuesta") -> set[str]:
    """The text decoded from ``raw`` cut in two at every position, and in chunks of 1, 2 and 3."""
    texts = {stream([raw[:cut], raw[cut:]], json_field).text for cut in range(len(raw) + 1)}
    texts |= {stream(chunks_of(raw, size), json_field).text for size in (1, 2, 3)}
    return texts


# -- the respuesta field ------------------------------------------------------------------------------------


def test_the_answer_arrives_in_deltas_as_the_json_streams() -> None:
    decoder = AnswerTextStream()
    assert decoder.feed('{"respuesta": "Vendimos ') == "Vendimos "
    assert decoder.feed("₲850.000.000") == "₲850.000.000"
    assert decoder.feed(' en 2025.", "memoria": [{"contenido": "x"}], ') == " en 2025."
    assert decoder.complete
    assert decoder.feed('"estado": {"respuesta": "no"}}') == ""
    assert decoder.text == "Vendimos ₲850.000.000 en 2025."


def test_escapes_are_decoded_like_json_loads_wherever_the_chunks_split_them() -> None:
    doc = json.dumps({"respuesta": 'a\nb"c\\d/e\tñ é 😀 \u2028 fin'}, ensure_ascii=True)
    doc = doc.replace("/", "\\/")  # an escaped solidus, which json.dumps never writes
    assert "\\ud83d\\ude00" in doc and "\\u00f1" in doc
    assert every_split(doc) == {json.loads(doc)["respuesta"]}


def test_a_lone_high_surrogate_stays_alone_like_json_loads() -> None:
    doc = '{"respuesta": "x\\ud83d\\u00e9\\ud83dy\\ud83d"}'
    assert every_split(doc) == {json.loads(doc)["respuesta"]}


def test_respuesta_need_not_be_the_first_key() -> None:
    doc = json.dumps({"estado": {"tema": "ventas"}, "memoria": [1, 2.5, None, True], "respuesta": "Hola"})
    assert every_split(doc) == {"Hola"}


def test_respuesta_nested_or_quoted_inside_another_value_never_matches() -> None:
    doc = json.dumps(
        {
            "memoria": [{"respuesta": "no"}, ["respuesta", {"respuesta": "no"}]],
            "nota": '"respuesta": "tampoco"',
            "estado": {"respuesta": "no", "x": {"y": '{"respuesta": "no"}'}},
            "respuesta": "sí",
        }
    )
    assert every_split(doc) == {"sí"}


def test_text_and_reasoning_before_the_json_are_skipped() -> None:
    raw = (
        '<think>Borrador: {"respuesta": "no"} y una llave { suelta</think>\n'
        'Aquí va {la respuesta} en JSON:\n```json\n{"respuesta": "Hola"}\n```'
    )
    assert every_split(raw) == {"Hola"}


def test_reasoning_tags_match_in_any_case_and_as_thinking() -> None:
    raw = '<THINKING>{"respuesta": "no"}</Thinking>{"respuesta": "sí"}'
    assert every_split(raw) == {"sí"}


def test_an_object_without_the_field_is_skipped_for_the_next_one() -> None:
    raw = '{"borrador": true} {} {"a": [1, {"b": "}"}]} {"respuesta": "Hola", "memoria": []}'
    assert every_split(raw) == {"Hola"}


def test_a_field_that_is_not_a_string_gives_no_text() -> None:
    assert stream(['{"respuesta": null, "memoria": []}']).text == ""
    assert stream(['{"respuesta": {"texto": "no"}}']).text == ""


def test_another_field_name_and_an_escaped_key() -> None:
    raw = '{"operaciones": [], "respuesta_directa": "¡Hola!"}'
    assert every_split(raw, "respuesta_directa") == {"¡Hola!"}
    assert every_split('{"respuest\\u0061": "sí"}') == {"sí"}
    assert every_split('{"respuesta_directa": "no", "respuesta": "sí"}') == {"sí"}


def test_prefix_chars_counts_the_raw_output_before_the_first_answer_character() -> None:
    raw = '<think>pienso</think>{"memoria": [], "respuesta": "\\u00a1Hola!"}'
    for size in (1, 4, len(raw)):
        decoder = stream(chunks_of(raw, size))
        assert decoder.prefix_chars == raw.index("\\u00a1")
        assert decoder.text == "¡Hola!"


def test_prefix_chars_is_everything_fed_until_the_answer_starts() -> None:
    decoder = AnswerTextStream()
    decoder.feed('{"respuesta": ')
    assert decoder.prefix_chars == 14
    decoder.feed('"')
    assert decoder.prefix_chars == 15
    decoder.feed('"}')  # an empty answer never starts
    assert decoder.prefix_chars == 17 and decoder.complete and decoder.text == ""


def test_a_cut_reply_keeps_what_was_decoded() -> None:
    decoder = stream(['{"respuesta": "Vendimos ₲8', "50.0"])
    assert decoder.text == "Vendimos ₲850.0"
    assert not decoder.complete


# -- plain text ---------------------------------------------------------------------------------------------


def test_plain_text_passes_through_without_its_reasoning() -> None:
    raw = "<think>Veamos {x}</think>\n\nHola, ¿en qué <b>puedo</b> ayudar? <thinking>no</thinking>Fin.  \n"
    assert every_split(raw, None) == {strip_reasoning(raw)}
    assert strip_reasoning(raw) == "Hola, ¿en qué <b>puedo</b> ayudar? Fin."


def test_plain_text_holds_back_only_what_may_still_be_a_tag_or_trailing_space() -> None:
    decoder = AnswerTextStream(None)
    assert decoder.feed("Hola <thi") == "Hola"
    assert decoder.feed("s") == " <this"
    assert decoder.feed(" es <think>") == " es"
    assert decoder.feed("nada</think> todo") == "  todo"
    assert decoder.prefix_chars == 0


def test_finish_returns_a_held_back_tag_start_that_never_became_a_tag() -> None:
    decoder = AnswerTextStream(None)
    assert decoder.feed("a <thi") == "a"
    assert decoder.finish() == " <thi"
    assert decoder.text == "a <thi"
    assert AnswerTextStream().finish() == ""


def test_an_unclosed_think_hides_the_rest() -> None:
    assert every_split("Hola <think>y nada más", None) == {"Hola"}
    assert every_split("Hola <think>y nada más", None) == {strip_reasoning("Hola <think>y nada más")}


def test_plain_prefix_chars_skips_reasoning_and_leading_whitespace() -> None:
    raw = "<think>x</think>\n  Hola"
    assert stream(chunks_of(raw, 1), None).prefix_chars == raw.index("Hola")


# -- properties ---------------------------------------------------------------------------------------------

json_scalars = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text()
keys = st.sampled_from(["respuesta", "memoria", "estado", "x", 'a"b', "\\", "respuesta "]) | st.text(
    max_size=5
)
json_values = st.recursive(
    json_scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(keys, inner, max_size=3),
    max_leaves=8,
)


@st.composite
def answer_documents(draw: st.DrawFn) -> str:
    """A JSON object with a string ``respuesta`` among other keys, serialised in any of json's styles."""
    others = draw(st.dictionaries(keys.filter(lambda k: k != "respuesta"), json_values, max_size=4))
    position = draw(st.integers(min_value=0, max_value=len(others)))
    items = list(others.items())
    items.insert(position, ("respuesta", draw(st.text())))
    return json.dumps(
        dict(items),
        ensure_ascii=draw(st.booleans()),
        indent=draw(st.sampled_from([None, 0, 2])),
    )


@st.composite
def chunkings(draw: st.DrawFn, text: str) -> list[str]:
    cuts = sorted(draw(st.sets(st.integers(min_value=0, max_value=len(text)), max_size=12)))
    bounds = [0, *cuts, len(text)]
    return [text[a:b] for a, b in itertools.pairwise(bounds)]


@settings(max_examples=300, deadline=None)
@given(data=st.data(), doc=answer_documents(), before=st.sampled_from(["", "<think>{x}</think>", "Ok: "]))
def test_any_chunking_of_a_json_document_gives_json_loads_respuesta(
    data: st.DataObject, doc: str, before: str
) -> None:
    raw = before + doc
    decoder = stream(data.draw(chunkings(raw)))
    expected = json.loads(doc)["respuesta"]
    assert decoder.text == expected
    assert decoder.complete
    if expected:  # the answer starts right after its opening quote, as itself or as an escape
        assert raw[decoder.prefix_chars - 1] == '"'
        assert raw[decoder.prefix_chars] in (expected[0], "\\")


visible_text = st.text(alphabet="ab <>/\n", max_size=8)


@st.composite
def reasoning_replies(draw: st.DrawFn) -> str:
    """Visible text and ``<think>`` blocks interleaved (every block closed, no stray closing tag)."""
    parts: list[str] = []
    for _ in range(draw(st.integers(min_value=0, max_value=4))):
        parts.append(draw(visible_text))
        if draw(st.booleans()):
            tag = draw(st.sampled_from(["think", "THINK", "thinking"]))
            parts.append(f"<{tag}>{draw(visible_text)}</{tag}>")
    return "".join(parts)


@settings(max_examples=300, deadline=None)
@given(data=st.data(), raw=reasoning_replies())
def test_any_chunking_of_plain_text_gives_strip_reasoning(data: st.DataObject, raw: str) -> None:
    assert stream(data.draw(chunkings(raw)), None).text == strip_reasoning(raw)


@settings(max_examples=200, deadline=None)
@given(data=st.data(), raw=st.text(alphabet='{}[]":,\\u0123abd <>/thinkTHINK\n', max_size=60))
@pytest.mark.parametrize("json_field", ["respuesta", "a", None])
def test_any_text_at_all_decodes_the_same_however_it_is_chunked(
    json_field: str | None, data: st.DataObject, raw: str
) -> None:
    whole = stream([raw], json_field)
    chunked = stream(data.draw(chunkings(raw)), json_field)
    assert (chunked.text, chunked.prefix_chars, chunked.complete) == (
        whole.text,
        whole.prefix_chars,
        whole.complete,
    )
