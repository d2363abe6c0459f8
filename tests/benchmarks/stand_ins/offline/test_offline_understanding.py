"""Phrase families the offline model understands, as a real model would, from the prompt alone.

Each family is pinned with sentences written for these tests (varied wording, Spanish and English), through
the planner's call-1 prompt; the last tests check the same understanding with bound tools.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage
from langchain_core.tools import StructuredTool

from benchmarks.stand_ins.offline import OfflineSalesModel
from tests.benchmarks.stand_ins.offline.offline_prompts import context, plan_messages, run_turn

Operations = list[tuple[str, dict[str, Any]]]


def plan(question: str, **ctx: Any) -> dict[str, Any]:
    reply = OfflineSalesModel().invoke(plan_messages(question, **ctx))
    data: dict[str, Any] = json.loads(str(reply.content))
    return data


def operations(question: str, **ctx: Any) -> Operations:
    return [(op["funcion"], op["parametros"]) for op in plan(question, **ctx)["operaciones"]]


def state_after(*previous: tuple[str, dict[str, Any]], **extra: Any) -> dict[str, Any]:
    """A conversation state as the ERP stores it after the given operations."""
    years = [p["anio"] for _, p in previous if "anio" in p]
    state: dict[str, Any] = {"tema": "ventas", **({"anio": years[-1]} if years else {}), **extra}
    state["ultimas_operaciones"] = [{"funcion": name, "parametros": params} for name, params in previous]
    return state


# -- sales totals asked in the perfect or progressive ("llevamos", "hemos") ----------------------------------


@pytest.mark.parametrize(
    ("question", "year"),
    [
        ("¿Cuánto hemos facturado este año?", 2026),
        ("¿Qué total llevamos facturado en lo que va del año?", 2026),
        ("¿Cuánto llevan vendido en 2024?", 2024),
        ("How much have we sold this year?", 2026),
        ("How much have we sold year to date?", 2026),
    ],
)
def test_sales_so_far_are_the_year_total(question: str, year: int) -> None:
    assert operations(question) == [("ventas_anuales", {"anio": year})]


# -- pending invoices asked as debts -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("question", "customer"),
    [
        ("¿Cuánto nos debe Comercial Sur S.R.L.?", "Comercial Sur S.R.L."),
        ("¿Qué le queda por pagar a Agro Sur S.A.E.C.A.?", "Agro Sur S.A.E.C.A."),
        ("¿Qué les falta pagar a Lácteos del Norte?", "Lácteos del Norte"),
        ("What does Acme Corp. still owe?", "Acme Corp."),
    ],
)
def test_what_a_customer_still_owes_is_its_pending_invoices(question: str, customer: str) -> None:
    assert operations(question) == [("facturas_pendientes", {"cliente": customer})]


@pytest.mark.parametrize(
    "question",
    [
        "¿Cuántas facturas pendientes de pago hay en total?",
        "¿Hay facturas pendientes de cobro todavía?",
        "Total de facturas por cobrar que tenemos",
        "¿Cuáles son las facturas vencidas?",
        "How many unpaid invoices do we have in total?",
    ],
)
def test_words_around_pending_invoices_are_not_customer_names(question: str) -> None:
    assert operations(question) == [("facturas_pendientes", {})]


@pytest.mark.parametrize(
    "question",
    [
        "Quiero el total vendido el año pasado y las facturas impagas",
        "Pasame las ventas del año pasado y el total pendiente de cobro.",
        "How much did we sell last year, and which invoices are unpaid?",
    ],
)
def test_sales_and_all_pending_invoices_in_one_question_are_two_operations(question: str) -> None:
    assert operations(question) == [("ventas_anuales", {"anio": 2025}), ("facturas_pendientes", {})]


def test_sales_inside_a_more_specific_request_stay_one_operation() -> None:
    assert operations("¿Qué ventas siguen pendientes de cobro?") == [("facturas_pendientes", {})]
    assert operations("¿Cuál fue el cliente con más ventas en 2024?") == [("mejor_cliente", {"anio": 2024})]


# -- several customers, company suffixes ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("question", "customers", "year"),
    [
        (
            "¿Cuánto nos compraron Agro Sur S.A. y Lácteos del Norte Ltda. el año pasado?",
            ["Agro Sur S.A.", "Lácteos del Norte Ltda."],
            2025,
        ),
        (
            "¿Cuánto gastaron Empresa ABC, Comercial Sur y Pérez Hnos. S.R.L. en 2024?",
            ["Empresa ABC", "Comercial Sur", "Pérez Hnos. S.R.L."],
            2024,
        ),
        ("How much did Acme Corp. and Globex Inc. buy in 2025?", ["Acme Corp.", "Globex Inc."], 2025),
    ],
)
def test_each_customer_named_gets_its_own_purchases_operation(
    question: str, customers: list[str], year: int
) -> None:
    assert operations(question) == [("compras_cliente", {"anio": year, "cliente": c}) for c in customers]


def test_each_customer_named_gets_its_own_pending_invoices() -> None:
    assert operations("¿Qué facturas pendientes tienen Empresa ABC y Comercial Sur?") == [
        ("facturas_pendientes", {"cliente": "Empresa ABC"}),
        ("facturas_pendientes", {"cliente": "Comercial Sur"}),
    ]


@pytest.mark.parametrize(
    ("question", "expected"),
    [
        (
            "¿Qué facturas pendientes tiene Frigorífico Guaraní S.A.E.C.A.?",
            ("facturas_pendientes", {"cliente": "Frigorífico Guaraní S.A.E.C.A."}),
        ),
        (
            "¿Cuánto compró Pérez Hnos. S.R.L. en 2024?",
            ("compras_cliente", {"anio": 2024, "cliente": "Pérez Hnos. S.R.L."}),
        ),
        (
            "Facturas pendientes de Importadora Ybycuí S.A.",
            ("facturas_pendientes", {"cliente": "Importadora Ybycuí S.A."}),
        ),
        (
            "Compras de la Cooperativa Yvapovõ Ltda. durante 2023",
            ("compras_cliente", {"anio": 2023, "cliente": "Cooperativa Yvapovõ Ltda."}),
        ),
    ],
)
def test_company_suffixes_belong_to_the_name(question: str, expected: tuple[str, dict[str, Any]]) -> None:
    assert operations(question) == [expected]


def test_a_sentence_period_is_not_part_of_the_name() -> None:
    assert operations("Mostrame las facturas pendientes de Empresa ABC.") == [
        ("facturas_pendientes", {"cliente": "Empresa ABC"})
    ]


# -- the best customer of one year, used in another ----------------------------------------------------------


@pytest.mark.parametrize(
    ("question", "best_year", "purchase_year"),
    [
        ("¿Cuánto gastó este año el que fue nuestro principal cliente en 2023?", 2023, 2026),
        ("¿Cuánto nos compró en 2025 el mejor cliente del año pasado?", 2025, 2025),
        ("¿Y el mejor cliente de 2022 cuánto nos compró en 2024?", 2022, 2024),
        ("How much did our best customer of 2024 buy this year?", 2024, 2026),
    ],
)
def test_best_customer_keeps_its_own_year(question: str, best_year: int, purchase_year: int) -> None:
    assert plan(question)["operaciones"] == [
        {"id": "op1", "funcion": "mejor_cliente", "parametros": {"anio": best_year}},
        {
            "funcion": "compras_cliente",
            "parametros": {"anio": purchase_year, "cliente": {"$ref": "op1.cliente"}},
        },
    ]


@pytest.mark.parametrize(
    ("question", "year"),
    [
        ("¿Debe algo nuestro mejor cliente del año pasado?", 2025),
        ("¿Cuál fue el mejor cliente de 2024 y qué facturas tiene pendientes?", 2024),
        ("¿Qué le falta pagar al mayor cliente de este año?", 2026),
        ("Which invoices does our best customer of 2025 still owe?", 2025),
    ],
)
def test_pending_invoices_of_the_best_customer_depend_on_it(question: str, year: int) -> None:
    assert plan(question)["operaciones"] == [
        {"id": "op1", "funcion": "mejor_cliente", "parametros": {"anio": year}},
        {"funcion": "facturas_pendientes", "parametros": {"cliente": {"$ref": "op1.cliente"}}},
    ]


def test_best_customer_and_everyones_pending_invoices_stay_independent() -> None:
    assert operations("¿Cuál fue el mejor cliente de 2025 y cuántas facturas pendientes hay?") == [
        ("mejor_cliente", {"anio": 2025}),
        ("facturas_pendientes", {}),
    ]


# -- follow-ups: a month, the customer in context, a new intent, a number ------------------------------------


MONTHLY_MARCH_2025 = ("ventas_mensuales", {"anio": 2025, "mes": 3})


@pytest.mark.parametrize(
    ("question", "previous", "year", "month"),
    [
        ("¿Y para abril?", MONTHLY_MARCH_2025, 2025, 4),
        ("¿Y septiembre?", ("ventas_mensuales", {"anio": 2024, "mes": 8}), 2024, 9),
        ("¿Y en marzo?", ("ventas_anuales", {"anio": 2023}), 2023, 3),
        ("What about May?", MONTHLY_MARCH_2025, 2025, 5),
        ("¿Y el mes pasado?", ("ventas_mensuales", {"anio": 2026, "mes": 2}), 2026, 10),
    ],
)
def test_a_month_follow_up_repeats_monthly_sales_with_the_new_month(
    question: str, previous: tuple[str, dict[str, Any]], year: int, month: int
) -> None:
    assert operations(question, state=state_after(previous)) == [
        ("ventas_mensuales", {"anio": year, "mes": month})
    ]


def test_a_month_follow_up_reads_the_last_exchange_when_there_is_no_state() -> None:
    exchange = ("¿Cuánto vendimos en julio de 2024?", "En julio de 2024 las ventas fueron de ₲61.000.000.")
    assert operations("¿Y en agosto?", exchange=exchange) == [("ventas_mensuales", {"anio": 2024, "mes": 8})]


def test_a_month_follow_up_without_context_asks_what_to_consult() -> None:
    data = plan("¿Y en junio?")
    assert data["operaciones"] == []
    assert data["respuesta_directa"].startswith("¿Qué quieres consultar?")


def test_a_month_follow_up_of_an_operation_without_months_says_it_cannot() -> None:
    data = plan("¿Y en julio?", state=state_after(("mejor_cliente", {"anio": 2025})))
    assert data["operaciones"] == []
    assert data["respuesta_directa"].startswith("No tengo una operación")


@pytest.mark.parametrize(
    "question",
    [
        "¿Tiene alguna factura pendiente?",
        "¿Y debe algo todavía?",
        "¿Qué le falta pagar?",
        "¿Cuánto adeuda?",
        "Does she have unpaid invoices?",
    ],
)
def test_the_customer_in_context_is_the_implicit_subject(question: str) -> None:
    state = state_after(("mejor_cliente", {"anio": 2025}), cliente_actual="Comercial Sur")
    assert operations(question, state=state) == [("facturas_pendientes", {"cliente": "Comercial Sur"})]


def test_the_implicit_customer_can_come_from_the_last_answer_alone() -> None:
    exchange = ("¿Cuánto compró ese cliente?", "Lácteos del Norte Ltda. compró ₲9.000.000 en 2025.")
    assert operations("¿Y tiene facturas sin pagar?", exchange=exchange) == [
        ("facturas_pendientes", {"cliente": "Lácteos del Norte Ltda."})
    ]


def test_without_a_customer_in_context_the_implicit_subject_gets_a_question() -> None:
    data = plan("¿Tiene alguna factura pendiente?")
    assert data["operaciones"] == []
    assert "cliente" in data["respuesta_directa"]


@pytest.mark.parametrize("question", ["¿Tenemos facturas pendientes?", "¿Quién nos debe más?"])
def test_questions_about_all_pending_invoices_ignore_the_customer_in_context(question: str) -> None:
    state = state_after(("mejor_cliente", {"anio": 2025}), cliente_actual="Comercial Sur")
    assert operations(question, state=state) == [("facturas_pendientes", {})]


@pytest.mark.parametrize(
    "question",
    [
        "¿Y quién fue el que más nos compró ese año?",
        "¿Y quiénes gastaron más ese año?",
        "And who bought the most that year?",
    ],
)
def test_a_new_intent_in_a_follow_up_wins_over_repeating(question: str) -> None:
    state = state_after(("ventas_anuales", {"anio": 2024}))
    assert operations(question, state=state) == [("mejor_cliente", {"anio": 2024})]


def test_the_next_year_follow_up_repeats_the_new_intent() -> None:
    state = state_after(("mejor_cliente", {"anio": 2024}))
    assert operations("¿Y en 2022?", state=state) == [("mejor_cliente", {"anio": 2022})]


@pytest.mark.parametrize(
    ("question", "expected"),
    [
        ("¿Y las dos más vendidas de 2024?", {"anio": 2024, "limite": 2}),
        ("¿Cuáles son los 4 más vendidos este año?", {"anio": 2026, "limite": 4}),
        ("What were the top 3 products last year?", {"anio": 2025, "limite": 3}),
        ("Los primeros siete productos de 2023", {"anio": 2023, "limite": 7}),
    ],
)
def test_the_number_in_the_question_sets_the_list_size(question: str, expected: dict[str, Any]) -> None:
    assert operations(question) == [("top_productos", expected)]


def test_a_number_in_a_follow_up_replaces_the_previous_list_size() -> None:
    state = state_after(("top_productos", {"anio": 2024, "limite": 5}))
    assert operations("¿Y el top 10?", state=state) == [("top_productos", {"anio": 2024, "limite": 10})]
    assert operations("¿Y en 2023?", state=state) == [("top_productos", {"anio": 2023, "limite": 5})]


# -- re-reading the last exchange (windowed prompts without state) -------------------------------------------


def test_a_follow_up_of_a_follow_up_reads_the_last_answer() -> None:
    exchange = ("¿Y el año anterior?", "En 2024 las ventas fueron de ₲744.000.000 (1489 facturas).")
    assert operations("¿Y en 2022?", exchange=exchange) == [("ventas_anuales", {"anio": 2022})]


def test_a_year_follow_up_keeps_the_customer_and_size_of_the_last_question() -> None:
    purchases = ("¿Cuánto compró Agro Sur S.A. en 2025?", "Agro Sur S.A. compró ₲5.000.000 en 2025.")
    assert operations("¿Y para 2023?", exchange=purchases) == [
        ("compras_cliente", {"cliente": "Agro Sur S.A.", "anio": 2023})
    ]
    products = (
        "¿Cuáles fueron los 2 productos más vendidos en 2025?",
        "Los productos más vendidos de 2025 …",
    )
    assert operations("¿Y en 2023?", exchange=products) == [("top_productos", {"anio": 2023, "limite": 2})]


def test_a_follow_up_after_small_talk_asks_instead_of_guessing() -> None:
    exchange = ("Buenas tardes", "¡Hola! Soy el asistente de ventas del ERP. ¿Qué quieres saber?")
    data = plan("¿Y para 2023?", exchange=exchange)
    assert data["operaciones"] == []
    assert data["respuesta_directa"].startswith("¿Qué quieres consultar?")


def test_the_customer_named_in_memory_keeps_its_suffix() -> None:
    memory = ["El mejor cliente de 2024 fue Ferretería Sur S.A.."]
    assert operations("¿Y cuánto nos compró dicho cliente este año?", memory=memory) == [
        ("compras_cliente", {"anio": 2026, "cliente": "Ferretería Sur S.A."})
    ]


# -- the same understanding with bound tools -----------------------------------------------------------------


def tool_calls(tools: list[StructuredTool], question: str, system: str | None = None) -> list[Operations]:
    messages: list[BaseMessage] = [
        SystemMessage(system or "Eres el asistente de ventas de un ERP.\n" + context()),
        HumanMessage(question),
    ]
    replies = run_turn(OfflineSalesModel().bind_tools(tools), messages, tools)
    return [[(c["name"], c["args"]) for c in reply.tool_calls] for reply in replies]


def test_tools_two_customers_are_called_together(tools: list[StructuredTool]) -> None:
    assert tool_calls(tools, "¿Cuánto nos compraron Agro Sur S.A. y Comercial Sur en 2024?") == [
        [
            ("compras_cliente", {"anio": 2024, "cliente": "Agro Sur S.A."}),
            ("compras_cliente", {"anio": 2024, "cliente": "Comercial Sur"}),
        ],
        [],
    ]


def test_tools_best_customer_then_its_pending_invoices(tools: list[StructuredTool]) -> None:
    assert tool_calls(tools, "¿Qué le falta pagar a nuestro mejor cliente del año pasado?") == [
        [("mejor_cliente", {"anio": 2025})],
        [("facturas_pendientes", {"cliente": "Empresa ABC"})],
        [],
    ]


def test_tools_best_customer_of_one_year_purchases_in_another(tools: list[StructuredTool]) -> None:
    assert tool_calls(tools, "¿Cuánto gastó este año el que fue nuestro mejor cliente en 2023?") == [
        [("mejor_cliente", {"anio": 2023})],
        [("compras_cliente", {"anio": 2026, "cliente": "Empresa ABC"})],
        [],
    ]


def test_tools_year_follow_up_from_the_windowed_context(tools: list[StructuredTool]) -> None:
    system = "Eres el asistente de ventas de un ERP.\n" + context(
        exchange=("¿Cuánto compró Agro Sur S.A. en 2025?", "Agro Sur S.A. compró ₲5.000.000 en 2025.")
    )
    assert tool_calls(tools, "¿Y el año anterior?", system=system) == [
        [("compras_cliente", {"anio": 2024, "cliente": "Agro Sur S.A."})],
        [],
    ]
