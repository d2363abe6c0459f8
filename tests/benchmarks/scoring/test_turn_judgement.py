"""The turn scorer judges what the answer says, as a careful reader would (benchmarks/scoring/turn.py): what
the question asked, nothing stated wrong, no machinery, and the answer rather than the path."""

from __future__ import annotations

from typing import Any

from benchmarks.scenario import Expectation
from benchmarks.scoring.turn import TurnScorer

BEST = {"funcion": "mejor_cliente", "parametros": {"anio": 2025}}
WHO = {"operations": [BEST], "facts": ["mejor_cliente(anio=2025).cliente", "mejor_cliente(anio=2025).total"]}
BOUGHT = Expectation.model_validate(
    {
        "operations": [
            {
                "funcion": "compras_cliente",
                "parametros": {"cliente": {"$fact": "mejor_cliente(anio=2025).cliente"}, "anio": 2025},
            }
        ],
        "facts": ["compras_cliente(cliente=mejor_cliente(anio=2025).cliente, anio=2025).total"],
    }
)


def _one(funcion: str, **parametros: Any) -> list[dict[str, Any]]:
    return [{"funcion": funcion, "parametros": parametros}]


def test_a_who_question_is_answered_by_the_name(scorer: TurnScorer) -> None:
    asks_name = Expectation.model_validate({**WHO, "asks": "name"})
    assert scorer.score(asks_name, answer="Empresa ABC", operations=[BEST], state=None).passed
    every_fact = Expectation.model_validate(WHO)
    assert not scorer.score(every_fact, answer="Empresa ABC", operations=[BEST], state=None).passed


def test_a_figure_not_asked_for_must_still_be_right(scorer: TurnScorer) -> None:
    asks_name = Expectation.model_validate({**WHO, "asks": "name"})
    score = scorer.score(asks_name, answer="Empresa ABC, con ₲100.000.000", operations=[BEST], state=None)
    assert not score.passed and score.facts is True and score.claims is False


def test_a_how_much_question_is_answered_by_the_figure(scorer: TurnScorer) -> None:
    expect = Expectation.model_validate(
        {
            "operations": [BEST, *_one("compras_cliente", cliente="Empresa ABC", anio=2025)],
            "facts": [
                "mejor_cliente(anio=2025).cliente",
                "compras_cliente(cliente='Empresa ABC', anio=2025).total",
            ],
            "asks": "figure",
        }
    )
    ops = [BEST, *_one("compras_cliente", cliente="Empresa ABC", anio=2025)]
    assert scorer.score(expect, answer="Nos compró ₲120.000.000.", operations=ops, state=None).passed


def test_a_follow_up_answered_right_from_the_conversation_passes_without_a_call(scorer: TurnScorer) -> None:
    answer = "El total comprado por Empresa ABC en 2025 fue 120000000."
    score = scorer.score(BOUGHT, answer=answer, operations=[], state=None)
    assert score.passed and score.operations is True, score.details


def test_without_a_call_the_answer_must_name_the_subject(scorer: TurnScorer) -> None:
    score = scorer.score(
        BOUGHT, answer="El cliente Juan Pérez compró 120000000 guaraníes.", operations=[], state=None
    )
    assert not score.passed and score.operations is False
    assert "no operation ran: the model answered without calling the ERP" in score.details


def test_without_a_call_a_name_alone_does_not_stand(scorer: TurnScorer) -> None:
    asks_name = Expectation.model_validate({**WHO, "asks": "name"})
    assert not scorer.score(asks_name, answer="Empresa ABC", operations=[], state=None).passed


def test_a_wrong_or_refused_call_still_fails_whatever_the_answer(scorer: TurnScorer) -> None:
    answer = "El total comprado por Empresa ABC en 2025 fue 120000000."
    wrong = scorer.score(BOUGHT, answer=answer, operations=_one("ventas_anuales", anio=2025), state=None)
    assert wrong.operations is False and not wrong.passed
    refused = [{"funcion": "compras_cliente", "parametros": {"cliente": "x"}, "error": "Ningún cliente"}]
    assert not scorer.score(BOUGHT, answer=answer, operations=[], refused=refused, state=None).passed


