"""Facts are parsed with ast (never eval) and evaluated against the ERP (benchmarks/scoring/facts.py)."""

from __future__ import annotations

from typing import Any

import pytest

from benchmarks.scoring.facts import FactEvaluationError, FactEvaluator, FactSyntaxError, parse_fact
from shared.security import DEMO_CALLER


def test_a_call_with_a_path_parses() -> None:
    fact = parse_fact("top_productos(anio=2025, limite=3).productos[0].producto")
    assert fact.operation == "top_productos"
    assert dict(fact.params) == {"anio": 2025, "limite": 3}
    assert fact.path == ("productos", 0, "producto")


def test_string_parameters_and_negative_indexes_parse() -> None:
    fact = parse_fact("compras_cliente(cliente='Empresa ABC', anio=2025).total")
    assert dict(fact.params) == {"cliente": "Empresa ABC", "anio": 2025}
    assert parse_fact("top_productos(anio=2025).productos[-1]").path == ("productos", -1)


@pytest.mark.parametrize(
    "source",
    [
        "__import__('os').system('echo pwned')",
        "ventas_anuales(anio=2025",
        "ventas_anuales(2025).total",
        "ventas_anuales(anio=1 + 2024).total",
        "ventas_anuales(anio=x).total",
        "ventas_anuales(**{'anio': 2025})",
        "erp.ventas_anuales(anio=2025)",
        "ventas_anuales(anio=2025).total + 1",
        "ventas_anuales(anio=2025).productos[0:2]",
        "ventas_anuales(anio={[1]: 2}).total",
        "ventas_anuales(anio=2025)\x00",
        "compras_cliente(cliente=os.system('ls'), anio=2025).total",
        "compras_cliente(cliente=mejor_cliente(2025).cliente, anio=2025).total",
    ],
)
def test_anything_but_a_call_with_literals_and_a_path_is_refused(source: str) -> None:
    with pytest.raises(FactSyntaxError):
        parse_fact(source)


def test_the_articles_facts_evaluate_against_the_seeded_erp(registry: Any, erp: Any) -> None:
    facts = FactEvaluator(registry, erp)
    assert facts.evaluate("ventas_anuales(anio=2025).total") == 850_000_000
    assert facts.evaluate("mejor_cliente(anio=2025).cliente") == "Empresa ABC"
    assert facts.evaluate("compras_cliente(cliente='Empresa ABC', anio=2025).total") == 120_000_000


def test_a_path_into_a_list_reads_the_ranked_item(registry: Any, erp: Any) -> None:
    facts = FactEvaluator(registry, erp)
    top = registry.execute(erp, "top_productos", {"anio": 2025, "limite": 3}, caller=DEMO_CALLER)
    assert (
        facts.evaluate("top_productos(anio=2025, limite=3).productos[0].producto")
        == top["productos"][0]["producto"]
    )


def test_each_distinct_call_runs_once(registry: Any, erp: Any) -> None:
    calls: list[str] = []

    class CountingRegistry:
        def execute(self, erp_: Any, name: str, params: dict[str, Any], caller: Any) -> dict[str, Any]:
            calls.append(name)
            return dict(registry.execute(erp_, name, params, caller=caller))

    facts = FactEvaluator(CountingRegistry(), erp)  # type: ignore[arg-type]
    facts.evaluate("mejor_cliente(anio=2025).cliente")
    facts.evaluate("mejor_cliente(anio=2025).total")
    facts.evaluate("mejor_cliente(anio=2024).total")
    assert calls == ["mejor_cliente", "mejor_cliente"]


@pytest.mark.parametrize(
    "source",
    [
        "no_existe(anio=2025).total",
        "ventas_anuales(anio=2025).no_hay",
        "top_productos(anio=2025, limite=3).productos[7]",
        "ventas_anuales(anio='dos mil').total",
        "mejor_cliente(anio=2025).cliente[0]",
        "compras_cliente(cliente=mejor_cliente(anio=2025).no_hay, anio=2025).total",
    ],
)
def test_unevaluable_facts_raise_a_clear_error(registry: Any, erp: Any, source: str) -> None:
    with pytest.raises(FactEvaluationError):
        FactEvaluator(registry, erp).evaluate(source)


def test_a_fact_can_take_another_fact_as_a_parameter(registry: Any, erp: Any) -> None:
    fact = parse_fact("compras_cliente(cliente=mejor_cliente(anio=2024).cliente, anio=2026).total")
    assert list(fact.operations()) == ["compras_cliente", "mejor_cliente"]
    facts = FactEvaluator(registry, erp)
    best = facts.evaluate("mejor_cliente(anio=2024).cliente")
    assert (
        facts.evaluate(fact)
        == registry.execute(erp, "compras_cliente", {"cliente": best, "anio": 2026}, caller=DEMO_CALLER)[
            "total"
        ]
    )
