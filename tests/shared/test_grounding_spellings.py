"""Hostile spellings of a figure are still figures: the grounding check reads each one and reports it when no
ERP source supports it, and grounds it when one does.

Specified here, for :func:`shared.grounding.ungrounded_figures` over
:func:`shared.grounding.grounding_sources`:

- numbers in words (Spanish and English) are figures when they name a scale or come to 100 or more; small
  words in prose (``uno de sus clientes``, ``las dos facturas``) and ``mil`` alone are not;
- scientific notation with either decimal separator is its value times the power of ten;
- a currency glued to digits is an amount (``PYG990000000``), while codes glued to letters stay codes;
- a currency before dash-joined digits is an amount; bare dash-joined digits are grounded only by the very
  code in the ERP's data (its RUC, its invoice number); labelled ones (``RUC 80000001-1``) are identifiers;
- a person's rounding applies against the sources themselves, not against sums, differences or percentages
  of two of them, and never to a percentage;
- spellings caught before stay caught, and every spelling is read in linear time.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from datetime import date
from typing import Any

import pytest

from shared.grounding import grounding_sources, ungrounded_figures

TODAY = date(2026, 11, 30)
SALES = {"anio": 2025, "total": 850_000_000, "facturas": 1616}
"""What the ERP returned in most rows: no hostile figure is among its values or their combinations."""
COUNTS = {"anio": 2025, "facturas": 1616}
CUSTOMER = {"cliente": "Empresa ABC", "ruc": "80000001-3", "total": 120_000_000}
INVOICE = {"numero": "001-001-0000169", "cliente": "Importadora del Este S.A.", "total": 1_500_000}


def check(answer: str, *results: Any, texts: tuple[str, ...] = ()) -> list[str]:
    return ungrounded_figures(answer, grounding_sources(results, texts, TODAY))


def row(
    answer: str, results: tuple[Any, ...], flagged: list[str], name: str, texts: tuple[str, ...] = ()
) -> Any:
    """One spelling: the answer, what the ERP returned (and the texts it sent), the figures to report."""
    return pytest.param(answer, results, texts, flagged, id=name)


SPELLINGS = [
    # 1. numbers in words: read when they name a scale or come to 100 or more
    row("Vendimos nueve mil millones.", (SALES,), ["nueve mil millones"], "words-es-9e9-flagged"),
    row("Vendimos nueve mil millones.", ({"total": 9e9},), [], "words-es-9e9-grounded"),
    row(
        "Vendimos novecientos noventa millones.", (SALES,), ["novecientos noventa millones"], "words-es-990e6"
    ),
    row("Vendimos novecientos noventa millones.", ({"total": 990e6},), [], "words-es-990e6-grounded"),
    row("We sold nine hundred ninety million.", (SALES,), ["nine hundred ninety million"], "words-en-990e6"),
    row("We sold nine hundred ninety million.", ({"total": 990e6},), [], "words-en-990e6-grounded"),
    row("We sold one billion.", (SALES,), ["one billion"], "words-en-billion-is-1e9"),
    row("We sold one billion.", ({"total": 1e9},), [], "words-en-billion-grounded"),
    row("Vendimos dos millones quinientos mil.", (SALES,), ["dos millones quinientos mil"], "words-es-2.5e6"),
    row("Vendimos dos millones quinientos mil.", ({"total": 2_500_000},), [], "words-es-2.5e6-grounded"),
    row("Vendimos un billón.", ({"total": 1e9},), ["un billón"], "words-es-billon-is-1e12"),
    row("Hubo novecientos clientes.", (SALES,), ["novecientos"], "words-hundreds-alone"),
    row("Vendimos ochocientos cincuenta millones.", (SALES,), [], "words-es-850e6-grounded"),
    row("Unos noventa y nueve mil clientes.", ({"total": 99_000},), [], "words-es-y-joins-tens-and-units"),
    # digits with a scale word keep working
    row("Vendimos 990 millones.", (SALES,), ["990 millones"], "digits-millones-flagged"),
    row("Vendimos 990 millones.", ({"total": 990e6},), [], "digits-millones-grounded"),
    row("Vendimos 9,5 mil millones.", ({"total": 9.5e9},), [], "digits-mil-millones-grounded"),
    row("Vendimos 1,2 billones.", ({"total": 1.2e12},), [], "digits-billones-grounded"),
    # 2. scientific notation, either decimal separator
    row("Vendimos 9.1E8.", (SALES,), ["9.1E8"], "sci-dot-upper"),
    row("Vendimos 9,1e8.", (SALES,), ["9,1e8"], "sci-comma"),
    row("Vendimos 8.5e9.", (SALES,), ["8.5e9"], "sci-dot"),
    row("Vendimos 1e9.", (SALES,), ["1e9"], "sci-integer"),
    row("Vendimos 9,1e8.", ({"total": 910_000_000},), [], "sci-comma-grounded"),
    row("Vendimos 9.1E8.", ({"total": 910_000_000},), [], "sci-dot-grounded"),
    row("Vendimos 1e9.", ({"total": 1e9},), [], "sci-integer-grounded"),
    # 3. a currency glued to digits is an amount
    row("Vendimos PYG990000000.", (SALES,), ["990000000"], "glued-PYG"),
    row("Vendimos USD1500000.", (SALES,), ["1500000"], "glued-USD"),
    row("Vendimos Gs990000000.", (SALES,), ["990000000"], "glued-Gs"),
    row("Vendimos Gs.990000000.", (SALES,), ["990000000"], "glued-Gs-dot"),
    row("Vendimos US$1500000.", (SALES,), ["1500000"], "glued-US-dollar"),
    row("Vendimos EUR1500.", (SALES,), ["1500"], "glued-EUR"),
    row("Vendimos PYG850000000.", (SALES,), [], "glued-PYG-grounded"),
    row("Vendimos Gs850000000 y USD1500000.", (SALES, INVOICE), [], "glued-Gs-USD-grounded"),
    # 4. dash-joined digits: an amount after a currency; a bare code only if the ERP wrote it
    row("Vendimos ₲990000000-1.", (SALES,), ["990000000"], "ruc-shape-after-currency"),
    row("Vendimos 990000-000.", (SALES,), ["990000-000"], "ruc-shape-bare"),
    row(
        "El cliente 80000001-3 compró ₲120.000.000.", (SALES,), ["80000001-3", "120.000.000"], "ruc-invented"
    ),
    row("El cliente 80000001-3 compró ₲120.000.000.", (CUSTOMER,), [], "ruc-the-erps-own"),
    row("Es el 80000001-3.", (), [], "ruc-in-the-question", texts=("¿De quién es el RUC 80000001-3?",)),
    row(
        "La 001-001-0000169 es de ₲1.500.000.", (SALES,), ["001-001-0000169", "1.500.000"], "invoice-invented"
    ),
    row("La 001-001-0000169 es de ₲1.500.000.", (INVOICE,), [], "invoice-the-erps-own"),
    row("Cliente con RUC 80000001-1.", (SALES,), [], "ruc-labelled-is-an-identifier"),
    row("Factura 001-001-0000169 pendiente.", (SALES,), [], "invoice-labelled-is-an-identifier"),
    # 5. rounding against the sources only; percentages at their written precision, never against a sum
    row("Crecimos un 4.000%.", (COUNTS,), ["4.000"], "percent-round-number-no-tolerance"),
    row("Crecimos un 4.000 por ciento.", (COUNTS,), ["4.000"], "percent-words-round-number"),
    row("Hay 4.000 facturas.", (COUNTS,), ["4.000"], "derived-sum-at-written-precision"),
    row("Vendimos unos ₲850.000.000.", ({"total": 849_850_000},), [], "rounding-against-a-source"),
    row("El margen fue de 12,5%.", ({"margen": 12.5},), [], "percent-a-result-gives"),
    row("Es el 12,5 % del total.", ({"parte": 100}, {"total": 800}), [], "percent-a-ratio-gives"),
    row("Entre los dos suman ₲1.650.000.000.", ({"total": 850e6}, {"total": 800e6}), [], "derived-sum-exact"),
    # already caught: keep caught
    row("Vendimos 8,5e9.", (SALES,), ["8,5e9"], "kept-sci-comma"),
    row("Vendimos 990 M.", (SALES,), ["990"], "kept-990-M"),
    row("Vendimos 990k.", (SALES,), ["990"], "kept-990k"),
    row("Vendimos 9,5 mil millones.", (SALES,), ["9,5 mil millones"], "kept-mil-millones"),
    row("Vendimos 1,2 billones.", (SALES,), ["1,2 billones"], "kept-billones"),
    row("Vendimos ٩٩٠٠٠٠٠٠٠.", (SALES,), ["٩٩٠٠٠٠٠٠٠"], "kept-arabic-indic-digits"),
    row("Vendimos 990\u202f000\u202f000.", (SALES,), ["990\u202f000\u202f000"], "kept-narrow-nbsp"),
    row("Vendimos 9×10⁸.", (SALES,), ["9", "10"], "kept-times-ten-to-the"),
    # false positives: not figures
    row("El SKU12, el F-001 y el A-1 están agotados.", (SALES,), [], "codes-glued-to-letters"),
    row("Uno de sus clientes compró ₲850.000.000.", (SALES,), [], "uno-de-sus-clientes"),
    row("Las dos facturas suman ₲850.000.000.", (SALES,), [], "las-dos-facturas"),
    row("Mil gracias por su consulta.", (SALES,), [], "mil-alone-in-prose"),
    row("Creció un doce por ciento.", (SALES,), [], "small-words-percent"),
    row("En 2025 vendimos ₲850.000.000; en 2026, nada.", (SALES,), [], "years"),
    row("Vence el 2026-10-01, o el 30/11/2026 a las 10:30.", (SALES,), [], "dates-and-times"),
    row("1. Empresa ABC\n2. Comercial Sur\n3) Importadora del Este", (SALES,), [], "list-numbering"),
]


@pytest.mark.parametrize(("answer", "results", "texts", "flagged"), SPELLINGS)
def test_each_spelling_is_read_as_the_figure_it_states(
    answer: str, results: tuple[Any, ...], texts: tuple[str, ...], flagged: list[str]
) -> None:
    assert check(answer, *results, texts=texts) == flagged


def _growth(make: Callable[[int], str], small: int) -> float:
    """How much longer checking ``make(10 * small)`` takes than ``make(small)`` (best of three each), as in
    ``tests/shared/test_grounding.py``: a ratio of two lengths, no wall-clock threshold."""
    sources = grounding_sources([SALES, CUSTOMER], [], TODAY)

    def seconds(n: int) -> float:
        text = make(n)
        best = math.inf
        for _ in range(3):
            start = time.perf_counter()
            ungrounded_figures(text, sources)
            best = min(best, time.perf_counter() - start)
        return best

    return seconds(10 * small) / max(seconds(small), 1e-4)


@pytest.mark.parametrize(
    ("make", "small"),
    [
        pytest.param(lambda n: "nueve " * n, 2_000, id="nueve-run"),
        pytest.param(lambda n: "noventa y " * n, 2_000, id="joiner-run"),
        pytest.param(lambda n: "un millón " * n, 2_000, id="scale-run"),
        pytest.param(lambda n: "mil " * n, 2_000, id="mil-run"),
        pytest.param(lambda n: "PYG" + "9" * n, 5_000, id="currency-glued-digits"),
        pytest.param(lambda n: "Gs. " * n, 2_000, id="currency-without-digits"),
        pytest.param(lambda n: "₲1-" * n, 2_000, id="currency-dash-run"),
        pytest.param(lambda n: "9-" * n, 3_000, id="dash-run"),
        pytest.param(lambda n: "RUC 1-" * n, 2_000, id="labelled-dash-run"),
        pytest.param(lambda n: "1e" * n, 3_000, id="exponent-run"),
        pytest.param(lambda n: "9,1E" * n, 2_000, id="mantissa-run"),
        pytest.param(lambda n: "1e" + "9" * n, 5_000, id="long-exponent"),
        pytest.param(lambda n: "4.000% " * n, 2_000, id="percent-run"),
    ],
)
def test_every_hostile_spelling_is_checked_in_linear_time(make: Callable[[int], str], small: int) -> None:
    assert _growth(make, small) < 30  # 10 when linear, 100 when quadratic
