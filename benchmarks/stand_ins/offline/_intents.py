"""What a question asks for: the sales operations its keywords announce, or a refusal or small talk.

Keyword patterns run over the folded question (Spanish first, English too), split into requests at
"y"/"and"/commas.
"""

from __future__ import annotations

import re

from benchmarks.stand_ins.offline._names import any_of
from benchmarks.stand_ins.offline._numbers import find_month, year_spans
from benchmarks.stand_ins.offline._prompt import Conversation

_INTENTS: dict[str, str] = {
    "mejor_cliente": any_of(
        r"mejor(?:es)? cliente", r"cliente (?:que|quien) mas (?:nos )?(?:compro|gasto)", "principal cliente",
        "cliente principal", "mayor cliente", "cliente mas importante",
        r"cliente (?:con|de) mas (?:ventas|compras)",
        r"quien(?:es)? (?:nos |me )?(?:compro|compraron|gasto|gastaron|ha comprado|han comprado) mas",
        r"quien (?:fue|es) (?:el|la) que mas (?:nos |me )?(?:compro|gasto)",
        "best customer", "top customer", "biggest customer",
        r"(?:who|which customer) (?:bought|spent|purchased) (?:the )?most",
    ),
    "compras_cliente": any_of(
        r"cuanto (?:nos |me )?(?:compro|compraron|ha comprado|han comprado|gasto|gastaron|nos ha comprado)",
        r"\bcompras (?:de|del|que)\b", r"how much did .+ (?:buy|purchase|spend)",
        r"\bpurchases (?:of|by|from)\b",
        r"how much (?:has|have) .+ (?:bought|spent|purchased)",
    ),
    "ventas_mensuales": any_of(
        "mensual", "por mes", "mes a mes", "cada mes", r"\bmonthly\b", "by month", "per month",
        "month by month",
    ),
    "top_productos": any_of(
        r"productos? mas vendidos?", r"\btop ?\w* ?productos?", "mejores productos",
        r"productos? (?:estrella|lider)", r"best[- ]selling", r"top[- ]selling", r"\btop \w* ?products?",
        "most sold", r"que productos? (?:se )?vend", r"\b(?:los|las|lo) (?:\w+ )?mas vendid[oa]s?\b",
        r"\bbest ?sellers?\b", r"\bmost popular products?\b",
        r"\b(?:primeros|principales) (?:\w+ )?productos\b",
    ),
    "ventas_por_categoria": any_of("categoria", "by category", "per category", "categories"),
    "facturas_pendientes": any_of(
        "pendiente", "por cobrar", "impaga", "sin pagar", "no pagad", "adeud", "nos debe", r"\bdeudas?\b",
        r"\b(?:cuanto|que|nos|me|le|les) deben?\b", r"\bdeben? (?:algo|dinero|plata|todavia|aun)\b",
        r"\bfaltan? (?:pagar|cobrar|abonar|saldar)\b",
        r"\bquedan? por (?:pagar|cobrar)\b", r"\bpor pagar\b", r"\bfacturas vencidas\b",
        r"\bunpaid\b", "outstanding", r"\bpending\b", r"\bowe[sd]?\b", r"\bowing\b", r"\boverdue\b",
        r"\b(?:amount|balance) due\b", r"\byet to pay\b", r"\bhas(?:n't| not) (?:yet )?paid\b",
    ),
    "buscar_cliente": any_of(
        r"\bbusca", r"\bencontra", r"\bencuentra", r"\bsearch", r"\bfind\b", "look up", r"\bruc\b",
        r"datos de(?:l)? cliente", "que clientes", r"lista(?:do)? de clientes",
        r"clientes (?:que|con|llamad)",
        "informacion del cliente",
    ),
    "ventas_anuales": any_of(
        r"cuanto (?:vendimos|se vendio|facturamos|hemos vendido|vendio la empresa)", r"\bventas\b",
        r"\bvendimos\b", r"\bfacturacion\b", r"\bfacturamos\b",
        r"\b(?:llevamos|llevan|lleva|hemos|van|va|tenemos) (?:vendido|facturado)\b",
        r"\btotal (?:vendido|facturado)\b", "how much did we sell",
        r"how much (?:have we|we've|we have) (?:sold|invoiced|billed)", r"\bsales\b", r"\brevenue\b",
        r"\bsold\b",
    ),
}  # fmt: skip
"""Keyword patterns (over folded text) that announce each sales operation."""
_MONTH_SALES = r"\b(?:ventas|vendimos|vendio|vendido|facturamos|facturado|facturacion|sales|sell|sold)\b"
_TOTAL_SALES = re.compile(
    r"cuanto (?:vendimos|facturamos|hemos vendido|llevamos vendido)|ventas totales|total de ventas"
    r"|how much (?:did|have) we sell"
)
"""An explicit ask for the year's total, kept next to more specific sales intents."""
_CLAUSE = re.compile(r"\s*[,;]\s*|\s+(?:y|and|ademas|tambien|also)\s+")
"""Where one request ends and the next begins ("ventas de este año y facturas pendientes")."""
BEST = re.compile(_INTENTS["mejor_cliente"])
_YEAR_LINK = re.compile(r"\s*(?:(?:de|del|en|of|in|for|durante|during)\s+)?(?:(?:el|the)\s+)?")
"""What may sit between "mejor cliente" and the year it belongs to ("mejor cliente de/en 2024")."""
_IMPLICIT_CUSTOMER = re.compile(
    any_of(
        r"\b(?:tiene|debe|adeuda)\b", r"\bles? (?:falta|faltan|queda|quedan)\b",
        r"\b(?:does|did) (?:he|she|it|they) (?:have|owe)\b", r"\b(?:he|she|it) (?:owes|has)\b",
        r"\b(?:su|sus|his|her|its|their) (?:facturas|deudas?|invoices|debts?)\b",
    )
)  # fmt: skip
"""A customer as the implicit subject: "¿tiene facturas pendientes?", "¿qué le falta pagar?"."""
GENERAL_SUBJECT = re.compile(
    r"\b(?:tenemos|tengo|hay|quien|quienes|que clientes|cuales clientes|who|which customers|are there"
    r"|do we|we have)\b"
)
"""Questions about all customers or about us, even when they contain "tiene" or "debe"."""
_INJECTION = re.compile(
    any_of(
        r"ignora\w* (?:\w+ )?(?:instrucciones|reglas|indicaciones)", r"olvida\w* (?:\w+ )?instrucciones",
        r"ignore (?:\w+ )?(?:previous |prior |your |the )?(?:instructions|rules)", "system prompt",
        "prompt del sistema", "jailbreak", "modo desarrollador", "developer mode",
    )
)  # fmt: skip
_DESTRUCTIVE = re.compile(
    r"\b(?:"
    + any_of(
        "borra", "borrar", "borre", "borren", "elimina", "eliminar", "elimine", "eliminen", "modifica",
        "modificar", "modifique", "actualiza", "actualizar", "actualice", "cambia", "cambiar", "cambie",
        "inserta", "insertar", "anula", "anular", "anule", "crea", "crear", "creame", "registra", "registrar",
        "agrega", "agregar", "delete", "drop", "update", "insert", "truncate", "remove", "alter", "modify",
        "create", "add",
    )
    + r")\b"
)  # fmt: skip
_GREETING = re.compile(
    r"^\W*(?:hola|buenas|buen dia|buenos dias|buenas tardes|buenas noches|hello|hi|hey|saludos|que tal)\b"
)
_THANKS = re.compile(r"\b(?:gracias|thanks|thank you|perfecto|genial|excelente|de acuerdo)\b")
_BYE = re.compile(r"\b(?:chau|adios|hasta luego|bye|goodbye|nos vemos)\b")
_WHO = re.compile(
    any_of(
        "quien eres", "quien sos", "que eres", "que sos", "que puedes hacer", "que podes hacer",
        "who are you",
        "what can you do", "como estas", "how are you", r"\bayuda\b", r"\bhelp\b", "como funciona",
    )
)  # fmt: skip
FOLLOW_UP = re.compile(r"^\W*(?:y|and|e)\b|^\W*(?:que tal|what about|how about)\b")


