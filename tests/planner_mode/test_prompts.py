"""Pin what the model sees: a silent prompt change would change every benchmark figure."""

from __future__ import annotations

from datetime import date

from inline_snapshot import snapshot

from planner_mode.plan import OperationOutcome
from planner_mode.prompts import answer_messages, plan_messages, render_catalog
from shared.memory.context import ConversationContext, Exchange
from shared.operations.registry import OperationRegistry

CONTEXT = ConversationContext(
    hoy=date(2026, 11, 30),
    memoria=["El mejor cliente de 2025 fue Empresa ABC."],
    estado={"tema": "ventas", "anio": 2025, "cliente_actual": "Empresa ABC"},
    ultimos_intercambios=[
        Exchange(usuario="¿Cuál fue mi mejor cliente?", asistente="El mejor cliente fue Empresa ABC.")
    ],
)


def test_catalog_renders_compactly(toy_registry: OperationRegistry) -> None:
    assert render_catalog(toy_registry.catalog()) == snapshot()


def test_plan_prompt(toy_registry: OperationRegistry) -> None:
    system, human = plan_messages("¿Y cuánto compró?", CONTEXT, toy_registry.catalog())
    assert system.type == "system" and human.type == "human"
    assert system.content == snapshot()
    assert human.content == snapshot()


def test_plan_prompt_follows_the_offline_model_conventions(toy_registry: OperationRegistry) -> None:
    system, human = plan_messages("Hola", CONTEXT, toy_registry.catalog())
    text = str(system.content)
    assert '"operaciones"' in text and '"respuesta"' not in text
    assert "$ref" in text and "respuesta_directa" in text
    assert "Fecha de hoy: 2026-11-30" in text
    assert all(name in text for name in toy_registry.names())
    assert str(human.content).endswith("\n\nNueva pregunta:\nHola")


def test_answer_prompt() -> None:
    results = [
        OperationOutcome(funcion="mejor_cliente", parametros={"anio": 2025}, resultado={"cliente": "Empresa ABC"}),
        OperationOutcome(funcion="compras_cliente", parametros={"cliente": "X"}, error="No customer matches 'X'."),
    ]
    system, human = answer_messages("¿Y cuánto compró?", results, CONTEXT)
    assert '"respuesta"' in str(system.content)
    assert system.content == snapshot()
    assert human.content == snapshot()
