"""Customers and products are recognised by what identifies them (benchmarks/scoring/entities.py)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import pytest

from benchmarks.scoring.entities import ErpNames
from shared.text import without_legal_form, without_pack_size

NAMES = ErpNames.build(
    ["Empresa ABC", "Importadora del Este S.A.", "Comercial Pilar S.A.", "Comercial Pilar S.R.L."],
    [
        ("ALM-004", "Aceite de soja 900 ml (caja x 12)"),
        ("FER-008", "Taladro percutor 650 W"),
        ("LAC-001", "Leche entera 1 L (caja x 12)"),
        ("LAC-009", "Leche entera 1 L (pack x 6)"),
    ],
)


@pytest.mark.parametrize(
    "answer",
    [
        "Aceite de soja 900 ml (caja x 12), 203 unidades",
        "Aceite de soja 900 ml (SKU: ALM-004) con 203 unidades",
        "el aceite de soja 900 ml",
        "ALM-004",
    ],
)
def test_a_product_is_named_by_its_name_its_sku_or_its_base_name(answer: str) -> None:
    assert NAMES.names("Aceite de soja 900 ml (caja x 12)", answer)


def test_a_base_name_two_products_share_names_neither() -> None:
    assert not NAMES.names("Leche entera 1 L (caja x 12)", "Leche entera 1 L")
    assert NAMES.names("Leche entera 1 L (caja x 12)", "Leche entera 1 L (caja x 12)")
    assert NAMES.names("Leche entera 1 L (caja x 12)", "LAC-001")


def test_a_customer_is_named_with_or_without_its_legal_form() -> None:
    assert NAMES.names("Importadora del Este S.A.", "la importadora del Este vendió")
    assert NAMES.names("Importadora del Este S.A.", "Importadora del Este SA")
    assert not NAMES.names("Comercial Pilar S.A.", "Comercial Pilar")  # two customers share it
    assert NAMES.names("Comercial Pilar S.A.", "Comercial Pilar S.A.")


def test_names_compare_as_whole_words() -> None:
    assert not NAMES.names("Empresa ABC", "Empresa AB")
    assert not NAMES.names("Empresa ABC", "Empresa ABCD")
    assert NAMES.names("Empresa ABC", "la empresa abc.")


def test_other_values_are_matched_as_written() -> None:
    assert NAMES.names("Almacén", "Almacén: ₲237.250.000")
    assert NAMES.aliases("Almacén") == ("Almacén",)


def test_the_customers_a_text_names() -> None:
    text = "En diciembre, la importadora del Este S.A. generó 107506000; Empresa AB no existe."
    assert NAMES.customers_named(text) == {"Importadora del Este S.A."}
    assert NAMES.customers_named("Las ventas de 2025 fueron ₲850.000.000.") == set()


def test_the_demo_erps_names_are_read_with_their_aliases(erp: Any) -> None:
    names = ErpNames.of(erp)
    assert "Empresa ABC" in names.customers and len(names.customers) > 10
    assert names.aliases("Aceite de soja 900 ml (caja x 12)") == (
        "Aceite de soja 900 ml (caja x 12)",
        "ALM-004",
        "Aceite de soja 900 ml",
    )


@pytest.mark.parametrize("make", [without_legal_form, without_pack_size])
def test_shortening_a_name_with_a_long_run_of_spaces_takes_linear_time(make: Callable[[str], str]) -> None:
    def seconds(n: int) -> float:
        text = "Empresa" + " " * n + "x"
        start = time.perf_counter()
        make(text)
        return time.perf_counter() - start

    assert seconds(200_000) / max(seconds(20_000), 1e-4) < 30  # 10 when linear, 100 when quadratic
