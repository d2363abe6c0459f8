"""Customer names in free text: triggers, stops, lists, and company abbreviations that end in a period."""

from __future__ import annotations

import pytest

from benchmarks.stand_ins.offline._names import extract_customers, is_abbreviation, tidy


@pytest.mark.parametrize("token", ["S.A.", "S.A", "S.R.L.", "S.A.E.C.A.", "Ltda.", "Cía.", "Inc.", "Hnos."])
def test_company_abbreviations_are_recognised(token: str) -> None:
    assert is_abbreviation(token)


@pytest.mark.parametrize("token", ["ABC", "Sur.", "2025.", "Este"])
def test_ordinary_words_are_not_abbreviations(token: str) -> None:
    assert not is_abbreviation(token)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Empresa ABC.", "Empresa ABC"),
        ("Agro Sur S.A.", "Agro Sur S.A."),
        ("Agro Sur S.A..", "Agro Sur S.A."),
        ("la Cooperativa Yvapovõ Ltda. ", "Cooperativa Yvapovõ Ltda."),
    ],
)
def test_tidy_drops_a_sentence_period_but_keeps_an_abbreviation(text: str, expected: str) -> None:
    assert tidy(text) == expected


@pytest.mark.parametrize(
    ("question", "expected"),
    [
        ("¿Cuánto compró Agro Sur S.A. en 2024?", ["Agro Sur S.A."]),
        ("¿Qué facturas pendientes tiene Frigorífico Sur S.A.E.C.A.?", ["Frigorífico Sur S.A.E.C.A."]),
        ("Compras de Pérez Hnos. S.R.L., Agro Sur S.A. y Lácteos del Norte Ltda. en 2024",
         ["Pérez Hnos. S.R.L.", "Agro Sur S.A.", "Lácteos del Norte Ltda."]),
        ("¿Cuánto nos compraron Empresa ABC y Comercial Sur?", ["Empresa ABC", "Comercial Sur"]),
        ("Mostrame lo que deben Empresa ABC y Comercial Sur", ["Empresa ABC", "Comercial Sur"]),
        ("How much did Acme Corp. and Globex Inc. buy in 2025?", ["Acme Corp.", "Globex Inc."]),
        ("¿Cuánto nos compró la empresa abc en 2024?", ["empresa abc"]),
        ('Busca clientes con "sur"', ["sur"]),
    ],
)  # fmt: skip
def test_names_are_read_whole_and_listed(question: str, expected: list[str]) -> None:
    assert extract_customers(question) == expected


@pytest.mark.parametrize(
    "question",
    [
        "¿Cuántas facturas pendientes de cobro nos quedan en total?",
        "Dame el total de facturas pendientes de pago.",
        "¿Cuánto nos compró dicho cliente el año pasado?",
        "¿Qué facturas tiene impagas nuestro principal cliente de este año?",
        "¿Debe algo nuestro mejor cliente del año pasado?",
        "How much did our best customer of 2024 buy this year?",
    ],
)
def test_keywords_referents_and_periods_are_not_names(question: str) -> None:
    assert extract_customers(question) == []
