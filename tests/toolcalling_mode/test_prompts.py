"""The tool-calling system prompt: what the model sees around the rendered context."""

from __future__ import annotations

from importlib import resources

from toolcalling_mode.prompts import system_prompt

CONTEXT = "Fecha de hoy: 2026-11-30\nEstado de la conversación:\n- anio: 2025"


def test_system_prompt_embeds_the_rendered_context_verbatim() -> None:
    prompt = system_prompt(CONTEXT)

    assert prompt.startswith("Eres el asistente de ventas de un ERP.")
    assert prompt.endswith(CONTEXT)
    assert "herramientas" in prompt


def test_system_prompt_avoids_the_words_that_mark_planner_requests() -> None:
    for structured in (False, True):
        prompt = system_prompt(CONTEXT, structured=structured)
        assert '"operaciones"' not in prompt
        assert '"respuesta"' not in prompt


def test_structured_prompt_adds_the_final_answer_instructions() -> None:
    plain = system_prompt(CONTEXT)
    structured = system_prompt(CONTEXT, structured=True)

    assert structured.startswith(plain)
    assert "formato estructurado" in structured
    assert "formato estructurado" not in plain


def test_context_with_dollar_signs_and_braces_is_not_interpreted() -> None:
    context = "Fecha de hoy: 2026-11-30\nMemoria relevante:\n- costo $5 {x}"

    assert system_prompt(context).endswith(context)


def planner_instructions() -> str:
    """The planner's two prompt templates (call 1 and call 2), as package data."""
    files = resources.files("planner_mode.prompts")
    return "\n".join(files.joinpath(name).read_text(encoding="utf-8") for name in PLANNER_TEMPLATES)


PLANNER_TEMPLATES = ("plan_system.md", "answer_system.md")
SAME_GUIDANCE = (
    "Nunca inventes",  # only the catalog's operations / the bound tools, only declared parameters
    "nombre exacto",
    "varias consultas",  # independent queries together
    "Ejemplo con",  # a dependent query, shown with invented operations
    "proveedor_principal",
    "pedidos_proveedor",
    '"ese proveedor"',  # references to the conversation
    "fechas relativas",
    "sin detalles técnicos",  # errors
    "saludo, charla",  # no operation needed
    "no puedes consultar ese dato",  # nothing in the catalog answers
    "₲1.234.567",  # amount format
)
"""Guidance both modes get, phrased alike (issue 13, fair prompts)."""


def test_both_modes_get_the_same_guidance_and_the_same_invented_example() -> None:
    tool_calling = " ".join(system_prompt(CONTEXT).split())  # line breaks do not matter
    planner = " ".join(planner_instructions().split())
    missing = {
        "tool calling": [text for text in SAME_GUIDANCE if text not in tool_calling],
        "planner": [text for text in SAME_GUIDANCE if text not in planner],
    }
    assert missing == {"tool calling": [], "planner": []}
