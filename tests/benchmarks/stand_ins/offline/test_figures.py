"""The stand-in reads results as a model does: the figures the ERP writes out are numbers again."""

from __future__ import annotations

from benchmarks.stand_ins.offline._figures import read_figures
from shared.result_text import for_model


def test_what_the_erp_writes_for_a_model_reads_back_as_the_result() -> None:
    result = {
        "anio": 2025,
        "total": 850_000_000,
        "facturas": 1616,
        "categorias": [
            {"categoria": "Almacén", "total": 237_250_000},
            {"categoria": "Otros", "total": -12_500},
        ],
    }
    assert read_figures(for_model(result)) == result


def test_only_whole_grouped_figures_are_read_as_numbers() -> None:
    texts = {"ruc": "80000001-3", "precio": "1.5", "sku": "ALM.004", "nota": "850.000.000 en 2025"}
    assert read_figures(texts) == texts
