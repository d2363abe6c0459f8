"""A failed operations check says what happened: the ERP refused an operation, it failed, or none ran."""

from __future__ import annotations

from typing import Any

from benchmarks.scenario import Expectation
from benchmarks.scoring import TurnScorer

EXPECT = Expectation.model_validate(
    {"operations": [{"funcion": "compras_cliente", "parametros": {"cliente": "Empresa ABC", "anio": 2025}}]}
)


def details(scorer: TurnScorer, refused: list[dict[str, Any]]) -> list[str]:
    return scorer.score(EXPECT, answer="No sé.", operations=[], state=None, refused=refused).details


def test_an_operation_the_erp_refused_is_named_with_its_reason(registry: Any, erp: Any) -> None:
    refused = [
        {"funcion": "compras_cliente", "parametros": {"cliente": "null"}, "error": "Ningún cliente coincide."}
    ]

    found = details(TurnScorer(registry, erp), refused)

    assert "the ERP refused operation compras_cliente: Ningún cliente coincide." in found
    assert not any("no operation ran" in line for line in found)


def test_an_operation_that_broke_in_the_erp_is_said_to_have_failed(registry: Any, erp: Any) -> None:
    refused = [{"funcion": "compras_cliente", "parametros": {}, "error": "error interno (ref 1a2b)"}]

    assert any(
        line.startswith("operation compras_cliente failed in the ERP")
        for line in details(TurnScorer(registry, erp), refused)
    )


def test_no_call_at_all_is_said_to_be_no_call(registry: Any, erp: Any) -> None:
    assert "no operation ran: the model answered without calling the ERP" in details(
        TurnScorer(registry, erp), []
    )
