"""Phrase families the offline model understands, as a real model would, from the prompt alone.

Each family is pinned with sentences written for these tests (varied wording, Spanish and English), through
the planner's call-1 prompt (test_offline_tools checks the same understanding with bound tools).
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.benchmarks.stand_ins.offline.offline_prompts import (
    Operation,
    best,
    case,
    monthly,
    operations,
    pending,
    plan,
    purchases,
    sales,
    state_after,
    top,
)

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


# -- follow-ups: a month, the customer in context, a new intent, a number ------------------------------------


MONTHLY_MARCH_2025 = monthly(2025, 3)
BEST_2025_SUR = state_after(best(2025), cliente_actual="Comercial Sur")
PENDING = [("facturas_pendientes", {})]
ABC_2025 = {"tema": "ventas", "anio": 2025, "cliente_actual": "Empresa ABC"}
SUR_CALLS = 'compras_cliente(cliente="Comercial Sur", anio=2025); ventas_anuales(anio=2025)'
"""``ultimas_operaciones`` as the planner's ERP derives it, in call notation."""


@pytest.mark.parametrize(
    ("question", "ctx", "expected"),
    [
        # each sales operation is recognised
        case(
            "¿Cuáles fueron los 3 productos más vendidos el año pasado?", top(anio=2025, limite=3), id="top"
        ),
        case("¿Cuánto vendimos en marzo de 2025?", monthly(2025, 3), id="month-of-a-year"),
        case("Ventas mensuales de 2024", ("ventas_mensuales", {"anio": 2024}), id="monthly"),
        case("Ventas por categoría de 2025", ("ventas_por_categoria", {"anio": 2025}), id="category"),
        case("¿Qué facturas están pendientes de pago?", ("facturas_pendientes", {}), id="pending"),
        case("¿Cuánto vendimos en 2024 y en 2025?", sales(2024), sales(2025), id="two-years"),
        # years are resolved relative to the prompt's date
        case("¿Cuánto vendimos este año?", sales(2026), id="este-ano"),
        case("¿Cuánto vendimos el año pasado?", sales(2025), id="ano-pasado"),
        case("¿Cuánto vendimos hace dos años?", sales(2024), id="hace-dos-anos"),
        case("¿Cuánto vendimos en 2023?", sales(2023), id="explicit-year"),
        case("How much did we sell last year?", sales(2025), id="last-year"),
        # customer names are taken from the question
        case("¿Cuánto compró Empresa ABC en 2025?", purchases("Empresa ABC", 2025), id="name"),
        case("¿Cuánto nos compró la empresa abc en 2024?", purchases("empresa abc", 2024), id="lowercase"),
        case("¿Cuánto compró Comercial del Este en 2024?", purchases("Comercial del Este", 2024), id="del"),
        case('Compras de "Ñandú S.A." en 2025', purchases("Ñandú S.A.", 2025), id="quoted"),
        case("How much did Empresa ABC buy in 2025?", purchases("Empresa ABC", 2025), id="english-name"),
        case("¿Qué facturas pendientes tiene Empresa ABC?", pending("Empresa ABC"), id="debtor"),
        case("Busca clientes con 'sur'", ("buscar_cliente", {"texto": "sur"}), id="search"),
        # follow-ups take the customer and the year from the state, the memory or the last exchange
        case("¿Y cuánto compró?", purchases("Empresa ABC", 2025), state=ABC_2025, id="state-line"),
        case(
            "¿Y cuánto compró?",
            purchases("Empresa ABC", 2025),
            memory=["Estamos hablando de ventas de 2025.", "El mejor cliente es Empresa ABC."],
            exchange=("¿Cuál fue mi mejor cliente?", "El mejor cliente fue Empresa ABC."),
            id="memory-and-exchange",
        ),
        case(
            "¿Qué facturas pendientes tiene ese cliente?",
            pending("Empresa ABC"),
            state={"cliente_actual": "Empresa ABC"},
            id="ese-cliente",
        ),
        case("¿y en 2024?", sales(2024), best(2024), state=state_after(sales(2025), best(2025)), id="year"),
        case(
            "¿y el año anterior?",
            best(2024),
            state={"anio": 2025, "ultima_operacion": "mejor_cliente"},
            id="ano-anterior",
        ),
        case("¿Cuál fue el mejor cliente ese año?", best(2022), state={"anio": 2022}, id="ese-ano"),
        case(
            "¿y en 2024?",
            sales(2024),
            exchange=("¿Cuánto vendimos en 2025?", "En 2025 las ventas fueron de ₲850.000.000."),
            id="last-exchange-question",
        ),
        case(
            "¿y en 2024?",
            purchases("Comercial Sur", 2024),
            sales(2024),
            state={"anio": 2025, "cliente_actual": "Comercial Sur", "ultimas_operaciones": SUR_CALLS},
            id="call-notation",
        ),
        # sales so far ("llevamos", "hemos") are the year's total
        case("¿Cuánto hemos facturado este año?", sales(2026), id="perfect"),
        case("¿Qué total llevamos facturado en lo que va del año?", sales(2026), id="progressive"),
        case("¿Cuánto llevan vendido en 2024?", sales(2024), id="llevan"),
        case("How much have we sold this year?", sales(2026), id="english"),
        case("How much have we sold year to date?", sales(2026), id="year-to-date"),
        # what a customer still owes is its pending invoices
        case("¿Cuánto nos debe Comercial Sur S.R.L.?", pending("Comercial Sur S.R.L."), id="debe"),
        case("¿Qué le queda por pagar a Agro Sur S.A.E.C.A.?", pending("Agro Sur S.A.E.C.A."), id="queda"),
        case("¿Qué les falta pagar a Lácteos del Norte?", pending("Lácteos del Norte"), id="falta"),
        case("What does Acme Corp. still owe?", pending("Acme Corp."), id="owe"),
        # words around pending invoices are not customer names
        case("¿Cuántas facturas pendientes de pago hay en total?", *PENDING, id="de-pago"),
        case("¿Hay facturas pendientes de cobro todavía?", *PENDING, id="de-cobro"),
        case("Total de facturas por cobrar que tenemos", *PENDING, id="por-cobrar"),
        case("¿Cuáles son las facturas vencidas?", *PENDING, id="vencidas"),
        case("How many unpaid invoices do we have in total?", *PENDING, id="unpaid"),
        # sales and all pending invoices in one question are two operations
        case("Quiero el total vendido el año pasado y las facturas impagas", sales(2025), *PENDING, id="y"),
        case(
            "Pasame las ventas del año pasado y el total pendiente de cobro.",
            sales(2025),
            *PENDING,
            id="total",
        ),
        case(
            "How much did we sell last year, and which invoices are unpaid?", sales(2025), *PENDING, id="and"
        ),
        # sales inside a more specific request stay one operation
        case("¿Qué ventas siguen pendientes de cobro?", *PENDING, id="sales-pending"),
        case("¿Cuál fue el cliente con más ventas en 2024?", best(2024), id="best"),
        # each customer named gets its own operation; company suffixes belong to the name
        case(
            "¿Cuánto nos compraron Agro Sur S.A. y Lácteos del Norte Ltda. el año pasado?",
            purchases("Agro Sur S.A.", 2025),
            purchases("Lácteos del Norte Ltda.", 2025),
            id="two-customers",
        ),
        case(
            "¿Cuánto gastaron Empresa ABC, Comercial Sur y Pérez Hnos. S.R.L. en 2024?",
            purchases("Empresa ABC", 2024),
            purchases("Comercial Sur", 2024),
            purchases("Pérez Hnos. S.R.L.", 2024),
            id="three-customers",
        ),
        case(
            "How much did Acme Corp. and Globex Inc. buy in 2025?",
            purchases("Acme Corp.", 2025),
            purchases("Globex Inc.", 2025),
            id="english-customers",
        ),
        case(
            "¿Qué facturas pendientes tienen Empresa ABC y Comercial Sur?",
            pending("Empresa ABC"),
            pending("Comercial Sur"),
            id="two-debtors",
        ),
        case(
            "¿Qué facturas pendientes tiene Frigorífico Guaraní S.A.E.C.A.?",
            pending("Frigorífico Guaraní S.A.E.C.A."),
            id="saeca",
        ),
        case("¿Cuánto compró Pérez Hnos. S.R.L. en 2024?", purchases("Pérez Hnos. S.R.L.", 2024), id="srl"),
        case("Facturas pendientes de Importadora Ybycuí S.A.", pending("Importadora Ybycuí S.A."), id="sa"),
        case(
            "Compras de la Cooperativa Yvapovõ Ltda. durante 2023",
            purchases("Cooperativa Yvapovõ Ltda.", 2023),
            id="ltda",
        ),
        case(
            "Mostrame las facturas pendientes de Empresa ABC.", pending("Empresa ABC"), id="sentence-period"
        ),
        # the best customer and everyone's pending invoices stay independent
        case(
            "¿Cuál fue el mejor cliente de 2025 y cuántas facturas pendientes hay?",
            best(2025),
            *PENDING,
            id="best-and-all-pending",
        ),
        # a month follow-up repeats monthly sales with the new month
        case("¿Y para abril?", monthly(2025, 4), state=state_after(MONTHLY_MARCH_2025), id="month"),
        case("¿Y septiembre?", monthly(2024, 9), state=state_after(monthly(2024, 8)), id="month-bare"),
        case("¿Y en marzo?", monthly(2023, 3), state=state_after(sales(2023)), id="month-of-year-sales"),
        case("What about May?", monthly(2025, 5), state=state_after(MONTHLY_MARCH_2025), id="may"),
        case("¿Y el mes pasado?", monthly(2026, 10), state=state_after(monthly(2026, 2)), id="last-month"),
        case(
            "¿Y en agosto?",
            monthly(2024, 8),
            exchange=(
                "¿Cuánto vendimos en julio de 2024?",
                "En julio de 2024 las ventas fueron de ₲61.000.000.",
            ),
            id="month-from-the-last-exchange",
        ),
        # the customer in context is the implicit subject
        case("¿Tiene alguna factura pendiente?", pending("Comercial Sur"), state=BEST_2025_SUR, id="tiene"),
        case("¿Y debe algo todavía?", pending("Comercial Sur"), state=BEST_2025_SUR, id="debe-algo"),
        case("¿Qué le falta pagar?", pending("Comercial Sur"), state=BEST_2025_SUR, id="le-falta"),
        case("¿Cuánto adeuda?", pending("Comercial Sur"), state=BEST_2025_SUR, id="adeuda"),
        case("Does she have unpaid invoices?", pending("Comercial Sur"), state=BEST_2025_SUR, id="she"),
        case(
            "¿Y tiene facturas sin pagar?",
            pending("Lácteos del Norte Ltda."),
            exchange=("¿Cuánto compró ese cliente?", "Lácteos del Norte Ltda. compró ₲9.000.000 en 2025."),
            id="implicit-customer-from-the-last-answer",
        ),
        # questions about all pending invoices ignore the customer in context
        case("¿Tenemos facturas pendientes?", *PENDING, state=BEST_2025_SUR, id="tenemos"),
        case("¿Quién nos debe más?", *PENDING, state=BEST_2025_SUR, id="quien-debe"),
        # a new intent in a follow-up wins over repeating; the next year repeats it
        *(
            case(question, best(2024), state=state_after(sales(2024)), id=name)
            for question, name in [
                ("¿Y quién fue el que más nos compró ese año?", "new-intent"),
                ("¿Y quiénes gastaron más ese año?", "new-intent-plural"),
                ("And who bought the most that year?", "new-intent-english"),
            ]
        ),
        case("¿Y en 2022?", best(2022), state=state_after(best(2024)), id="next-year-of-the-new-intent"),
        # the number in the question sets the list size; a follow-up replaces or keeps it
        case("¿Y las dos más vendidas de 2024?", top(anio=2024, limite=2), id="dos"),
        case("¿Cuáles son los 4 más vendidos este año?", top(anio=2026, limite=4), id="4"),
        case("What were the top 3 products last year?", top(anio=2025, limite=3), id="top-3"),
        case("Los primeros siete productos de 2023", top(anio=2023, limite=7), id="siete"),
        case(
            "¿Y el top 10?",
            top(anio=2024, limite=10),
            state=state_after(top(anio=2024, limite=5)),
            id="follow-up-size",
        ),
        case(
            "¿Y en 2023?",
            top(anio=2023, limite=5),
            state=state_after(top(anio=2024, limite=5)),
            id="size-kept",
        ),
        # windowed prompts without state: the last exchange is read again
        case(
            "¿Y en 2022?",
            sales(2022),
            exchange=("¿Y el año anterior?", "En 2024 las ventas fueron de ₲744.000.000 (1489 facturas)."),
            id="follow-up-of-a-follow-up",
        ),
        case(
            "¿Y para 2023?",
            ("compras_cliente", {"cliente": "Agro Sur S.A.", "anio": 2023}),
            exchange=("¿Cuánto compró Agro Sur S.A. en 2025?", "Agro Sur S.A. compró ₲5.000.000 en 2025."),
            id="customer-of-the-last-question",
        ),
        case(
            "¿Y en 2023?",
            top(anio=2023, limite=2),
            exchange=(
                "¿Cuáles fueron los 2 productos más vendidos en 2025?",
                "Los productos más vendidos de 2025 …",
            ),
            id="size-of-the-last-question",
        ),
        case(
            "¿Y cuánto nos compró dicho cliente este año?",
            purchases("Ferretería Sur S.A.", 2026),
            memory=["El mejor cliente de 2024 fue Ferretería Sur S.A.."],
            id="customer-in-memory-keeps-its-suffix",
        ),
    ],
)
def test_the_question_gets_these_operations(
    question: str, ctx: dict[str, Any], expected: list[Operation]
) -> None:
    assert operations(question, **ctx) == expected


@pytest.mark.parametrize(
    ("question", "ctx", "reply"),
    [
        pytest.param("¿Y en junio?", {}, "¿Qué quieres consultar?", id="month-follow-up-without-context"),
        pytest.param(
            "¿Y en julio?",
            {"state": state_after(best(2025))},
            "No tengo una operación",
            id="month-follow-up-of-an-operation-without-months",
        ),
        pytest.param(
            "¿Tiene alguna factura pendiente?",
            {},
            "¿De qué cliente",
            id="implicit-subject-without-a-customer",
        ),
        pytest.param(
            "¿Y para 2023?",
            {"exchange": ("Buenas tardes", "¡Hola! Soy el asistente de ventas del ERP. ¿Qué quieres saber?")},
            "¿Qué quieres consultar?",
            id="follow-up-after-small-talk",
        ),
    ],
)
def test_a_question_it_cannot_resolve_gets_a_direct_answer(
    question: str, ctx: dict[str, Any], reply: str
) -> None:
    data = plan(question, **ctx)
    assert data["operaciones"] == []
    assert data["respuesta_directa"].startswith(reply)
