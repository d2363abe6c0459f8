"""BFCL-style operation matching (benchmarks/scoring/operations.py)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from benchmarks.scoring.entities import ErpNames
from benchmarks.scoring.operations import match_operations, normalize_value


def call(funcion: str, **parametros: Any) -> dict[str, Any]:
    return {"funcion": funcion, "parametros": parametros}


YEAR = call("ventas_anuales", anio=2025)
BEST = call("mejor_cliente", anio=2025)


def buys(cliente: str) -> dict[str, Any]:
    return call("compras_cliente", cliente=cliente, anio=2025)


@pytest.mark.parametrize(
    ("expected", "actual", "ok"),
    [
        ([YEAR, BEST], [BEST, YEAR], True),  # order does not matter
        ([YEAR], [call("ventas_anuales", anio="2025")], True),  # a year as text is the year
        ([YEAR], [call("ventas_anuales", anio=2025.0)], True),
        ([buys("Distribuidora Ñandutí S.A.")], [buys("distribuidora nanduti s.a.")], True),  # case, accents
        ([buys("Comercial Guaraní S.A.")], [buys("comercial guarani s.a")], True),  # BFCL's punctuation
        ([buys("Comercial Guaraní S.A.")], [buys("COMERCIAL GUARANI SA")], True),
        ([buys("Comercial Guaraní S.A.")], [buys("Comercial Guaraní")], False),
        ([YEAR], [YEAR, YEAR], True),  # a repeated call is no extra: the modes run it once
        ([YEAR], [YEAR, call("ventas_anuales", anio="2025")], True),
        ([YEAR, YEAR], [YEAR], False),  # expected twice, it must run twice
        ([YEAR], [YEAR, YEAR, BEST], False),
        ([], [], True),
        ([], [YEAR], False),
    ],
)
def test_calls_match_as_a_multiset_of_normalised_calls_where_repeating_one_is_no_extra(
    expected: list[dict[str, Any]], actual: list[dict[str, Any]], ok: bool
) -> None:
    assert match_operations(expected, actual).ok is ok


def test_extra_and_missing_calls_fail() -> None:
    expected = [call("ventas_anuales", anio=2025)]
    extra = match_operations(expected, [*expected, call("mejor_cliente", anio=2025)])
    missing = match_operations([*expected, call("mejor_cliente", anio=2025)], expected)
    assert not extra.ok and extra.extra and not extra.missing
    assert not missing.ok and missing.missing and not missing.extra
    assert "mejor_cliente" in extra.describe()


def test_different_parameter_values_fail() -> None:
    result = match_operations([call("ventas_anuales", anio=2025)], [call("ventas_anuales", anio=2024)])
    assert not result.ok
    assert result.missing == ['ventas_anuales({"anio": 2025})']


def test_with_the_registry_defaults_are_filled_in(registry: Any) -> None:
    expected = [call("top_productos", anio=2025)]
    assert match_operations(expected, [call("top_productos", anio=2025, limite=5)], registry).ok
    assert not match_operations(expected, [call("top_productos", anio=2025, limite=3)], registry).ok


def test_with_the_registry_an_optional_parameter_given_a_placeholder_is_left_out(registry: Any) -> None:
    expected = [call("facturas_pendientes")]
    for placeholder in ("N/A", "todos", None, {}):
        assert match_operations(expected, [call("facturas_pendientes", cliente=placeholder)], registry).ok
    assert not match_operations(expected, [call("facturas_pendientes", cliente="Empresa ABC")], registry).ok


def test_unvalidatable_params_are_still_compared_raw(registry: Any) -> None:
    bad = [call("ventas_anuales", anio="dos mil")]
    assert match_operations(bad, bad, registry).ok
    assert not match_operations([call("ventas_anuales", anio=2025)], bad, registry).ok


@given(st.integers(min_value=-(10**9), max_value=10**9))
def test_numbers_normalise_the_same_from_int_float_and_text(n: int) -> None:
    forms = [n, float(n), str(n), f" {n} "]
    assert len({repr(normalize_value(form)) for form in forms}) == 1


def test_mismatches_are_reported_as_the_calls_were_written() -> None:
    result = match_operations(
        [call("compras_cliente", cliente="Empresa ABC", anio=2025)],
        [call("compras_cliente", cliente="Empresa XYZ", anio=2025)],
    )
    assert result.missing == ['compras_cliente({"anio": 2025, "cliente": "Empresa ABC"})']
    assert result.extra == ['compras_cliente({"anio": 2025, "cliente": "Empresa XYZ"})']


def test_an_unexpected_call_repeated_is_reported_once() -> None:
    result = match_operations([YEAR], [YEAR, BEST, BEST, BEST])
    assert not result.ok and result.extra == ['mejor_cliente({"anio": 2025})'] and not result.missing


NAMES = ErpNames.build(
    ["Hotel Paraná S.A.", "Comercial Guaraní S.A.", "Comercial Guaraní S.R.L.", "Empresa ABC"], []
)


@pytest.mark.parametrize(
    ("written", "ok"),
    [
        ("Hotel Paraná S.A.", True),
        ("hotel parana", True),  # without its legal form: the same customer
        ("HOTEL PARANÁ", True),
        ("Hotel", False),  # part of a name names nobody
        ("Hotel Paraná Sur", False),
        ("Empresa ABC", False),  # another customer
    ],
)
def test_with_the_erp_names_a_customer_parameter_matches_by_identity(written: str, ok: bool) -> None:
    expected = [buys("Hotel Paraná S.A.")]
    assert match_operations(expected, [buys(written)], names=NAMES).ok is ok


def test_a_name_shared_by_two_customers_still_compares_as_written() -> None:
    # "Comercial Guaraní" names two customers: it identifies neither, and matches neither full name.
    for full in ("Comercial Guaraní S.A.", "Comercial Guaraní S.R.L."):
        assert not match_operations([buys(full)], [buys("Comercial Guaraní")], names=NAMES).ok
    assert match_operations([buys("Comercial Guaraní")], [buys("comercial guarani")], names=NAMES).ok


def test_customers_by_identity_with_the_registry_and_in_reports_as_written(registry: Any) -> None:
    expected = [call("compras_cliente", cliente="Hotel Paraná S.A.", anio=2025)]
    assert match_operations(
        expected, [call("compras_cliente", cliente="hotel parana", anio="2025")], registry, names=NAMES
    ).ok
    result = match_operations(
        expected, [call("compras_cliente", cliente="hotel parana", anio=2024)], registry, names=NAMES
    )
    assert result.extra == ['compras_cliente({"anio": 2024, "cliente": "hotel parana"})']
    assert not match_operations(
        expected, [call("compras_cliente", cliente="hotel parana", anio=2025)], registry
    ).ok
