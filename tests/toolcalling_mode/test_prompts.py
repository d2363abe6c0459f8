"""The tool-calling system prompt: what the model sees around the rendered context."""

from __future__ import annotations

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
