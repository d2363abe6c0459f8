"""Claimed actions: an answer may not say the ERP did something that none of the turn's operations did."""

from __future__ import annotations

import gc
import re
import time
from collections.abc import Callable

import pytest

from shared.actions import (
    ACTION_KINDS,
    QUOTE_LIMIT,
    ActionClaim,
    action_claims,
    claimed_action_answer,
    claimed_actions,
)
from shared.turn import ExecutedOperation

SALES_2025 = ExecutedOperation(
    function="ventas_anuales", parameters={"anio": 2025}, result={"anio": 2025, "total": 850_000_000}
)
UNKNOWN = ExecutedOperation(
    function="borrar_cliente",
    parameters={"cliente": "Empresa ABC"},
    error="operación desconocida: borrar_cliente",
    error_kind="invalid",
)


def kinds(answer: str) -> list[str]:
    return [claim.kind for claim in action_claims(answer)]


@pytest.mark.parametrize(
    ("answer", "claim"),
    [
        (
            "Se mandó un correo a Empresa ABC con su estado de cuenta.",
            "Se mandó un correo a Empresa ABC con su estado de cuenta",
        ),
        (
            "El precio del taladro se subió un 10% en el año 2026.",
            "El precio del taladro se subió un 10% en el año 2026",
        ),
        (
            "La función borrar_cliente se ejecutó correctamente para el cliente Empresa ABC.",
            "La función borrar_cliente se ejecutó correctamente para el cliente Empresa ABC",
        ),
        (
            "El precio del aceite de soja ha sido cambiado a 50.000 guaraníes.",
            "El precio del aceite de soja ha sido cambiado a 50.000 guaraníes",
        ),
    ],
)
def test_actions_a_small_model_claimed_are_flagged(answer: str, claim: str) -> None:
    assert claimed_actions(answer, [UNKNOWN]) == [claim]


@pytest.mark.parametrize(
    ("answer", "kind"),
    [
        ("Le envié el estado de cuenta.", "send"),
        ("Eliminé el cliente.", "delete"),
        ("He registrado el pago de Hotel Paraná.", "register"),
        ("Acabo de enviarle el detalle por correo.", "send"),
        ("Procedí a anular la factura F-002.", "register"),
        ("Ya le subí el precio al taladro.", "change"),
        ("Di de baja al cliente Comercial Sur.", "delete"),
        ("Modifiqué el precio del aceite.", "change"),
    ],
)
def test_a_first_person_claim_is_flagged_with_its_kind(answer: str, kind: str) -> None:
    assert kinds(answer) == [kind]
    assert claimed_actions(answer, [SALES_2025]) == [answer.rstrip(".")]


@pytest.mark.parametrize(
    ("answer", "kind"),
    [
        ("El pago de Hotel Paraná quedó registrado.", "register"),
        ("El precio quedó actualizado.", "change"),
        ("El cliente Empresa ABC ha sido eliminado.", "delete"),
        ("La factura fue anulada.", "register"),
        ("Se le ha enviado el detalle a Empresa ABC.", "send"),
        ("El sistema redujo el precio del taladro.", "change"),
        ("El cliente fue dado de baja.", "delete"),
    ],
)
def test_an_impersonal_passive_or_resulting_claim_is_flagged(answer: str, kind: str) -> None:
    assert kinds(answer) == [kind]
    assert claimed_actions(answer, []) == [answer.rstrip(".")]


@pytest.mark.parametrize(
    ("answer", "kind"),
    [
        ("The email has been sent.", "send"),
        ("I updated the price.", "change"),
        ("I've just deleted the customer.", "delete"),
        ("The invoice was voided.", "register"),
        ("The price was increased by 10%.", "change"),
    ],
)
def test_english_claims_are_flagged(answer: str, kind: str) -> None:
    assert kinds(answer) == [kind]
    assert claimed_actions(answer, []) == [answer.rstrip(".")]


@pytest.mark.parametrize(
    "answer",
    [
        "No puedo enviar correos.",
        "No se envió ningún correo.",
        "No he cambiado ningún precio.",
        "no tengo permiso para modificar precios",
        "Lo siento, no es posible borrar clientes.",
        "El correo no ha sido enviado.",
        "Ningún precio fue modificado.",
        "Todavía no se actualizó el precio.",
        "The email was not sent.",
        "I haven't deleted anything.",
        "Nothing has been updated.",
    ],
)
def test_negations_and_refusals_are_not_claims(answer: str) -> None:
    assert claimed_actions(answer, []) == []


