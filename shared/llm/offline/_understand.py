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


def _any(*alternatives: str) -> str:
    """One regex alternation from readable pieces."""
    return "|".join(alternatives)


_INTENTS: dict[str, str] = {
    "mejor_cliente": _any(
        r"mejor(?:es)? cliente", r"cliente (?:que|quien) mas (?:nos )?(?:compro|gasto)", "principal cliente",
        "cliente principal", "mayor cliente", "cliente mas importante", "best customer", "top customer",
        "biggest customer",
    ),
    "compras_cliente": _any(
        r"cuanto (?:nos )?(?:compro|ha comprado|gasto|nos ha comprado)", r"\bcompras (?:de|del|que)\b",
        r"how much did .+ (?:buy|purchase|spend)", r"\bpurchases (?:of|by|from)\b",
        r"how much has .+ (?:bought|spent)",
    ),
    "ventas_mensuales": _any(
        "mensual", "por mes", "mes a mes", "cada mes", r"\bmonthly\b", "by month", "per month",
        "month by month",
    ),
    "top_productos": _any(
        r"productos? mas vendidos?", r"\btop ?\w* ?productos?", "mejores productos",
        r"productos? (?:estrella|lider)", r"best[- ]selling", r"top[- ]selling", r"\btop \w* ?products?",
        "most sold", r"que productos? (?:se )?vend",
    ),
    "ventas_por_categoria": _any("categoria", "by category", "per category", "categories"),
    "facturas_pendientes": _any(
        "pendiente", "por cobrar", "impaga", "sin pagar", "no pagad", "adeud", "nos debe", r"\bdeudas?\b",
        r"\bunpaid\b", "outstanding", r"\bpending\b", r"\bowes?\b",
    ),
    "buscar_cliente": _any(
        r"\bbusca", r"\bencontra", r"\bencuentra", r"\bsearch", r"\bfind\b", "look up", r"\bruc\b",
        r"datos de(?:l)? cliente", "que clientes", r"lista(?:do)? de clientes",
        r"clientes (?:que|con|llamad)",
        "informacion del cliente",
    ),
    "ventas_anuales": _any(
        r"cuanto (?:vendimos|se vendio|facturamos|hemos vendido|vendio la empresa)", r"\bventas\b",
        r"\bvendimos\b", r"\bfacturacion\b", r"\bfacturamos\b", "how much did we sell", r"\bsales\b",
        r"\brevenue\b", r"\bsold\b",
    ),
}  # fmt: skip
_MONTH_SALES = r"\b(?:ventas|vendimos|vendio|facturamos|sales|sell|sold)\b"
_INJECTION = re.compile(
    _any(
        r"ignora\w* (?:\w+ )?(?:instrucciones|reglas|indicaciones)", r"olvida\w* (?:\w+ )?instrucciones",
        r"ignore (?:\w+ )?(?:previous |prior |your |the )?(?:instructions|rules)", "system prompt",
        "prompt del sistema", "jailbreak", "modo desarrollador", "developer mode",
    )
)  # fmt: skip
_DESTRUCTIVE = re.compile(
    r"\b(?:"
    + _any(
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
    _any(
        "quien eres", "quien sos", "que eres", "que sos", "que puedes hacer", "que podes hacer",
        "who are you",
        "what can you do", "como estas", "how are you", r"\bayuda\b", r"\bhelp\b", "como funciona",
    )
)  # fmt: skip
_FOLLOW_UP = re.compile(r"^\W*(?:y|and|e)\b|^\W*(?:que tal|what about|how about)\b")
_REFERENT = re.compile(
    r"^(?:ese|esa|este|esta|el|ella|dicho|mismo|that|this|him|her|it|them|same|nuestro|nuestra|mejor"
    r"|el mejor|que|quien|cual|mas|our|the best|best)\b"
)
_CUSTOMER_TRIGGERS = re.compile(
    r"(?:\bclientes?|\bcustomers?|\bclient|compr[oó]|compras del?|comprado|pendientes del?|facturas del?"
    r"|nos debe|debe|llamad[oa]s?|named|called|purchases (?:of|by|from)|did)\s+",
    re.IGNORECASE,
)
_NAME_STOP = re.compile(
    r"\s+(?:"
    + _any(
        "en", "durante", "desde", "hasta", "el año", "el ano", r"(?:este|ese) (?:año|ano|mes)", "in",
        "during",
        "for", "this", "last", "since", "y", "and", "por", "tiene", "tienen", "compr[oó]", "buy", "bought",
        "spend", "spent", "purchase", r"de (?:19|20)\d\d", "del año", "del ano", "el mes", "hace", "that",
        "with",
    )
    + r")\b|[?¿!¡,;:()]|\.(?:\s|$)|\s+(?:19|20)\d\d\b",
    re.IGNORECASE,
)  # fmt: skip
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
    "and", "the", "en", "de", "del", "el", "la", "ventas", "facturas", "compras", "mejor", "cliente", "i",
    "we", "ruc", "datos", "busca", "buscar", "search", "find",
}  # fmt: skip
_NOT_A_NAME = re.compile(
    r"(?:mas|menos|mucho|poco|algo|nada|you|we|they|pago|cobro|cobrar|pagar|todos|todas)"
)


@dataclass(frozen=True)
class Step:
    """One operation to run; ``needs`` names an earlier step whose result's ``cliente`` fills ``cliente``."""

    key: str
    funcion: str
    parametros: dict[str, Any]
    needs: str | None = None


@dataclass(frozen=True)
class Understanding:
    """What a question needs: operations, or a reply without operations (small talk, refusal, question)."""

    kind: Kind
    steps: tuple[Step, ...] = ()
    reply: str = ""
    intents: tuple[str, ...] = field(default=())


REPLIES = {
    "greeting": "¡Hola! Soy el asistente de ventas del ERP. Puedo consultar ventas anuales y mensuales, el "
    "mejor cliente, las compras de un cliente, los productos más vendidos, las ventas por categoría, las "
    "facturas pendientes y buscar clientes. ¿Qué quieres saber?",
    "thanks": "¡De nada! Si necesitas otra consulta de ventas, aquí estoy.",
    "bye": "¡Hasta luego! Cuando quieras seguimos con tus consultas de ventas.",
    "destructive": "No puedo modificar, crear ni borrar datos del ERP: solo puedo consultar información de "
    "ventas.",
    "injection": "No puedo cambiar mis instrucciones. Puedo ayudarte con consultas de ventas, clientes, "
    "productos y facturas del ERP.",
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
    asks_total = re.search(
        r"cuanto (?:vendimos|facturamos)|ventas (?:totales|de|del|en)|how much did we sell", folded
    )
    if "ventas_anuales" in names and {"mejor_cliente", "compras_cliente"} & set(names) and not asks_total:
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
    if folded in _CAPITAL_STOP or re.fullmatch(
        r"(?:mas|menos|mucho|poco|algo|nada|you|we|they|pago|cobro|cobrar|pagar|todos|todas)", folded
    ):
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
    years_to_plan: list[int | None] = list(year_values) or [None]
    for year in years_to_plan:
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
