"""Grounded answers: a figure is shown as the ERP's truth only when an ERP source supports it."""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from datetime import date

import pytest

from shared.answer import MemoryItem
from shared.grounding import check_answer, grounding_sources, misattributed_figures, ungrounded_figures
from shared.turn import ExecutedOperation

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


@pytest.mark.parametrize(
    ("answer", "malformed"),
    [
        ("Se vendieron 396.100.00 unidades.", ["396.100.00"]),
        ("La versión 1.5.3 vendió ₲850.000.000.", ["1.5.3"]),
        ("Vendimos 8,50,00,000 guaraníes.", ["8,50,00,000"]),
    ],
)
def test_a_badly_grouped_figure_is_ungrounded_as_written(answer: str, malformed: list[str]) -> None:
    assert check(answer, SALES_2025, {"total": 396_100_000}) == malformed


def test_a_well_grouped_figure_next_to_a_malformed_one_is_read_as_usual() -> None:
    assert check("Vendimos ₲396.100.000.", {"total": 396_100_000}) == []
    assert check("Vendimos ₲396.100.000.", SALES_2025) == ["396.100.000"]


@pytest.mark.parametrize(
    "answer",
    [
        "La factura vence el 12.05.2025.",
        "Hoy es 30.11.2026 y la última venta fue el 3.3.25.",
        "1.1. Ventas de 2025\n1.2. Clientes\n2.1) Productos",
        "Factura 001-001-0000169 de Importadora del Este.",
    ],
)
def test_dotted_dates_outline_numbering_and_invoice_numbers_are_not_figures(answer: str) -> None:
    assert check(answer) == []


SALES_2024_OP = ExecutedOperation(
    funcion="ventas_anuales",
    parametros={"anio": 2024},
    result={"anio": 2024, "total": 744_000_000, "facturas": 1500},
)
SALES_2025_OP = ExecutedOperation(funcion="ventas_anuales", parametros={"anio": 2025}, result=SALES_2025)
ABC_2025 = ExecutedOperation(
    funcion="compras_cliente",
    parametros={"cliente": "Empresa ABC", "anio": 2025},
    result={"cliente": "Empresa ABC", "anio": 2025, "total": 120_000_000, "facturas": 184},
)
ESTE_2025 = ExecutedOperation(
    funcion="compras_cliente",
    parametros={"cliente": "importadora del este", "anio": 2025},
    result={"cliente": "Importadora del Este S.A.", "anio": 2025, "total": 95_000_000, "facturas": 150},
)
TOP_2025 = ExecutedOperation(
    funcion="top_productos",
    parametros={"anio": 2025, "limite": 2},
    result={
        "anio": 2025,
        "productos": [
            {"sku": "FER-008", "producto": "Taladro percutor 650 W", "unidades": 91, "total": 38_158_000},
            {
                "sku": "ALM-004",
                "producto": "Aceite de soja 900 ml (caja x 12)",
                "unidades": 203,
                "total": 37_753_000,
            },
        ],
    },
)
PENDING_OP = ExecutedOperation(funcion="facturas_pendientes", result=PENDING)


@pytest.mark.parametrize(
    ("answer", "operations", "wrong"),
    [
        ("En 2024 vendimos ₲850.000.000.", [SALES_2024_OP, SALES_2025_OP], ["850.000.000 (2024)"]),
        (
            "En 2024 vendimos 850 millones. En 2025, 744 millones.",
            [SALES_2024_OP, SALES_2025_OP],
            ["850 millones (2024)", "744 millones (2025)"],
        ),
        (
            "Importadora del Este compró ₲120.000.000 en 2025.",
            [ABC_2025, ESTE_2025],
            ["120.000.000 (Importadora del Este S.A.)"],
        ),
        (
            "El Aceite de soja 900 ml vendió ₲38.158.000.",
            [TOP_2025],
            ["38.158.000 (Aceite de soja 900 ml (caja x 12))"],
        ),
        ("ALM-004: 91 unidades.", [TOP_2025], []),  # below MIN_ATTRIBUTED: not checked
        ("Empresa ABC debe ₲2.000.000 (2026-11-02).", [PENDING_OP], ["2.000.000 (Empresa ABC)"]),
    ],
)
def test_a_figure_said_of_another_year_customer_or_product_is_misattributed(
    answer: str, operations: list[ExecutedOperation], wrong: list[str]
) -> None:
    assert misattributed_figures(answer, operations) == wrong


