"""The packaged tuning suite: its size, its categories, the article verbatim, and facts that evaluate (the
held-out questions beside it are pinned by ``tests/test_heldout_leakage.py``)."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

from benchmarks.scenario import Scenario, default_scenarios_dir, load_scenarios
from benchmarks.scoring.turn import TurnScorer
from shared.erp.users import DEFAULT_USER, caller_for

REQUIRED_CATEGORIES = {
    "articulo",
    "single_operation",
    "multiple_operations",
    "dependent_operations",
    "follow_up",
    "small_talk",
    "unsupported",
    "adversarial",
    "long_conversation",
}


@pytest.fixture(scope="module")
def suite(registry: Any) -> list[Scenario]:
    return load_scenarios([default_scenarios_dir()], registry=registry)


def test_the_packaged_scenarios_are_the_suite_then_the_heldout_questions(
    suite: list[Scenario], registry: Any
) -> None:
    packaged = load_scenarios(registry=registry)
    assert packaged[: len(suite)] == suite and all(s.split == "suite" for s in suite)
    assert packaged[len(suite) :] and all(s.split == "heldout" for s in packaged[len(suite) :])


def test_the_suite_is_large_enough_and_covers_every_category(suite: list[Scenario]) -> None:
    assert len(suite) >= 30
    assert sum(len(s.turns) for s in suite) >= 80
    assert {s.category for s in suite} >= REQUIRED_CATEGORIES
    assert Counter(s.id for s in suite).most_common(1)[0][1] == 1


def test_there_is_one_fifty_turn_conversation(suite: list[Scenario]) -> None:
    long = [s for s in suite if s.category == "long_conversation"]
    assert [len(s.turns) for s in long] == [50]
    expects = long[0].turns
    assert any(t.expect.operations == [] for t in expects), "it mixes in small talk"
    assert any(t.user.startswith("¿Y ") for t in expects), "it has follow-ups"


def test_the_articles_dialogues_are_there_verbatim(suite: list[Scenario]) -> None:
    articulo = [[t.user for t in s.turns] for s in suite if s.category == "articulo"]
    assert ["¿Cuánto vendimos en 2025?"] in articulo
    assert ["¿Cuánto vendimos en 2025 y cuál fue nuestro mejor cliente?"] in articulo
    assert any(turns[-2:] == ["¿Cuál fue mi mejor cliente?", "¿Y cuánto compró?"] for turns in articulo)


def test_no_expected_number_is_typed_in(suite: list[Scenario]) -> None:
    for scenario in suite:
        for turn in scenario.turns:
            assert not turn.expect.answer_contains, f"{scenario.id}: use facts, not literal answers"


def test_every_fact_and_expected_call_evaluates_in_the_erp(
    suite: list[Scenario], registry: Any, demo_erp: Any
) -> None:
    for scenario in suite:
        for turn in scenario.turns:
            # As the turn's user sees the ERP: bruno's facts are about bruno's customers.
            caller = caller_for(demo_erp, turn.as_user or scenario.user or DEFAULT_USER)
            scorer = TurnScorer(registry, demo_erp).as_caller(caller)
            for fact in turn.expect.facts:
                assert scorer.facts.evaluate(fact) not in (None, "", 0), (scenario.id, fact)
            for op in turn.expect.operations or []:
                registry.execute(demo_erp, op.funcion, scorer.resolve(op.parametros), caller=caller)


def test_the_article_figures_are_the_seeded_ones(registry: Any, demo_erp: Any) -> None:
    scorer = TurnScorer(registry, demo_erp)
    assert scorer.facts.evaluate("ventas_anuales(anio=2025).total") == 850_000_000
    assert scorer.facts.evaluate("compras_cliente(cliente='Empresa ABC', anio=2025).total") == 120_000_000
