"""Grounded answers: a figure is shown as the ERP's truth only when an ERP source supports it."""

from __future__ import annotations

from datetime import date

import pytest

from shared.grounding import grounding_sources, ungrounded_figures

TODAY = date(2026, 11, 30)
SALES_2025 = {"anio": 2025, "total": 850_000_000, "facturas": 120}
PENDING = {
    "cliente": None,
    "cantidad": 2,
    "facturas": [
        {"numero": "F-001", "cliente": "Empresa ABC", "fecha": "2026-10-01", "total": 1_500_000},
        {"numero": "F-002", "cliente": "Comercial Sur", "fecha": "2026-11-02", "total": 2_000_000},
    ],
}


def check(answer: str, *results: object, texts: tuple[str, ...] = ()) -> list[str]:
    return ungrounded_figures(answer, grounding_sources(results, texts, TODAY))


@pytest.mark.parametrize(
    "answer",
    [
        "En 2025 vendimos ₲850.000.000.",
        "En 2025 vendimos 850,000,000 guaraníes.",
        "Las ventas de 2025 suman 850 millones de guaraníes en 120 facturas.",
        "Vendimos Gs. 850.000.000 (unos 0,85 mil millones).",
        "En 2025 vendimos 850000000.",
    ],
)
def test_a_figure_the_operation_returned_is_grounded_however_it_is_written(answer: str) -> None:
    assert check(answer, SALES_2025) == []


@pytest.mark.parametrize(
    ("answer", "invented"),
    [
        ("Hay 1429 facturas pendientes.", ["1429"]),
        ("En 2025 vendimos $798,530,000.", ["798,530,000"]),
        ("El precio ha sido cambiado a 50.000.", ["50.000"]),
        ("En 2025 vendimos ₲987.654.321.", ["987.654.321"]),
    ],
)
def test_a_figure_no_source_supports_is_ungrounded(answer: str, invented: list[str]) -> None:
    assert check(answer, SALES_2025, PENDING) == invented


def test_list_lengths_column_sums_and_figures_inside_result_text_are_grounded() -> None:
    answer = "Hay 2 facturas pendientes por ₲3.500.000 en total; la mayor es de ₲2.000.000."
    assert check(answer, PENDING) == []
    assert check("La Yerba (caja x 12) fue la más vendida.", {"producto": "Yerba (caja x 12)"}) == []


def test_sums_differences_and_percentages_of_two_results_are_grounded() -> None:
    years = ({"anio": 2025, "total": 850_000_000}, {"anio": 2024, "total": 800_000_000})
    assert check("Entre los dos años suman ₲1.650.000.000.", *years) == []
    assert check("Crecimos ₲50.000.000, un 6,25 % más que en 2024.", *years) == []
    assert check("Crecimos un 40 %.", *years) == ["40"]


def test_rounding_as_a_person_writes_it_is_grounded_but_not_beyond_two_significant_digits() -> None:
    exact = {"total": 849_850_000}
    assert check("Vendimos unos ₲850.000.000.", exact) == []
    assert check("Vendimos 849,9 millones.", exact) == []
    assert check("Vendimos 1.000.000.000.", exact) == ["1.000.000.000"]


def test_figures_of_the_question_the_context_and_today_are_grounded() -> None:
    texts = ("¿Cuáles son los 3 productos más vendidos?", "Memoria relevante:\n- El límite es 7 días")
    assert check("Estos son los 3 productos; el plazo es de 7 días.", texts=texts) == []
    assert check("Hoy es 30 de noviembre de 2026; el año pasado fue 2025.") == []


def test_dates_times_codes_and_list_numbering_are_not_figures() -> None:
    answer = "1. F-001 del 2026-10-01 a las 10:30\n2. RUC 80000001-1, vence el 02/11/2026"
    assert check(answer) == []


def test_an_answer_without_figures_has_nothing_to_ground() -> None:
    assert check("¡Hola! Puedo consultar ventas, clientes, productos y facturas.") == []
