"""Nothing an answer states may be wrong: figures, currency, customers (benchmarks/scoring/claims.py)."""

from __future__ import annotations

from datetime import date

from benchmarks.scoring.claims import Evidence, claim_problems
from benchmarks.scoring.entities import ErpNames

NAMES = ErpNames.build(["Empresa ABC", "Importadora del Este S.A."], [("FER-008", "Taladro percutor 650 W")])
TODAY = date(2026, 11, 30)
OCTOBER = Evidence(
    results=[{"anio": 2026, "mes": 10, "total": 75820500}, {"anio": 2026, "mes": 10}],
    question="¿Y en octubre?",
    today=TODAY,
)
CATEGORIES = Evidence(
    results=[{"anio": 2024, "categorias": [{"categoria": "Almacén", "total": 215111000}]}, {"anio": 2024}],
    question="¿Cómo se repartieron las ventas de 2024 por categoría?",
    today=TODAY,
)
PRODUCTS = Evidence(
    results=[{"productos": [{"sku": "FER-008", "producto": "Taladro percutor 650 W", "total": 38158000}]}],
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
        results=[{"anio": 2025, "cliente": "Empresa ABC", "total": 120000000}], question="", today=TODAY
    )
    assert claim_problems("Empresa ABC, con ₲120.000.000", best, NAMES) == []
    asked = Evidence(results=[{"total": 0}], question="¿Cuánto compró Importadora del Este?", today=TODAY)
    assert claim_problems("Importadora del Este S.A. no compró nada.", asked, NAMES) == []