@pytest.mark.parametrize(
    "answer",
    [
        "Las ventas aumentaron un 10% respecto a 2024.",
        "En 2025 se registraron 120 facturas.",
        "Las ventas se redujeron en marzo.",
        "La factura F-001 fue emitida el 3 de marzo de 2025.",
        "Se vendieron 300 unidades.",
        "Los precios bajaron en octubre.",
        "El ERP muestra que los precios bajaron.",
        "Se emitieron facturas a 12 clientes.",
        "El ERP registró ventas por ₲850.000.000 en 2025.",
        "Hemos emitido 45 facturas este año.",
        "Sales increased 10% in 2025.",
        "120 invoices were issued in 2025.",
        "Según el reporte actualizado, Empresa ABC es el mejor cliente.",
    ],
)
def test_descriptions_of_the_sales_data_are_not_claims(answer: str) -> None:
    assert claimed_actions(answer, []) == []


@pytest.mark.parametrize(
    "answer",
    [
        "¿Quiere que le envíe el detalle?",
        "Puedo mostrarle las facturas pendientes.",
        "Si lo desea, le envío el detalle por correo.",
        "Si se envió el correo, Empresa ABC debería tenerlo.",
        "¿Desea que confirme si la factura fue anulada?",
        "Should I send the invoice again? It was sent?",
        "Le enviaré el detalle cuando el ERP lo permita.",
    ],
)
def test_offers_questions_and_suppositions_are_not_claims(answer: str) -> None:
    assert claimed_actions(answer, []) == []


def test_accents_tell_a_claim_from_an_offer() -> None:
    assert kinds("Se lo envío ahora mismo.") == []  # present tense: an offer
    assert kinds("Se envió ahora mismo.") == ["send"]
    assert kinds("Que le envíe el detalle.") == []  # subjunctive
    assert kinds("Le envié el detalle.") == ["send"]


def test_a_voseo_imperative_is_not_read_as_a_first_person_claim() -> None:
    """``subí`` (and ``emití``) are also orders to the reader in Paraguayan and Rioplatense Spanish."""
    assert kinds("Subí el precio del taladro un 10%.") == []
    assert kinds("Si querés, emití la factura vos.") == []
    assert kinds("Yo subí el precio del taladro.") == ["change"]
    assert kinds("Le emití la factura a Empresa ABC.") == ["register"]


def test_a_price_verb_is_a_claim_only_on_a_price() -> None:
    assert kinds("Se redujeron los costos de envío.") == []
    assert kinds("Se redujo el precio del taladro.") == ["change"]
    assert kinds("Aumenté el precio del aceite.") == ["change"]
    assert kinds("Aumenté la cantidad de productos del informe.") == []


def test_the_claim_is_the_clause_that_holds_it() -> None:
    answer = (
        "En 2025 vendimos ₲850.000.000. Las ventas de marzo fueron las más altas, "
        "y le envié el estado de cuenta a Empresa ABC.\nLa factura F-010 quedó anulada; "
        "no se cambió ningún precio."
    )
    assert claimed_actions(answer, [SALES_2025]) == [
        "le envié el estado de cuenta a Empresa ABC",
        "La factura F-010 quedó anulada",
    ]


def test_a_phrase_with_several_claims_is_reported_once() -> None:
    answer = "Envié el correo. Envié el correo. Se envió y se eliminó el cliente."
    assert claimed_actions(answer, []) == ["Envié el correo", "Se envió", "se eliminó el cliente"]
    assert [(claim.kind, claim.phrase) for claim in action_claims("Envié y envié.")] == [
        ("send", "Envié"),
        ("send", "envié"),
    ]


def test_an_execute_claim_is_supported_by_an_operation_that_ran() -> None:
    answer = "Se ejecutó ventas_anuales para 2025."
    assert claimed_actions(answer, [SALES_2025]) == []
    assert claimed_actions("Ejecuté la consulta de ventas.", [SALES_2025]) == []


def test_an_execute_claim_without_an_operation_that_ran_is_flagged() -> None:
    assert claimed_actions("Ejecuté la consulta de ventas.", []) == ["Ejecuté la consulta de ventas"]
    assert claimed_actions("Ejecuté la consulta de ventas.", [UNKNOWN]) == ["Ejecuté la consulta de ventas"]


