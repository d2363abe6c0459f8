"""shared/bounds.py: every cut is visible, and the bounds hold whatever the input."""

from __future__ import annotations

import dataclasses
import json
from datetime import date
from decimal import Decimal
from enum import Enum
from typing import Any

import pytest
from pydantic import BaseModel

from shared.bounds import (
    NESTING_MARK,
    TRUNCATED_KEY,
    TRUNCATION_MARK,
    clean_text,
    clip_json,
    clip_state,
    clip_text,
    json_size,
    single_line,
)

# -- clip_text -----------------------------------------------------------------------------------------------


def test_clip_text_cuts_long_text_with_a_visible_mark_within_the_limit() -> None:
    assert clip_text("hola", 4) == "hola" and clip_text("", 0) == ""
    clipped = clip_text("x" * 1_000_000, 300)
    assert len(clipped) == 300
    assert clipped.endswith(TRUNCATION_MARK)
    assert clipped.startswith("x" * 200)
    assert clip_text("abcdef", 4) == "abcd"  # below the mark's length it just cuts
    with pytest.raises(ValueError):
        clip_text("abc", -1)


# -- cleaning ------------------------------------------------------------------------------------------------


def test_clean_text_keeps_newlines_and_tabs_drops_other_controls_and_replaces_lone_surrogates() -> None:
    assert clean_text("a\nb\tc\x00d\x1be\x0bf\x7f") == "a\nb\tcde f"
    assert clean_text("a\ud800b") == "a\ufffdb"  # so the text can be stored as UTF-8


def test_single_line_collapses_whitespace() -> None:
    assert single_line("  El cliente\n es\tEmpresa ABC \x00 ") == "El cliente es Empresa ABC"


# -- clip_json -----------------------------------------------------------------------------------------------


def test_clip_json_leaves_small_values_unchanged() -> None:
    value = {"anio": 2025, "total": 850_000_000, "clientes": [{"nombre": "Empresa ABC", "total": 1.5}]}
    assert clip_json(value, max_items=20, max_chars=4000) == value


def test_clip_json_cuts_long_lists_with_a_count_of_what_is_left_out() -> None:
    rows = [{"numero": f"001-{i:04d}", "total": i} for i in range(100)]
    clipped = clip_json({"facturas": rows}, max_items=20, max_chars=4000)
    assert clipped["facturas"][:20] == rows[:20]
    assert clipped["facturas"][20] == "… (80 más)"
    assert len(clipped["facturas"]) == 21


def test_clip_json_cuts_dicts_with_too_many_keys_visibly() -> None:
    clipped = clip_json({f"k{i}": i for i in range(50)}, max_items=10, max_chars=4000)
    assert list(clipped)[:10] == [f"k{i}" for i in range(10)]
    assert clipped[TRUNCATED_KEY] == "… (40 claves más)"


def test_clip_json_clips_long_strings() -> None:
    clipped = clip_json({"texto": "y" * 100_000}, max_chars=4000, max_string_chars=100)
    assert len(clipped["texto"]) == 100 and clipped["texto"].endswith(TRUNCATION_MARK)


@pytest.mark.parametrize(
    "value",
    [
        ["x" * 10_000] * 10_000,
        {"a": "\"'\\\n" * 50_000},
        [[[[[[[[[[[[i] * 50] * 50] * 50]]]]]]]] for i in range(3)],
        {f"clave {i}" * 40: {"v": list(range(1000))} for i in range(1000)},
        "\x00" * 100_000,
        list(range(1_000_000)),
    ],
    ids=[
        "many long strings",
        "escapes",
        "deep and wide",
        "long keys",
        "control characters",
        "a million rows",
    ],
)
@pytest.mark.parametrize("max_chars", [2, 50, 500, 4000])
def test_clip_json_always_fits_max_chars(value: Any, max_chars: int) -> None:
    clipped = clip_json(value, max_items=20, max_chars=max_chars)
    assert json_size(clipped) <= max_chars
    json.loads(json.dumps(clipped, allow_nan=False))  # JSON-ready


def test_clip_json_survives_hostile_nesting_and_cycles() -> None:
    deep: Any = []
    for _ in range(100_000):
        deep = [deep]
    cyclic: list[Any] = []
    cyclic.append(cyclic)
    for value in (deep, cyclic):
        clipped = clip_json(value, max_depth=5)
        assert NESTING_MARK in json.dumps(clipped, ensure_ascii=False)


class Color(Enum):
    ROJO = "rojo"


class Row(BaseModel):
    fecha: date
    monto: Decimal


@dataclasses.dataclass
class Point:
    x: int


def test_clip_json_turns_common_python_values_into_json() -> None:
    value = {
        "modelo": Row(fecha=date(2025, 1, 2), monto=Decimal("1.5")),
        "color": Color.ROJO,
        "punto": Point(3),
        "conjunto": {3, 1, 2},
        "tupla": (1, 2),
        "nan": float("nan"),
        "enorme": 10**5000,
        "otro": object,
        1: "clave no textual",
    }
    clipped = clip_json(value)
    assert clipped["modelo"] == {"fecha": "2025-01-02", "monto": "1.5"}
    assert clipped["color"] == "rojo"
    assert clipped["punto"] == {"x": 3}
    assert sorted(clipped["conjunto"]) == [1, 2, 3]
    assert clipped["tupla"] == [1, 2]
    assert clipped["nan"] == "nan"
    assert "grande" in clipped["enorme"]
    assert clipped["otro"] == "<class 'object'>"
    assert clipped["1"] == "clave no textual"
    json.dumps(clipped, allow_nan=False)


def test_clip_json_refuses_nonsense_limits() -> None:
    with pytest.raises(ValueError):
        clip_json([], max_items=0)


# -- clip_state ----------------------------------------------------------------------------------------------


def test_clip_state_bounds_keys_and_values_and_keeps_deletions() -> None:
    state = {f"k{i}": "v" * 10_000 for i in range(100)}
    state["k0"] = None  # type: ignore[assignment]
    state["x" * 1000] = 1  # type: ignore[assignment]
    bounded = clip_state(state, max_keys=30, max_key_chars=64, max_value_chars=500)
    assert len(bounded) == 30
    assert bounded["k0"] is None
    assert all(json_size(value) <= 500 for value in bounded.values())
    assert all(len(key) <= 64 for key in bounded)


def test_clip_state_leaves_a_normal_state_alone() -> None:
    state = {"tema": "ventas", "anio": 2025, "cliente_actual": "Empresa ABC", "meses": [1, 2, 3]}
    assert clip_state(state) == state