@pytest.mark.parametrize(
    ("answer", "operations"),
    [
        ("En 2025 vendimos ₲850.000.000 y en 2024 ₲744.000.000.", [SALES_2024_OP, SALES_2025_OP]),
        ("En 2025 vendimos ₲850.000.000, ₲106.000.000 más que en 2024.", [SALES_2024_OP, SALES_2025_OP]),
        ("Entre 2024 y 2025 suman ₲1.594.000.000.", [SALES_2024_OP, SALES_2025_OP]),
        ("Empresa ABC compró ₲120.000.000 en 2025.", [ABC_2025, ESTE_2025]),
        (
            "La empresa ABC compró 120 millones y la Importadora del Este S.A., 95 millones.",
            [ABC_2025, ESTE_2025],
        ),
        ("En 2025 vendimos ₲850.000.000 y Empresa ABC compró ₲120.000.000.", [SALES_2025_OP, ABC_2025]),
        ("Vendimos ₲850.000.000 y ₲744.000.000.", [SALES_2024_OP, SALES_2025_OP]),  # names no referent
        ("En 2023 vendimos ₲850.000.000.", [SALES_2024_OP, SALES_2025_OP]),  # a year no result is of
        # from the context, no result:
        ("En 2024 el límite es de 7.000 guaraníes.", [SALES_2024_OP, SALES_2025_OP]),
        ("1. Taladro percutor 650 W: ₲38.158.000\n2. Aceite de soja 900 ml: ₲37.753.000", [TOP_2025]),
        ("El taladro lideró con ₲38.158.000, seguido del Aceite de soja 900 ml.", [TOP_2025]),
        ("Hay ₲3.500.000 pendientes; la factura de Empresa ABC es de ₲1.500.000.", [PENDING_OP]),
        ("En 2024 vendimos ₲850.000.000.", [SALES_2025_OP]),  # 2024 ran nothing: the year tells nothing
        ("En 2024 y 2025 vendimos ₲744.000.000 y ₲850.000.000.", [SALES_2024_OP, SALES_2025_OP]),
    ],
)
def test_a_figure_said_of_its_own_referents_or_of_none_is_not_misattributed(
    answer: str, operations: list[ExecutedOperation]
) -> None:
    assert misattributed_figures(answer, operations) == []


def test_a_parameter_the_model_wrote_loosely_is_not_a_name_a_sentence_can_say() -> None:
    este = ExecutedOperation(
        funcion="facturas_pendientes",
        parametros={"cliente": "este"},
        result={"cliente": "Importadora del Este S.A.", "cantidad": 1, "total": 194_500, "facturas": []},
    )
    best = ExecutedOperation(
        funcion="mejor_cliente",
        parametros={"anio": 2026},
        result={"anio": 2026, "cliente": "Empresa ABC", "total": 120_000_000},
    )
    assert misattributed_figures("Este año el mejor cliente compró ₲120.000.000.", [este, best]) == []


def test_check_answer_reports_misattributed_figures_and_never_remembers_them() -> None:
    memories = [
        MemoryItem(contenido="En 2024 vendimos ₲850.000.000.", importancia=0.5),
        MemoryItem(contenido="El año es 2025.", importancia=0.5),
    ]
    result = check_answer(
        "En 2024 vendimos ₲850.000.000.", memories, [SALES_2024_OP, SALES_2025_OP], [], TODAY
    )
    assert result.figures == ["850.000.000 (2024)"]
    assert [item.content for item in result.memories] == ["El año es 2025."]


def _growth(make: Callable[[int], str], small: int) -> float:
    """How much longer checking ``make(10 * small)`` takes than ``make(small)`` (best of three each)."""

    def seconds(n: int) -> float:
        text = make(n)
        best = math.inf
        for _ in range(3):
            start = time.perf_counter()
            check_answer(text, [], [SALES_2024_OP, ABC_2025], [], TODAY)
            best = min(best, time.perf_counter() - start)
        return best

    return seconds(10 * small) / max(seconds(small), 1e-4)


def test_a_long_run_of_letters_is_checked_in_linear_time() -> None:
    assert _growth(lambda n: "En 2025 " + "A" * n, 10_000) < 30  # 10 when linear, 100 when quadratic


@pytest.mark.parametrize(
    "unit", ["1", "\n", " ", "\n1", ". ", ".¿", "1-", "A1", "2024 ", "Empresa ABC ", "₲850.000.000 "]
)
def test_any_hostile_answer_is_checked_in_linear_time(unit: str) -> None:
    assert _growth(lambda n: "En 2025 " + unit * (n // len(unit)), 2_000) < 30


@pytest.mark.parametrize("reference", ["8219e736", "a219e736", "12345678", "deadbeef"])
def test_the_reference_of_an_erp_error_is_no_figure_whatever_its_digits_spell(reference: str) -> None:
    answer = (
        f"No pude consultar las ventas: error interno (ref {reference}). El mejor cliente compró 120.000.000."
    )
    assert ungrounded_figures(answer, [120000000.0]) == []