def _raw_intents(folded: str) -> list[str]:
    found = sorted(
        (match.start(), name) for name, pattern in _INTENTS.items() if (match := re.search(pattern, folded))
    )
    names = [name for _, name in found]
    month, _ = find_month(folded, None)
    if month and re.search(_MONTH_SALES, folded) and "ventas_mensuales" not in names:
        names.append("ventas_mensuales")
    return names


def _clauses(folded: str) -> list[str]:
    """The requests a question joins with commas, "y" or "and"."""
    return [part for part in _CLAUSE.split(folded) if part.strip()]


def detect_intents(folded: str) -> list[str]:
    """Sales intents in order of first mention.

    Generic "ventas" yields to a more specific intent in the same request ("ventas por categoría", "el
    cliente con más ventas"); it stays when it is a request of its own ("las ventas de este año y las facturas
    pendientes") or an explicit ask for the total. Monthly and category sales already carry the year's total.
    """
    names = _raw_intents(folded)
    if "ventas_anuales" in names and len(names) > 1:
        others = set(names) - {"ventas_anuales"}
        alone = any(_raw_intents(part) == ["ventas_anuales"] for part in _clauses(folded))
        if {"ventas_mensuales", "ventas_por_categoria"} & others or not (
            alone or _TOTAL_SALES.search(folded)
        ):
            names.remove("ventas_anuales")
    if "buscar_cliente" in names and {"compras_cliente", "facturas_pendientes"} & set(names):
        names.remove("buscar_cliente")
    return names


