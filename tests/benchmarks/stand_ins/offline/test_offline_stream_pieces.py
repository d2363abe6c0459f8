"""How replies are cut into stream pieces (benchmarks.stand_ins.chunks); broken tool-call arguments stay
broken."""

from __future__ import annotations

import json
from typing import Any

import pytest
from langchain_core.messages import AIMessageChunk
from langchain_core.messages.tool import tool_call_chunk
from langchain_core.utils.json import parse_partial_json

from benchmarks.stand_ins.chunks import PIECE_MAX_CHARS, stream_pieces
from benchmarks.stand_ins.faults import break_arguments

TEXTS = [
    "",
    "hola",
    "  dos espacios al principio",
    "Las ventas de 2025 fueron ₲850.000.000 en 120 facturas.\n\nEl mejor cliente fue Empresa ABC.",
    json.dumps({"respuesta": "Vendimos ₲850.000.000.", "memoria": [], "estado": {"anio": 2025}}),
    '{"texto":"sin_espacios_en_absoluto_y_muy_largo_de_verdad"}',
    '<think>razonando…</think>\n{"respuesta": "sí"}',
]


@pytest.mark.parametrize("text", TEXTS)
def test_pieces_put_together_give_the_text_back(text: str) -> None:
    assert "".join(stream_pieces(text)) == text


@pytest.mark.parametrize("text", TEXTS)
def test_no_piece_is_longer_than_about_three_tokens(text: str) -> None:
    assert all(1 <= len(piece) <= PIECE_MAX_CHARS for piece in stream_pieces(text))


def test_words_keep_the_whitespace_that_follows_them() -> None:
    assert stream_pieces("Las ventas  de\n2025") == ["Las ", "ventas  ", "de\n", "2025"]


def test_long_words_are_sliced() -> None:
    assert stream_pieces("₲850.000.000.", max_chars=5) == ["₲850.", "000.0", "00."]
    with pytest.raises(ValueError, match="at least 1"):
        stream_pieces("x", max_chars=0)


def test_a_json_answer_streams_its_text_in_several_pieces() -> None:
    pieces = stream_pieces(
        json.dumps({"respuesta": "Las ventas de 2025 fueron ₲850.000.000."}, ensure_ascii=False)
    )
    inside = [p for p in pieces if "respuesta" not in p and "}" not in p]
    assert len(inside) >= 4


ARGUMENTS: list[dict[str, Any]] = [
    {},
    {"anio": 2025},
    {"anio": 2025, "cliente": "Empresa ABC"},
    {"filtro": {"anio": 2025, "meses": [1, 2, 3]}, "texto": "hora: 10:30"},
    {"texto": 'dijo "hola": sí', "limite": 5},
]


@pytest.mark.parametrize("mode", ["malformed_json", "truncated_json"])
@pytest.mark.parametrize("args", ARGUMENTS)
def test_broken_arguments_are_invalid_even_for_langchains_partial_json_repair(
    mode: Any, args: dict[str, Any]
) -> None:
    broken = break_arguments(json.dumps(args, ensure_ascii=False), mode)

    with pytest.raises(json.JSONDecodeError):
        json.loads(broken)
    try:
        repaired = parse_partial_json(broken)
    except json.JSONDecodeError:
        repaired = None
    assert not isinstance(repaired, dict)
    chunk = AIMessageChunk(
        content="", tool_call_chunks=[tool_call_chunk(name="f", args=broken, id="c", index=0)]
    )
    assert chunk.tool_calls == [] and [c["args"] for c in chunk.invalid_tool_calls] == [broken]


def test_malformed_arguments_lose_a_colon_and_truncated_ones_a_value() -> None:
    text = json.dumps({"anio": 2025, "cliente": "Empresa ABC"})
    assert break_arguments(text, "malformed_json") == '{"anio" 2025, "cliente": "Empresa ABC"}'
    assert break_arguments(text, "truncated_json") == '{"anio": 2025, "cliente":}'
