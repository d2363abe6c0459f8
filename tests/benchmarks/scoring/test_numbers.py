"""Numbers in answers match however they are written: the figure parser the scorer reads them with
(shared/figures.py, also the ERP's grounding check's) and what the scorer adds (benchmarks/scoring/numbers.py:
an amount in another currency is not the ERP's figure)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from benchmarks.scoring.numbers import foreign_amounts, mentions_number
from shared.figures import extract_numbers, parse_number


def es(n: int) -> str:
    return f"{n:,}".replace(",", ".")


def en(n: int) -> str:
    return f"{n:,}"


@pytest.mark.parametrize(
    "text",
    [
        "En 2025 vendimos ₲850.000.000.",
        "Las ventas fueron 850.000.000",
        "Total: 850,000,000",
        "Vendimos 850 millones de guaraníes.",
        "Gs. 850.000.000",
        "₲ 850000000",
        "850\u00a0000\u00a0000 guaraníes",
        "unos 0,85 mil millones",
    ],
)
def test_the_article_figure_matches_in_every_notation(text: str) -> None:
    assert mentions_number(text, 850_000_000)


@pytest.mark.parametrize(
    ("token", "expected"),
    [
        ("1.500", (1500.0, 0)),
        ("1,500", (1500.0, 0)),
        ("12,5", (12.5, 1)),
        ("12.5", (12.5, 1)),
        ("1.234.567,89", (1234567.89, 2)),
        ("1,234,567.89", (1234567.89, 2)),
        ("2025", (2025.0, 0)),
    ],
)
def test_separators_follow_spanish_and_english_conventions(token: str, expected: tuple[float, int]) -> None:
    assert parse_number(token) == expected


def test_a_different_number_does_not_match() -> None:
    assert not mentions_number("Vendimos ₲850.000.001", 850_000_000)
    assert not mentions_number("Vendimos 851 millones", 850_000_000)
    assert not mentions_number("No tengo ese dato.", 850_000_000)


def test_rounded_millions_match_within_half_the_last_digit() -> None:
    assert mentions_number("unos 853,4 millones", 853_421_000)
    assert not mentions_number("unos 853,4 millones", 853_500_000)


def test_trailing_punctuation_and_years_are_separate_numbers() -> None:
    values = [m.value for m in extract_numbers("En 2025, ₲120.000.000. Luego 3.")]
    assert values == [2025, 120_000_000, 3]


amounts = st.integers(min_value=0, max_value=10**12)


@given(amounts)
def test_grouped_and_plain_integers_round_trip(n: int) -> None:
    for text in (str(n), es(n), en(n), f"₲{es(n)}", f"Gs. {es(n)}", f"un total de {en(n)}."):
        assert mentions_number(text, n), text


@given(amounts)
def test_exact_notations_never_match_a_neighbour(n: int) -> None:
    for text in (es(n), en(n), f"₲{es(n)}"):
        assert not mentions_number(text, n + 1), text


@given(st.integers(min_value=1, max_value=999_999))
def test_whole_millions_match_in_words(millions: int) -> None:
    assert mentions_number(f"vendimos {millions} millones", millions * 1_000_000)


@given(st.integers(min_value=1_000_000, max_value=10**11))
def test_millions_with_one_decimal_match_the_exact_amount(n: int) -> None:
    text = f"{n / 1e6:,.1f} millones".replace(",", "_").replace(".", ",").replace("_", ".")
    assert mentions_number(text, n), text


@pytest.mark.parametrize(
    "text",
    [
        "₲1.850.000.000",
        "8.500.000.000",
        "₲85.000.000",
        "850.000",
        "0.850 millones",
        "850 mil",
        "1.850 millones",
        "8.500 millones",
    ],
)
def test_the_article_figure_is_not_found_inside_other_figures(text: str) -> None:
    assert not mentions_number(text, 850_000_000)


def test_a_leading_zero_is_a_decimal_point_not_a_thousands_group() -> None:
    assert mentions_number("0,850 mil millones", 850_000_000)
    assert parse_number("0.850") == (0.85, 3)
    assert parse_number("1234.567") == (1234.567, 3)


def test_decimals_match_exactly_written_amounts() -> None:
    for text in ("62313500.5", "62.313.500,5", "62,313,500.50", "₲62.313.500,50"):
        assert mentions_number(text, 62_313_500.5), text
    assert not mentions_number("62.313.500", 62_313_500.5)
    assert not mentions_number("62313500.4", 62_313_500.5)


def test_a_rounded_figure_must_keep_two_significant_digits() -> None:
    assert not mentions_number("cerca de 1 millón", 1_400_000)
    assert not mentions_number("unos 2 mil millones", 2_400_000_000)
    assert mentions_number("1,4 millones", 1_400_000)
    assert mentions_number("1 millón", 1_000_000)


@pytest.mark.parametrize(
    "token", ["1.5.3", "12.05.2025", "1.234,567.8", "1,234.567,8", "8,50,00,000", "12\u00a05"]
)
def test_malformed_groupings_are_not_read_as_numbers(token: str) -> None:
    assert parse_number(token) is None
    assert extract_numbers(f"versión {token} lista") == []


@pytest.mark.parametrize("token", ["396.100.00", "1.5.3", "12.05.2025", "8,50,00,000"])
def test_a_malformed_number_asked_for_is_a_mention_that_matches_no_value(token: str) -> None:
    (mention,) = extract_numbers(f"Se vendieron {token} unidades", malformed=True)
    assert mention.malformed and mention.text == token
    assert not any(mention.matches(value) for value in (396_100_000, 39_610_000, 396_100, 0.0, 1.0))
    assert not mentions_number(f"Se vendieron {token} unidades", 39_610_000)
    assert not mentions_number(f"Se vendieron {token} unidades", 396_100_000)


def test_well_formed_numbers_are_not_malformed() -> None:
    mentions = extract_numbers("₲396.100.000, 12.05 y 850 millones", malformed=True)
    assert [(m.value, m.malformed) for m in mentions] == [
        (396_100_000, False),
        (12.05, False),
        (850e6, False),
    ]


@given(st.text(alphabet="0123456789.,\u00a0 ₲abmilones", max_size=40))
def test_any_text_is_scanned_without_raising(text: str) -> None:
    for mention in extract_numbers(text):
        assert mention.value >= 0 and mention.tolerance >= 0


@given(st.integers(min_value=1, max_value=10**12))
def test_a_figure_never_matches_inside_a_longer_grouped_figure(n: int) -> None:
    for text in (f"₲1.{es(n)}", f"{es(n)}.000", f"1,{en(n)}"):
        assert not mentions_number(text, n), text


@pytest.mark.parametrize(
    "text",
    ["Vendimos $38.158.000.", "Vendimos US$ 38.158.000", "Vendimos 38.158.000 dólares.", "38.158.000 pesos"],
)
def test_an_amount_in_another_currency_is_not_the_erps_figure(text: str) -> None:
    assert not mentions_number(text, 38_158_000)
    assert mentions_number(
        text.replace("$", "₲").replace("dólares", "guaraníes").replace("pesos", "Gs"), 38_158_000
    )


def test_amounts_in_another_currency_are_listed_as_written() -> None:
    text = "Taladro: $38,158,000; aceite: 37.753.000 pesos; bebida: US$ 34.937.000; y ₲850.000.000 en total."
    assert foreign_amounts(text) == ["$38,158,000", "37.753.000 pesos", "US$ 34.937.000"]


def test_guarani_amounts_and_counts_are_not_foreign() -> None:
    assert foreign_amounts("₲850.000.000, Gs. 120.000.000, 850 millones de guaraníes y 1616 facturas") == []
