"""Understanding a question: which sales operations it needs, with which parameters, or what to say instead.

This is the offline model's "reasoning": keyword patterns over the folded question (Spanish first, English
too), years from :mod:`._years`, customer names from the text, and follow-up references resolved from the
:class:`~._prompt.Conversation` the prompt carries. It only ever proposes operations named in the prompt.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Literal

from shared.llm.offline._prompt import Conversation
from shared.llm.offline._years import find_limit, find_month, find_years
from shared.text import fold

KNOWN_OPERATIONS: tuple[str, ...] = (
    "ventas_anuales",
    "mejor_cliente",
    "compras_cliente",
    "ventas_mensuales",
    "top_productos",
    "ventas_por_categoria",
    "facturas_pendientes",
    "buscar_cliente",
)
"""The sales operations the offline model understands (it uses only those its prompt offers)."""

YEAR_OPERATIONS = frozenset(
    {"ventas_anuales", "mejor_cliente", "compras_cliente", "ventas_mensuales", "top_productos",
     "ventas_por_categoria"}
)  # fmt: skip

Kind = Literal["operations", "small_talk", "unsupported", "clarify"]

_INTENTS: dict[str, str] = {
    "mejor_cliente": r"mejor(?:es)? cliente|cliente (?:que|quien) mas (?:nos )?(?:compro|gasto)|principal cliente"
    r"|cliente principal|mayor cliente|cliente mas importante|best customer|top customer|biggest customer",
    "compras_cliente": r"cuanto (?:nos )?(?:compro|ha comprado|gasto|nos ha comprado)|\bcompras (?:de|del|que)\b"
    r"|how much did .+ (?:buy|purchase|spend)|\bpurchases (?:of|by|from)\b|how much has .+ (?:bought|spent)",
    "ventas_mensuales": r"mensual|por mes|mes a mes|cada mes|\bmonthly\b|by month|per month|month by month",
    "top_productos": r"productos? mas vendidos?|\btop ?\w* ?productos?|mejores productos|productos? (?:estrella|lider)"
    r"|best[- ]selling|top[- ]selling|\btop \w* ?products?|most sold|que productos? (?:se )?vend",
    "ventas_por_categoria": r"categoria|by category|per category|categories",
    "facturas_pendientes": r"pendiente|por cobrar|impaga|sin pagar|no pagad|adeud|nos debe|\bdeudas?\b|\bunpaid\b"
    r"|outstanding|\bpending\b|\bowes?\b",
    "buscar_cliente": r"\bbusca|\bencontra|\bencuentra|\bsearch|\bfind\b|look up|\bruc\b|datos de(?:l)? cliente"
    r"|que clientes|lista(?:do)? de clientes|clientes (?:que|con|llamad)|informacion del cliente",
    "ventas_anuales": r"cuanto (?:vendimos|se vendio|facturamos|hemos vendido|vendio la empresa)|\bventas\b"
    r"|\bvendimos\b|\bfacturacion\b|\bfacturamos\b|how much did we sell|\bsales\b|\brevenue\b|\bsold\b",
}
_MONTH_SALES = r"\b(?:ventas|vendimos|vendio|facturamos|sales|sell|sold)\b"
_INJECTION = re.compile(
    r"ignora\w* (?:\w+ )?(?:instrucciones|reglas|indicaciones)|olvida\w* (?:\w+ )?instrucciones"
    r"|ignore (?:\w+ )?(?:previous |prior |your |the )?(?:instructions|rules)|system prompt|prompt del sistema"
    r"|jailbreak|modo desarrollador|developer mode"
)
_DESTRUCTIVE = re.compile(
    r"\b(?:borra|borrar|borre|borren|elimina|eliminar|elimine|eliminen|modifica|modificar|modifique|actualiza"
    r"|actualizar|actualice|cambia|cambiar|cambie|inserta|insertar|anula|anular|anule|crea|crear|creame|registra"
    r"|registrar|agrega|agregar|delete|drop|update|insert|truncate|remove|alter|modify|create|add)\b"
)
_GREETING = re.compile(
    r"^\W*(?:hola|buenas|buen dia|buenos dias|buenas tardes|buenas noches|hello|hi|hey|saludos|que tal)\b"
)
_THANKS = re.compile(r"\b(?:gracias|thanks|thank you|perfecto|genial|excelente|de acuerdo)\b")
_BYE = re.compile(r"\b(?:chau|adios|hasta luego|bye|goodbye|nos vemos)\b")
_WHO = re.compile(
    r"quien eres|quien sos|que eres|que sos|que puedes hacer|que podes hacer|who are you|what can you do"
    r"|como estas|how are you|\bayuda\b|\bhelp\b|como funciona"
)
_FOLLOW_UP = re.compile(r"^\W*(?:y|and|e)\b|^\W*(?:que tal|what about|how about)\b")
_REFERENT = re.compile(
    r"^(?:ese|esa|este|esta|el|ella|dicho|mismo|that|this|him|her|it|them|same|nuestro|nuestra|mejor|el mejor"
    r"|que|quien|cual|mas|our|the best|best)\b"
)
_CUSTOMER_TRIGGERS = re.compile(
    r"(?:\bclientes?|\bcustomers?|\bclient|compr[oó]|compras del?|comprado|pendientes del?|facturas del?"
    r"|nos debe|debe|llamad[oa]s?|named|called|purchases (?:of|by|from)|did)\s+",
    re.IGNORECASE,
)
_NAME_STOP = re.compile(
    r"\s+(?:en|durante|desde|hasta|el año|el ano|(?:este|ese) (?:año|ano|mes)|in|during|for|this|last|since|y|and|por|tiene|tienen"
    r"|compr[oó]|buy|bought|spend|spent|purchase|de (?:19|20)\d\d|del año|del ano|el mes|hace|that|with)\b"
    r"|[?¿!¡,;:()]|\.(?:\s|$)|\s+(?:19|20)\d\d\b",
    re.IGNORECASE,
)
_LEADING = re.compile(
    r"^(?:(?:la|el|los|las|a|al|nos|nuestro|nuestra|the|our|de|del|cliente|customer|empresa llamada)\s+)+",
    re.IGNORECASE,
)
_QUOTED = re.compile(r"[\"“«']([^\"”»']{2,80})[\"”»']")
_CAPITALISED = re.compile(
    r"\b([A-ZÁÉÍÓÚÑ][\w&\-]*\.?(?:\s+(?:(?:de|del|y|&)\s+)?[A-ZÁÉÍÓÚÑ0-9][\w&\-]*\.?)+)"
)
_CAPITAL_STOP = {
    "cuanto", "cuantos", "cual", "cuales", "que", "quien", "como", "donde", "cuando", "y", "hola", "dame",
    "decime", "dime", "muestra", "mostrame", "lista", "how", "what", "which", "who", "show", "give", "list",
    "and", "the", "en", "de", "del", "el", "la", "ventas", "facturas", "compras", "mejor", "cliente", "i", "we",
    "ruc", "datos", "busca", "buscar", "search", "find",
}  # fmt: skip


@dataclass(frozen=True)
class Step:
    """One operation to run. ``needs`` names an earlier step whose result's ``cliente`` fills ``cliente``."""

    key: str
    funcion: str
    parametros: dict[str, Any]
    needs: str | None = None