def test_an_execute_claim_naming_an_operation_that_did_not_run_is_flagged() -> None:
    answer = "La función borrar_cliente se ejecutó correctamente."
    assert claimed_actions(answer, [SALES_2025, UNKNOWN]) == [answer.rstrip(".")]
    both = "Se ejecutaron `ventas_anuales` y `borrar_cliente`."
    assert claimed_actions(both, [SALES_2025, UNKNOWN]) == ["Se ejecutaron `ventas_anuales`"]


def test_an_execute_claim_may_name_a_parameter_of_an_operation_that_ran() -> None:
    search = ExecutedOperation(function="buscar_cliente", parameters={"texto_busqueda": "ABC"}, result=[])
    assert claimed_actions("Se ejecutó buscar_cliente con texto_busqueda ABC.", [search]) == []


def test_kinds_the_operations_performed_are_not_flagged() -> None:
    answer = "Se mandó un correo a Empresa ABC. Se anuló la factura F-002."
    assert claimed_actions(answer, [SALES_2025], performed={"send"}) == ["Se anuló la factura F-002"]
    assert claimed_actions(answer, [SALES_2025], performed=ACTION_KINDS) == []


def test_each_claim_names_the_operation_identifiers_of_its_sentence() -> None:
    assert action_claims("Se ejecutó ventas_anuales. Envié el correo.") == [
        ActionClaim("execute", "Se ejecutó ventas_anuales", ("ventas_anuales",)),
        ActionClaim("send", "Envié el correo", ()),
    ]


def test_a_hostile_answer_is_read_without_error() -> None:
    assert claimed_actions("a" * 60_000, []) == []
    answer = "a" * 60_000 + ". Se envió el correo."
    assert claimed_actions(answer, []) == ["Se envió el correo"]


CLAIM = " Se envió el correo."
ADVERSARIAL: dict[str, Callable[[int], str]] = {
    "one long word": lambda size: "a" * size + CLAIM,
    "one long identifier": lambda size: ("a_" * size)[:size] + CLAIM,
    "repeated claims": lambda size: ("se ha sido fue enviado " * size)[:size],
    "open questions": lambda size: "¿" * size + CLAIM,
    "one clause of negations": lambda size: ("no ni " * size)[:size] + CLAIM,
}
"""Texts that could make a backtracking reader slow; each ends in a claim, so every step of the check runs."""


def cpu_seconds(answer: str) -> float:
    """The least CPU time of five runs (CPU time: other processes on the machine do not count), with the
    garbage collector paused (a collection of other tests' garbage is not the check's time)."""
    runs = []
    gc.collect()
    gc.disable()
    try:
        for _ in range(5):
            start = time.process_time()
            claimed_actions(answer, [])
            runs.append(time.process_time() - start)
    finally:
        gc.enable()
    return max(min(runs), 1e-4)  # the floor keeps a too-quick small run from inflating the ratio


@pytest.mark.parametrize("shape", sorted(ADVERSARIAL))
def test_the_check_takes_time_in_proportion_to_the_answer(shape: str) -> None:
    """Ten times the text costs about ten times the time, never a hundred (no backtracking blow-up)."""
    make = ADVERSARIAL[shape]
    small, large = cpu_seconds(make(10_000)), cpu_seconds(make(100_000))
    assert large < 30 * small


def test_the_refusal_quotes_the_first_claim() -> None:
    message = claimed_action_answer(["Se mandó un correo a Empresa ABC", "Eliminé el cliente"])
    assert message == (
        "Lo siento, la respuesta del modelo decía que se hizo algo que el ERP no hizo "
        "(«Se mandó un correo a Empresa ABC»); el ERP solo consulta datos y no realizó esa acción, "
        "así que no la muestro ni la guardo."
    )


def test_the_refusal_shortens_a_long_claim_to_one_line() -> None:
    claim = "Se mandó un correo\na Empresa ABC " + "con su estado de cuenta detallado " * 10
    quoted = re.search("«(.*)»", claimed_action_answer([claim]))
    assert quoted is not None
    assert len(quoted.group(1)) <= QUOTE_LIMIT
    assert quoted.group(1).startswith("Se mandó un correo a Empresa ABC con")
    assert quoted.group(1).endswith("…")
    assert len(claimed_action_answer(["a" * 60_000])) < 400


def test_the_refusal_states_no_figure_of_its_own() -> None:
    assert not re.search(r"\d", claimed_action_answer(["Se mandó un correo a Empresa ABC"]))
    assert not re.search(r"\d", claimed_action_answer([]))
    quoted = claimed_action_answer(["El precio ha sido cambiado a 50.000 guaraníes"])
    assert re.findall(r"\d+", quoted) == ["50", "000"]