def refers_to_customer(folded: str) -> bool:
    """Whether the question points at the customer in context ("ese cliente", "¿tiene facturas?")."""
    if re.search(r"\b(?:ese|este|dicho|mismo|aquel) cliente\b|\bthat customer\b|\bthis customer\b", folded):
        return True
    return bool(_IMPLICIT_CUSTOMER.search(folded)) and not GENERAL_SUBJECT.search(folded)


def best_customer_year(folded: str, conversation: Conversation) -> int | None:
    """The year written right after "mejor cliente" ("el que fue nuestro mejor cliente en 2024")."""
    spans = year_spans(folded, conversation.today, conversation.anio)
    for match in BEST.finditer(folded):
        for start, _, value in spans:
            if (
                start >= match.end()
                and value is not None
                and _YEAR_LINK.fullmatch(folded[match.end() : start])
            ):
                return value
    return None


def pending_of_best_customer(folded: str) -> bool:
    """Whether the pending invoices asked for are the best customer's, not everyone's.

    True when "mejor cliente" and the pending invoices share a request ("¿qué facturas tiene pendientes
    nuestro mejor cliente?") or the invoices' request has the customer as implicit subject ("¿cuál fue el
    mejor cliente y qué le falta pagar?").
    """
    pending = re.compile(_INTENTS["facturas_pendientes"])
    return any(
        pending.search(part) and (BEST.search(part) or refers_to_customer(part)) for part in _clauses(folded)
    )


def refusal(folded: str) -> str | None:
    """The reply key of a request the model refuses outright (an injection, a write), or ``None``."""
    if _INJECTION.search(folded):
        return "injection"
    if _DESTRUCTIVE.search(folded):
        return "destructive"
    return None


def small_talk(folded: str) -> str | None:
    """The reply key of thanks, a goodbye, a greeting or a question about the assistant, or ``None``."""
    if _THANKS.search(folded):
        return "thanks"
    if _BYE.search(folded):
        return "bye"
    if _GREETING.search(folded) or _WHO.search(folded):
        return "greeting"
    return None