@dataclass(frozen=True)
class Understanding:
    """What a question needs: operations, or a reply with no operation (small talk, refusal, clarification)."""

    kind: Kind
    steps: tuple[Step, ...] = ()
    reply: str = ""
    intents: tuple[str, ...] = field(default=())


REPLIES = {
    "greeting": "¡Hola! Soy el asistente de ventas del ERP. Puedo consultar ventas anuales y mensuales, el mejor "
    "cliente, las compras de un cliente, los productos más vendidos, las ventas por categoría, las facturas "
    "pendientes y buscar clientes. ¿Qué quieres saber?",
    "thanks": "¡De nada! Si necesitas otra consulta de ventas, aquí estoy.",
    "bye": "¡Hasta luego! Cuando quieras seguimos con tus consultas de ventas.",
    "destructive": "No puedo modificar, crear ni borrar datos del ERP: solo puedo consultar información de ventas.",
    "injection": "No puedo cambiar mis instrucciones. Puedo ayudarte con consultas de ventas, clientes, productos "
    "y facturas del ERP.",
    "unsupported": "Lo siento, no puedo ayudarte con eso: solo puedo consultar información de ventas del ERP "
    "(ventas, clientes, productos y facturas).",
    "no_operation": "No tengo una operación disponible para consultar ese dato en el ERP.",
    "which_customer": "¿De qué cliente quieres saber las compras? Indícame su nombre.",
    "which_year": "¿De qué año quieres la información?",
    "which_text": "¿Qué cliente quieres buscar? Indícame el nombre o parte de él.",
}
"""The fixed replies for questions that need no operation."""


