"""A turn passes when its operations, facts, state and answer checks all hold (benchmarks/scoring/turn.py)."""

from __future__ import annotations

import gc
import time
from collections.abc import Callable
from typing import Any

import pytest

from benchmarks.scenario import Expectation
from benchmarks.scoring.turn import TurnScorer, value_in_answer

ARTICLE = Expectation.model_validate(
    {
        "operations": [
            {"funcion": "ventas_anuales", "parametros": {"anio": 2025}},
            {"funcion": "mejor_cliente", "parametros": {"anio": 2025}},
        ],
        "facts": [
            "ventas_anuales(anio=2025).total",
            "mejor_cliente(anio=2025).cliente",
            "mejor_cliente(anio=2025).total",
        ],
        "state": {"cliente_actual": "Empresa ABC"},
    }
)
OPS = [
    {"funcion": "mejor_cliente", "parametros": {"anio": 2025}},
    {"funcion": "ventas_anuales", "parametros": {"anio": "2025"}},
]
ANSWER = (
    "En 2025 las ventas fueron de ₲850.000.000. "
    "El mejor cliente fue Empresa ABC, con compras por 120 millones."
)


def test_the_articles_answer_passes(scorer: TurnScorer) -> None:
    score = scorer.score(ARTICLE, answer=ANSWER, operations=OPS, state={"cliente_actual": "empresa abc"})
    assert score.passed, score.details
    assert (score.operations, score.facts, score.state, score.answer) == (True, True, True, None)


def test_a_missing_figure_fails_the_facts_check(scorer: TurnScorer) -> None:
    score = scorer.score(ARTICLE, answer="El mejor cliente fue Empresa ABC.", operations=OPS, state=None)
    assert not score.passed
    assert score.facts is False and score.operations is True
    assert any("ventas_anuales(anio=2025).total" in d for d in score.details)


def test_state_is_skipped_when_the_mode_produces_none_and_a_wrong_or_empty_one_fails(
    scorer: TurnScorer,
) -> None:
    assert scorer.score(ARTICLE, answer=ANSWER, operations=OPS, state=None).state is None
    for state in ({"cliente_actual": "Otro"}, {}):
        wrong = scorer.score(ARTICLE, answer=ANSWER, operations=OPS, state=state)
        assert wrong.state is False and not wrong.passed


def test_nothing_may_be_executed_on_an_injection(scorer: TurnScorer) -> None:
    expect = Expectation.model_validate({"operations": [], "answer_not_contains": ["DROP"]})
    assert scorer.score(expect, answer="No puedo hacer eso.", operations=[], state=None).passed
    leaked = scorer.score(expect, answer="Ejecuté drop table.", operations=[], state=None)
    assert leaked.answer is False
    acted = scorer.score(expect, answer="Listo.", operations=OPS[:1], state=None)
    assert acted.operations is False


def test_fact_references_in_expected_parameters_resolve_from_the_erp(scorer: TurnScorer) -> None:
    expect = Expectation.model_validate(
        {
            "operations": [
                {"funcion": "mejor_cliente", "parametros": {"anio": 2024}},
                {
                    "funcion": "compras_cliente",
                    "parametros": {"cliente": {"$fact": "mejor_cliente(anio=2024).cliente"}, "anio": 2024},
                },
            ]
        }
    )
    best = scorer.facts.evaluate("mejor_cliente(anio=2024).cliente")
    ops = [
        {"funcion": "mejor_cliente", "parametros": {"anio": 2024}},
        {"funcion": "compras_cliente", "parametros": {"cliente": best, "anio": 2024}},
    ]
    assert scorer.score(expect, answer="", operations=ops, state=None).operations is True


def test_a_failed_turn_never_passes(scorer: TurnScorer) -> None:
    score = scorer.score(Expectation(), answer="", operations=[], state=None, failed=True)
    assert not score.passed and score.details[0] == "the turn failed"


def test_a_broken_fact_fails_the_turn_with_a_scenario_error(registry: Any, erp: Any) -> None:
    expect = Expectation.model_validate({"facts": ["ventas_anuales(anio=2025).no_hay"]})
    score = TurnScorer(registry, erp).score(expect, answer="x", operations=[], state=None)
    assert not score.passed and "scenario error" in score.details[0]


def test_answer_contains_any_accepts_one_of_several_phrasings(scorer: TurnScorer) -> None:
    expect = Expectation.model_validate({"answer_contains_any": ["no puedo", "no tengo"]})
    assert scorer.score(expect, answer="No tengo esa información.", operations=[], state=None).passed
    assert not scorer.score(expect, answer="Claro.", operations=[], state=None).passed


def test_names_in_answers_match_without_accents() -> None:
    assert value_in_answer("Distribuidora Ñandutí S.A.", "fue distribuidora NANDUTI s.a.")
    assert value_in_answer(850_000_000, "₲850.000.000")
    assert not value_in_answer(850_000_000, "₲85.000.000")


def test_names_match_as_whole_words_whatever_the_punctuation() -> None:
    assert value_in_answer("Comercial Guaraní S.A.", "Comercial Guaraní S.A, con ₲1")
    assert value_in_answer("80012345-6", "Su RUC es 80012345-6.")
    assert not value_in_answer("Empresa AB", "El mejor cliente fue Empresa ABC.")
    assert not value_in_answer("Aceite", "Vendimos Aceites varios.")
    assert value_in_answer(["Empresa ABC", 120_000_000], "Empresa ABC compró 120 millones")
    assert not value_in_answer(True, "Así es.")


HOSTILE_ANSWERS: dict[str, Callable[[int], str]] = {
    "one long word": lambda size: "En 2025 " + "A" * size,
    "one long identifier": lambda size: "En 2025 " + ("A1" * size)[:size],
    "digits": lambda size: "₲" + "1" * size,
    "number words": lambda size: ("ochocientos " * size)[:size],
}
"""Recorded answers that could make a backtracking reader slow (``rescore`` reads whatever a run recorded)."""


def scoring_seconds(scorer: TurnScorer, answer: str) -> float:
    """The least CPU time of three scorings of ``answer`` (other processes on the machine do not count)."""
    runs = []
    gc.collect()
    gc.disable()  # a collection of other tests' garbage is not the scorer's time
    try:
        for _ in range(3):
            start = time.process_time()
            scorer.score(ARTICLE, answer=answer, operations=OPS, state=None)
            runs.append(time.process_time() - start)
    finally:
        gc.enable()
    return max(min(runs), 1e-3)  # the floor keeps a too-quick small run from inflating the ratio


@pytest.mark.parametrize("shape", sorted(HOSTILE_ANSWERS))
def test_scoring_takes_time_in_proportion_to_the_answer(scorer: TurnScorer, shape: str) -> None:
    """A 100,000-character answer costs about ten times a 10,000-character one, never a hundred."""
    make = HOSTILE_ANSWERS[shape]
    small, large = scoring_seconds(scorer, make(10_000)), scoring_seconds(scorer, make(100_000))
    assert large < 30 * small
