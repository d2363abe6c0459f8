"""BFCL-style operation matching (benchmarks/scoring/operations.py)."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from benchmarks.scoring.operations import match_operations, normalize_value


def call(funcion: str, **parametros: Any) -> dict[str, Any]:
    return {"funcion": funcion, "parametros": parametros}


def test_order_does_not_matter() -> None:
    expected = [call("ventas_anuales", anio=2025), call("mejor_cliente", anio=2025)]
    actual = [call("mejor_cliente", anio=2025), call("ventas_anuales", anio=2025)]
    assert match_operations(expected, actual).ok


def test_a_year_as_text_equals_the_year_as_a_number() -> None:
    assert match_operations([call("ventas_anuales", anio=2025)], [call("ventas_anuales", anio="2025")]).ok
    assert match_operations([call("ventas_anuales", anio=2025)], [call("ventas_anuales", anio=2025.0)]).ok


def test_names_compare_without_case_or_accents() -> None:
    expected = [call("compras_cliente", cliente="Distribuidora Ñandutí S.A.", anio=2025)]
    actual = [call("compras_cliente", cliente="distribuidora nanduti s.a.", anio=2025)]
    assert match_operations(expected, actual).ok


def test_extra_and_missing_calls_fail() -> None:
    expected = [call("ventas_anuales", anio=2025)]
    extra = match_operations(expected, [*expected, call("mejor_cliente", anio=2025)])
    missing = match_operations([*expected, call("mejor_cliente", anio=2025)], expected)
    assert not extra.ok and extra.extra and not extra.missing
    assert not missing.ok and missing.missing and not missing.extra
    assert "mejor_cliente" in extra.describe()


def test_a_repeated_call_counts_twice() -> None:
    expected = [call("ventas_anuales", anio=2025)]
    assert not match_operations(expected, expected * 2).ok


def test_different_parameter_values_fail() -> None:
    result = match_operations([call("ventas_anuales", anio=2025)], [call("ventas_anuales", anio=2024)])
    assert not result.ok
    assert result.missing == ['ventas_anuales({"anio": 2025})']


def test_nothing_expected_and_nothing_done_matches() -> None:
    assert match_operations([], []).ok
    assert not match_operations([], [call("ventas_anuales", anio=2025)]).ok


def test_with_the_registry_defaults_are_filled_in(registry: Any) -> None:
    expected = [call("top_productos", anio=2025)]
    assert match_operations(expected, [call("top_productos", anio=2025, limite=5)], registry).ok
    assert not match_operations(expected, [call("top_productos", anio=2025, limite=3)], registry).ok


def test_unvalidatable_params_are_still_compared_raw(registry: Any) -> None:
    bad = [call("ventas_anuales", anio="dos mil")]
    assert match_operations(bad, bad, registry).ok
    assert not match_operations([call("ventas_anuales", anio=2025)], bad, registry).ok


@given(st.integers(min_value=-(10**9), max_value=10**9))
def test_numbers_normalise_the_same_from_int_float_and_text(n: int) -> None:
    forms = [n, float(n), str(n), f" {n} "]
    assert len({repr(normalize_value(form)) for form in forms}) == 1


def test_punctuation_in_names_is_ignored_as_in_bfcl() -> None:
    expected = [call("compras_cliente", cliente="Comercial Guaraní S.A.", anio=2025)]
    assert match_operations(
        expected, [call("compras_cliente", cliente="comercial guarani s.a", anio=2025)]
    ).ok
    assert match_operations(expected, [call("compras_cliente", cliente="COMERCIAL GUARANI SA", anio=2025)]).ok
    assert not match_operations(
        expected, [call("compras_cliente", cliente="Comercial Guaraní", anio=2025)]
    ).ok


def test_mismatches_are_reported_as_the_calls_were_written() -> None:
    result = match_operations(
        [call("compras_cliente", cliente="Empresa ABC", anio=2025)],
        [call("compras_cliente", cliente="Empresa XYZ", anio=2025)],
    )
    assert result.missing == ['compras_cliente({"anio": 2025, "cliente": "Empresa ABC"})']
    assert result.extra == ['compras_cliente({"anio": 2025, "cliente": "Empresa XYZ"})']