def detect_intents(folded: str) -> list[str]:
    """Sales intents in order of first mention; generic "ventas" yields to more specific sales intents."""
    found: list[tuple[int, str]] = []
    for name, pattern in _INTENTS.items():
        match = re.search(pattern, folded)
        if match:
            found.append((match.start(), name))
    names = [name for _, name in sorted(found)]
    month, _ = find_month(folded, None)
    if month and re.search(_MONTH_SALES, folded) and "ventas_mensuales" not in names:
        names.append("ventas_mensuales")
    specific = {"ventas_mensuales", "ventas_por_categoria", "top_productos", "facturas_pendientes"}
    if "ventas_anuales" in names and specific & set(names):
        explicit_total = re.search(r"cuanto (?:vendimos|facturamos)|ventas totales|total de ventas", folded)
        if not explicit_total or {"ventas_mensuales", "ventas_por_categoria"} & set(names):
            names.remove("ventas_anuales")
    if "ventas_anuales" in names and {"mejor_cliente", "compras_cliente"} & set(names):
        if not re.search(
            r"cuanto (?:vendimos|facturamos)|ventas (?:totales|de|del|en)|how much did we sell", folded
        ):
            names.remove("ventas_anuales")
    if "buscar_cliente" in names and {"compras_cliente", "facturas_pendientes"} & set(names):
        names.remove("buscar_cliente")
    return names


def extract_customer(question: str) -> str | None:
    """A customer name written in the question: quoted, after a trigger word, or a capitalised name."""
    quoted = _QUOTED.search(question)
    if quoted:
        return quoted.group(1).strip()
    for match in _CUSTOMER_TRIGGERS.finditer(question):
        candidate = _clean_name(question[match.end() :])
        if candidate:
            return candidate
    for match in _CAPITALISED.finditer(question):
        words = match.group(1).split()
        while words and fold(words[0]).strip(".") in _CAPITAL_STOP:
            words = words[1:]
        if len(words) >= 2 or (words and words[0].isupper() and len(words[0]) > 1):
            return " ".join(words)
    return None


def _clean_name(text: str) -> str | None:
    cut = _NAME_STOP.search(text)
    name = (text[: cut.start()] if cut else text).strip()
    name = _LEADING.sub("", name).strip(" .")
    folded = fold(name)
    if not name or _REFERENT.match(folded) or re.match(r"^\d", name) or len(name) < 2:
        return None
    if folded in _CAPITAL_STOP or re.fullmatch(r"(?:mas|menos|mucho|poco|algo|nada|you|we|they|pago|cobro|cobrar|pagar|todos|todas)", folded):
        return None
    return name


def _refers_to_customer(folded: str) -> bool:
    return bool(
        re.search(r"\b(?:ese|este|dicho|mismo|aquel) cliente\b|\bthat customer\b|\bthis customer\b", folded)
    )


def understand(
    question: str, conversation: Conversation, available: set[str] | frozenset[str]
) -> Understanding:
    """What ``question`` needs, given the prompt's ``conversation`` and the operations the prompt offers."""
    folded = fold(question)
    if _INJECTION.search(folded):
        return Understanding("unsupported", reply=REPLIES["injection"])
    if _DESTRUCTIVE.search(folded):
        return Understanding("unsupported", reply=REPLIES["destructive"])
    intents = detect_intents(folded)
    if not intents:
        follow_up = _repeat_previous(question, folded, conversation)
        if follow_up is not None:
            intents, overrides = follow_up
            return _build(question, folded, intents, conversation, available, overrides)
        return _no_operation(folded)
    return _build(question, folded, intents, conversation, available, {})


def _no_operation(folded: str) -> Understanding:
    if _THANKS.search(folded):
        return Understanding("small_talk", reply=REPLIES["thanks"])
    if _BYE.search(folded):
        return Understanding("small_talk", reply=REPLIES["bye"])
    if _GREETING.search(folded) or _WHO.search(folded):
        return Understanding("small_talk", reply=REPLIES["greeting"])
    return Understanding("unsupported", reply=REPLIES["unsupported"])


