"""A failed operations check says what happened: the ERP refused an operation, it failed, or none ran."""

from __future__ import annotations

from typing import Any

import pytest

from benchmarks.scenario import Expectation
from benchmarks.scoring import TurnScorer

EXPECT = Expectation.model_validate(
    {"operations": [{"funcion": "compras_cliente", "parametros": {"cliente": "Empresa ABC", "anio": 2025}}]}
)


@pytest.mark.parametrize(
    ("refused", "said"),
    [
        (
            [
                {
                    "funcion": "compras_cliente",
                    "parametros": {"cliente": "null"},
                    "error": "Ningún cliente coincide.",
                }
            ],
            "the ERP refused operation compras_cliente: Ningún cliente coincide.",
        ),
        (
            [{"funcion": "compras_cliente", "parametros": {}, "error": "error interno (ref 1a2b)"}],
            "operation compras_cliente failed in the ERP (error interno (ref 1a2b))",
        ),
        ([], "no operation ran: the model answered without calling the ERP"),
    ],
)
def test_a_failed_operations_check_says_what_happened(
    registry: Any, erp: Any, refused: list[dict[str, Any]], said: str
) -> None:
    details = TurnScorer(registry, erp).score(
        EXPECT, answer="No sé.", operations=[], state=None, refused=refused
    )

    assert said in details.details
    assert any("no operation ran" in line for line in details.details) is (not refused)
