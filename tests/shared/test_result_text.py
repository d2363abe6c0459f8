"""The ERP's plain-text rendering of an operation's result: its own figures, written for a reader."""

from __future__ import annotations

from shared.result_text import MAX_ROWS, for_model, heading, result_lines


def test_scalars_read_as_key_and_value_with_spanish_thousands_from_five_digits() -> None:
    lines = result_lines({"anio": 2025, "total": 850000000, "facturas": 1616, "margen": 12.5, "activo": True})
    assert lines == [
        "  año: 2025",
        "  total: 850.000.000",
        "  facturas: 1616",
        "  margen: 12,5",
        "  activo: sí",
    ]


def test_a_list_shows_its_first_rows_and_how_many_more() -> None:
    rows = [{"categoria": f"C{n}", "total_ventas": 10_000 * n} for n in range(1, MAX_ROWS + 4)]
    lines = result_lines({"anio": 2025, "categorias": rows})
    assert lines[:3] == ["  año: 2025", "  categorias:", "    - categoria C1 · total ventas 10.000"]
    assert len(lines) == 2 + MAX_ROWS + 1 and lines[-1] == "    … y 3 más"


def test_an_empty_list_and_a_missing_value_say_so() -> None:
    assert result_lines({"cliente": None, "clientes": []}) == ["  cliente: –", "  clientes: ninguno"]


def test_an_operation_is_named_in_plain_words_never_as_a_call() -> None:
    assert heading("compras_cliente", {"cliente": "Empresa ABC", "anio": 2026}) == (
        "Compras cliente, cliente Empresa ABC, año 2026"
    )
    assert heading("facturas_pendientes", {}) == "Facturas pendientes"


def test_a_model_reads_large_whole_numbers_grouped_and_the_rest_as_they_are() -> None:
    result = {
        "anio": 2025,
        "total": 850000000,
        "facturas": 1616,
        "margen": 12.5,
        "activo": True,
        "cliente": "Empresa 10000",
        "categorias": [{"categoria": "Almacén", "total": 10000}, {"categoria": "Otros", "total": 9999}],
    }
    assert for_model(result) == {
        "anio": 2025,
        "total": "850.000.000",
        "facturas": 1616,
        "margen": 12.5,
        "activo": True,
        "cliente": "Empresa 10000",
        "categorias": [{"categoria": "Almacén", "total": "10.000"}, {"categoria": "Otros", "total": 9999}],
    }
    assert for_model(-1234567) == "-1.234.567"