def _repeat_previous(
    question: str, folded: str, conversation: Conversation
) -> tuple[list[str], dict[str, dict[str, Any]]] | None:
    """A follow-up such as "¿y en 2024?" or "¿y Comercial Sur?" repeats the previous operations."""
    years = find_years(folded, conversation.today, conversation.anio)
    customer = extract_customer(question)
    if not (_FOLLOW_UP.search(folded) or years.mentioned) or len(folded.split()) > 8:
        return None
    if not years.mentioned and not customer:
        return None
    previous = list(conversation.previous_operations)
    if not previous and conversation.previous_question:
        previous = [(name, {}) for name in detect_intents(fold(conversation.previous_question))]
    if not previous and fold(str(conversation.state.get("tema", ""))) == "ventas":
        previous = [("ventas_anuales", {})]
    if not previous:
        return None
    names: list[str] = []
    overrides: dict[str, dict[str, Any]] = {}
    for name, params in previous:
        if name in names:
            continue
        names.append(name)
        kept = {k: v for k, v in params.items() if k not in ("anio",) and not isinstance(v, dict)}
        if customer and "cliente" in params:
            kept["cliente"] = customer
        overrides[name] = kept
    return names, overrides


def _build(
    question: str,
    folded: str,
    intents: list[str],
    conversation: Conversation,
    available: set[str] | frozenset[str],
    overrides: dict[str, dict[str, Any]],
) -> Understanding:
    usable = [name for name in intents if name in available]
    if not usable:
        return Understanding("unsupported", reply=REPLIES["no_operation"], intents=tuple(intents))
    years = find_years(folded, conversation.today, conversation.anio)
    month, month_year = find_month(folded, conversation.today)
    needs_year = any(name in YEAR_OPERATIONS for name in usable)
    year_values: list[int] = list(years.values)
    if month_year and not year_values:
        year_values = [month_year]
    if needs_year and not year_values:
        if years.unresolved:
            return Understanding("clarify", reply=REPLIES["which_year"], intents=tuple(usable))
        fallback = conversation.anio or (conversation.today.year if conversation.today else None)
        if fallback is None:
            return Understanding("clarify", reply=REPLIES["which_year"], intents=tuple(usable))
        year_values = [fallback]

    customer = extract_customer(question)
    refers = _refers_to_customer(folded)
    best_customer_chain = "compras_cliente" in usable and (
        "mejor_cliente" in usable or re.search(r"mejor cliente|best customer", folded) is not None
    )
    if best_customer_chain and "mejor_cliente" in available:
        if "mejor_cliente" in usable:
            usable.remove("mejor_cliente")
        usable.insert(usable.index("compras_cliente"), "mejor_cliente")

    steps: list[Step] = []
    for year in year_values or [None]:
        best_key: str | None = None
        for name in usable:
            if name not in YEAR_OPERATIONS and year is not None and year != year_values[0]:
                continue
            key = f"op{len(steps) + 1}"
            params: dict[str, Any] = dict(overrides.get(name, {}))
            needs: str | None = None
            if name in YEAR_OPERATIONS and year is not None:
                params["anio"] = year
            if name == "mejor_cliente":
                best_key = key
            elif name == "compras_cliente":
                if best_customer_chain and best_key is not None:
                    params["cliente"] = {"$ref": f"{best_key}.cliente"}
                    needs = best_key
                else:
                    chosen = customer or params.get("cliente") or conversation.cliente
                    if not chosen:
                        return Understanding(
                            "clarify", reply=REPLIES["which_customer"], intents=tuple(usable)
                        )
                    params["cliente"] = chosen
            elif name == "ventas_mensuales" and month:
                params["mes"] = month
            elif name == "top_productos":
                limit = find_limit(folded)
                if limit is None and re.search(
                    r"\bel producto mas vendido|\bthe best[- ]selling product\b", folded
                ):
                    limit = 1
                if limit:
                    params["limite"] = limit
            elif name == "facturas_pendientes":
                chosen = customer or (conversation.cliente if refers else None) or params.get("cliente")
                if chosen:
                    params["cliente"] = chosen
            elif name == "buscar_cliente":
                chosen = customer or params.get("texto")
                if not chosen:
                    return Understanding("clarify", reply=REPLIES["which_text"], intents=tuple(usable))
                params["texto"] = chosen
            steps.append(Step(key=key, funcion=name, parametros=params, needs=needs))
    return Understanding("operations", steps=tuple(steps), intents=tuple(usable))