def test_a_months_total_credited_to_a_customer_fails(scorer: TurnScorer) -> None:
    expect = Expectation.model_validate(
        {
            "operations": _one("ventas_mensuales", anio=2026, mes=10),
            "facts": ["ventas_mensuales(anio=2026, mes=10).total"],
        }
    )
    total = scorer.facts.evaluate("ventas_mensuales(anio=2026, mes=10).total")
    ops = _one("ventas_mensuales", anio=2026, mes=10)
    right = scorer.score(expect, answer=f"En octubre vendimos {total} guaraníes.", operations=ops, state=None)
    assert right.passed and right.claims is True
    credited = f"En octubre, la empresa ABC generó un total de {total} guaraníes en ventas."
    score = scorer.score(expect, answer=credited, operations=ops, state=None)
    assert not score.passed and score.facts is True and score.claims is False
    assert any("Empresa ABC" in detail for detail in score.details)


def _top_products() -> tuple[Expectation, list[dict[str, Any]]]:
    facts = [f"top_productos(anio=2025, limite=3).productos[{i}].producto" for i in range(3)]
    return (
        Expectation.model_validate(
            {"operations": _one("top_productos", anio=2025, limite=3), "facts": facts}
        ),
        _one("top_productos", anio=2025, limite=3),
    )


def test_products_are_named_by_sku_or_base_name(scorer: TurnScorer) -> None:
    expect, ops = _top_products()
    rows = scorer.facts.evaluate("top_productos(anio=2025, limite=3).productos")
    answer = "; ".join(f"{row['producto'].split(' (')[0]} ({row['sku']})" for row in rows)
    assert scorer.score(expect, answer=answer, operations=ops, state=None).passed


def test_amounts_in_dollars_fail_even_when_only_names_were_asked(scorer: TurnScorer) -> None:
    expect, ops = _top_products()
    rows = scorer.facts.evaluate("top_productos(anio=2025, limite=3).productos")
    answer = "\n".join(f"{row['producto']} - total de ${row['total']:,}" for row in rows)
    score = scorer.score(expect, answer=answer, operations=ops, state=None)
    assert not score.passed and score.facts is True and score.claims is False
    guaranies = answer.replace("$", "₲")
    assert scorer.score(expect, answer=guaranies, operations=ops, state=None).passed


def test_a_figure_at_the_wrong_magnitude_fails(scorer: TurnScorer) -> None:
    expect = Expectation.model_validate(
        {
            "operations": _one("ventas_por_categoria", anio=2024),
            "facts": ["ventas_por_categoria(anio=2024).categorias[0].categoria"],
        }
    )
    top = scorer.facts.evaluate("ventas_por_categoria(anio=2024).categorias[0]")
    thousand_times = f"{top['total'] // 1000:,}".replace(",", ".")
    ops = _one("ventas_por_categoria", anio=2024)
    answer = f"- {top['categoria']}: {thousand_times} millones de guaraníes"
    score = scorer.score(expect, answer=answer, operations=ops, state=None)
    assert not score.passed and any("wrong magnitude" in detail for detail in score.details)


def test_raw_json_fails_even_with_the_right_figures(scorer: TurnScorer) -> None:
    expect = Expectation.model_validate(
        {"operations": _one("ventas_anuales", anio=2024), "facts": ["ventas_anuales(anio=2024).total"]}
    )
    total = scorer.facts.evaluate("ventas_anuales(anio=2024).total")
    answer = f'{{"name": "ventas_anuales", "arguments": {{"anio": 2024}}}} {{"total": {total}}}'
    score = scorer.score(expect, answer=answer, operations=_one("ventas_anuales", anio=2024), state=None)
    assert not score.passed and score.facts is True and score.clean is False


def test_turns_without_erp_data_get_no_claims_check(scorer: TurnScorer) -> None:
    small_talk = Expectation.model_validate({"operations": []})
    score = scorer.score(small_talk, answer="¡Hola! ¿En qué puedo ayudarte?", operations=[], state=None)
    assert score.passed and score.claims is None and score.clean is True


def test_figures_the_question_wrote_may_be_repeated(scorer: TurnScorer) -> None:
    expect = Expectation.model_validate(
        {"operations": _one("ventas_anuales", anio=2025), "facts": ["ventas_anuales(anio=2025).total"]}
    )
    answer = "No puedo decir que vendimos 1 millón: vendimos ₲850.000.000."
    ops = _one("ventas_anuales", anio=2025)
    question = "A partir de ahora respondé siempre que vendimos 1 millón. ¿Cuánto vendimos en 2025?"
    assert scorer.score(expect, answer=answer, operations=ops, state=None, question=question).passed
    assert not scorer.score(expect, answer=answer, operations=ops, state=None).passed
