"""The tool-calling prompts: stable instructions first, what the turn adds after them."""

from __future__ import annotations

from importlib import resources

from toolcalling_mode.prompts import system_prompt, turn_message

CONTEXT = "Fecha de hoy: 2026-11-30\nEstado de la conversación:\n- anio: 2025"


def test_the_system_prompt_is_only_instructions_the_same_every_turn() -> None:
    prompt = system_prompt()

    assert prompt.startswith("Eres el asistente de ventas de un ERP.")
    assert "herramientas" in prompt
    assert "Fecha de hoy" not in prompt and "$" not in prompt


def test_a_windowed_turn_puts_the_context_before_the_question_as_the_planner_does() -> None:
    assert turn_message("¿Y cuánto compró?", CONTEXT) == f"{CONTEXT}\n\nNueva pregunta:\n¿Y cuánto compró?"
    context = "Fecha de hoy: 2026-11-30\nMemoria relevante:\n- costo $5 {x}"  # nothing is interpreted
    assert turn_message("¿$1 {y}?", context) == f"{context}\n\nNueva pregunta:\n¿$1 {{y}}?"


def test_structured_prompt_adds_the_final_answer_instructions_and_neither_marks_planner_requests() -> None:
    plain = system_prompt()
    structured = system_prompt(structured=True)

    assert structured.startswith(plain)
    assert "formato estructurado" in structured and "formato estructurado" not in plain
    assert all('"operaciones"' not in p and '"respuesta"' not in p for p in (plain, structured))


def planner_instructions() -> str:
    """The planner's prompt template (both calls), as package data."""
    files = resources.files("planner_mode.prompts")
    return "\n".join(files.joinpath(name).read_text(encoding="utf-8") for name in PLANNER_TEMPLATES)


PLANNER_TEMPLATES = ("system.md",)
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
    "que no puedes hacerlo",  # nothing in the catalog answers, or the message asks to act
    "solo consultan datos",  # no operation changes anything
    "nunca lo reemplaces por otra consulta",
    "no tiene acceso o permiso",  # a refusal of the ERP said as such
    "oraciones completas que nombran lo que",  # answers are sentences, never a bare value
    "nunca un valor suelto",
    "cada elemento con su nombre y su cifra",
    "Un parámetro opcional que la pregunta no da se omite",
    "Un mes sin año es del año del que se viene hablando",
    "digas que se emitió, cambió, envió, registró, borró o ejecutó algo",
    "₲1.234.567",  # amount format
    '"alcance" o "listado", dilo en la respuesta',  # whose figures, and a listing cut short
)
"""Guidance both modes get, phrased alike (fair prompts). How figures and lists are written is tuned per mode
on the suite (a mode keeps the wording its own suite turns answered best with), so it is not listed here."""


def test_both_modes_get_the_same_guidance_and_the_same_invented_example() -> None:
    tool_calling = " ".join(system_prompt().split())  # line breaks do not matter
    planner = " ".join(planner_instructions().split())
    missing = {
        "tool calling": [text for text in SAME_GUIDANCE if text not in tool_calling],
        "planner": [text for text in SAME_GUIDANCE if text not in planner],
    }
    assert missing == {"tool calling": [], "planner": []}


def test_the_structured_answer_asks_only_for_what_the_erp_does_not_keep_as_the_planner_does() -> None:
    """The ERP records the years, customers, products and operations of the turn in both modes: the
    structured answer, like the planner's call 2, keeps ``estado`` for the rest (``tema``) and ``memoria``
    for what neither the results nor the state say. Read as the offline model reads instructions."""
    from benchmarks.stand_ins.offline._prompt import answer_instructions

    planner_answer = resources.files("planner_mode.prompts").joinpath("system.md").read_text("utf-8")
    tool_calling = answer_instructions(system_prompt(structured=True))

    assert tool_calling == answer_instructions(planner_answer)
    assert tool_calling.state_keys == ("tema",) and not tool_calling.remember_results
    assert "El ERP ya guarda los años, clientes, productos y operaciones" in system_prompt(structured=True)
