"""Nothing an answer states may be wrong: figures, currency, customers (benchmarks/scoring/claims.py)."""

from __future__ import annotations

from datetime import date

from benchmarks.scoring.claims import Evidence, claim_problems
from benchmarks.scoring.entities import ErpNames

NAMES = ErpNames.build(["Empresa ABC", "Importadora del Este S.A."], [("FER-008", "Taladro percutor 650 W")])
TODAY = date(2026, 11, 30)
OCTOBER = Evidence(
    calls=[("ventas_mensuales", {"anio": 2026, "mes": 10}, {"anio": 2026, "mes": 10, "total": 75820500})],
    question="¿Y en octubre?",
    today=TODAY,
)
CATEGORIES = Evidence(
    calls=[
        (
            "ventas_por_categoria",
            {"anio": 2024},
            {"anio": 2024, "categorias": [{"categoria": "Almacén", "total": 215111000}]},
        )
    ],
    question="¿Cómo se repartieron las ventas de 2024 por categoría?",
    today=TODAY,
)
PRODUCTS = Evidence(
    calls=[
        (
            "top_productos",
            {"anio": 2025, "limite": 3},
            {"productos": [{"sku": "FER-008", "producto": "Taladro percutor 650 W", "total": 38158000}]},
        )
    ],
    question="¿Cuáles fueron los 3 productos más vendidos en 2025?",
    today=TODAY,
)


def test_a_right_answer_states_nothing_wrong() -> None:
    assert claim_problems("En octubre de 2026 vendimos ₲75.820.500.", OCTOBER, NAMES) == []
    assert claim_problems("Almacén: 215 millones de guaraníes en 2024.", CATEGORIES, NAMES) == []


def test_a_figure_the_data_does_not_give_is_wrong() -> None:
    (problem,) = claim_problems("En octubre vendimos ₲80.000.000 en 1200 facturas.", OCTOBER, NAMES)
    assert "80.000.000" in problem and "1200" in problem


def test_a_figure_at_the_wrong_scale_is_wrong_and_said_so() -> None:
    (problem,) = claim_problems("Almacén: 215.111 millones de guaraníes", CATEGORIES, NAMES)
    assert "215.111 millones" in problem and "215111000: a wrong magnitude" in problem


def test_an_amount_in_another_currency_is_wrong_even_with_the_erps_digits() -> None:
    (problem,) = claim_problems("Taladro percutor 650 W: total de $38,158,000", PRODUCTS, NAMES)
    assert "$38,158,000" in problem and "guaraníes" in problem


def test_a_customer_the_question_does_not_involve_is_a_wrong_subject() -> None:
    (problem,) = claim_problems("En octubre, la empresa ABC generó 75820500 guaraníes.", OCTOBER, NAMES)
    assert "Empresa ABC" in problem


def test_customers_in_the_data_or_the_question_may_be_named() -> None:
    best = Evidence(
        calls=[
            ("mejor_cliente", {"anio": 2025}, {"anio": 2025, "cliente": "Empresa ABC", "total": 120000000})
        ],
        question="",
        today=TODAY,
    )
    assert claim_problems("Empresa ABC, con ₲120.000.000", best, NAMES) == []
    asked = Evidence(
        calls=[("compras_cliente", {"cliente": "Importadora del Este", "anio": 2025}, {"total": 0})],
        question="¿Cuánto compró Importadora del Este?",
        today=TODAY,
    )
    assert claim_problems("Importadora del Este S.A. no compró nada.", asked, NAMES) == []


def test_a_badly_grouped_figure_is_wrong_whatever_its_digits() -> None:
    (problem,) = claim_problems("Almacén vendió 215.111.00 guaraníes en 2024.", CATEGORIES, NAMES)
    assert "215.111.00" in problem and "does not give" in problem


def test_a_figure_said_of_another_year_is_wrong_and_said_so() -> None:
    years = Evidence(
        calls=[
            ("ventas_anuales", {"anio": 2024}, {"anio": 2024, "total": 744000000, "facturas": 1500}),
            ("ventas_anuales", {"anio": 2025}, {"anio": 2025, "total": 850000000, "facturas": 1616}),
        ],
        question="¿Cuánto vendimos en 2024 y en 2025?",
        today=TODAY,
    )
    assert claim_problems("En 2025 vendimos ₲850.000.000 y en 2024 ₲744.000.000.", years, NAMES) == []
    (problem,) = claim_problems("En 2024 vendimos ₲850.000.000. En 2025, ₲744.000.000.", years, NAMES)
    assert "attributes" in problem and "850.000.000 (2024), 744.000.000 (2025)" in problem
