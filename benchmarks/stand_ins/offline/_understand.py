"""Understanding a question: which sales operations it needs, with which parameters, or what to say instead.

This is the offline model's "reasoning": keyword patterns over the folded question (Spanish first, English
too), split into requests at "y"/"and"/commas; customer names from :mod:`._names`, and follow-up references
resolved from the :class:`~._prompt.Conversation` the prompt carries. A follow-up repeats the previous
operations unless it brings a new intent of its own. It only ever proposes operations named in the prompt.

Years and months are explicit or relative to the prompt's ``Fecha de hoy`` ("este año", "hace dos años") or
to the conversation's year ("ese año"); an expression the prompt cannot resolve is reported as unresolved,
never guessed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from datetime import date
from typing import Any, Literal

from benchmarks.stand_ins.offline._answers import DESCRIPTIONS, MONTHS_ES, REPLIES, not_offered
from benchmarks.stand_ins.offline._names import any_of, extract_customers
from benchmarks.stand_ins.offline._prompt import Conversation
from shared.text import fold

KNOWN_OPERATIONS: tuple[str, ...] = tuple(DESCRIPTIONS)
"""The sales operations the offline model understands (it uses only those its prompt offers)."""

YEAR_OPERATIONS = frozenset(
    {"ventas_anuales", "mejor_cliente", "compras_cliente", "ventas_mensuales", "top_productos",
     "ventas_por_categoria"}
)  # fmt: skip

Kind = Literal["operations", "small_talk", "unsupported", "clarify"]

_NUMBERS = {
    "un": 1, "uno": 1, "una": 1, "one": 1, "a": 1, "dos": 2, "two": 2, "tres": 3, "three": 3,
    "cuatro": 4, "four": 4, "cinco": 5, "five": 5, "seis": 6, "six": 6, "siete": 7, "seven": 7,
    "ocho": 8, "eight": 8, "nueve": 9, "nine": 9, "diez": 10, "ten": 10, "veinte": 20, "twenty": 20,
}  # fmt: skip

_MONTHS_EN = [
    "january", "february", "march", "april", "may", "june",
    "july", "august", "september", "october", "november", "december",
]  # fmt: skip

_EXPLICIT = r"\b(?:19|20)\d{2}\b"
_THIS = (
    r"\beste ano\b|\bano actual\b|\bano en curso\b|\blo que va del? ano\b|\bthis year\b|\bcurrent year\b"
    r"|\byear to date\b"
)
_LAST = r"\bano pasado\b|\blast year\b"
_PREVIOUS = r"\bano anterior\b|\bprevious year\b|\byear before\b|\bprior year\b"
_AGO = r"\bhace (\w+) anos?\b|\b(\w+) years? ago\b"
_THAT = r"\b(?:ese|aquel|mismo|dicho) ano\b|\bthat year\b|\bsame year\b"
_NEXT = r"\bproximo ano\b|\bano que viene\b|\bnext year\b"
_PATTERN = re.compile(
    "|".join(
        f"(?P<{name}>{pattern})"
        for name, pattern in [
            ("explicit", _EXPLICIT),
            ("this", _THIS),
            ("last", _LAST),
            ("previous", _PREVIOUS),
            ("ago", _AGO.replace("(\\w+)", "\\w+")),
            ("that", _THAT),
            ("next", _NEXT),
        ]
    )
)


@dataclass(frozen=True)
class Years:
    """The years a question refers to, in order of mention."""

    values: tuple[int, ...]
    mentioned: bool
    """Whether the question mentions a year at all, explicitly or relatively."""
    unresolved: bool
    """Whether a relative expression could not be resolved from the prompt."""


def _count(word: str) -> int | None:
    if word.isdigit():
        return int(word)
    return _NUMBERS.get(word)


_TODAY_OFFSETS = {"this": 0, "last": -1, "next": 1}
"""Year expressions relative to the prompt's date, and how many years each one moves."""


def year_spans(
    folded: str, today: date | None, conversation_year: int | None
) -> list[tuple[int, int, int | None]]:
    """``(start, end, year)`` for each year expression in ``folded``; ``year`` is ``None`` if unresolved."""
    spans: list[tuple[int, int, int | None]] = []
    for match in _PATTERN.finditer(folded):
        kind = match.lastgroup
        value: int | None = None
        if kind == "explicit":
            value = int(match.group())
        elif kind in _TODAY_OFFSETS:
            value = today.year + _TODAY_OFFSETS[kind] if today else None
        elif kind == "previous":
            base = conversation_year or (today.year if today else None)
            value = base - 1 if base else None
        elif kind == "that":
            value = conversation_year
        elif kind == "ago":
            words = re.match(_AGO, match.group())
            word = next((g for g in words.groups() if g), "") if words else ""
            count = _count(word)
            value = today.year - count if today and count else None
        spans.append((match.start(), match.end(), value))
    return spans


def find_years(folded: str, today: date | None, conversation_year: int | None) -> Years:
    """Years in ``folded`` (a :func:`shared.text.fold`-ed question)."""
    spans = year_spans(folded, today, conversation_year)
    values = tuple(dict.fromkeys(value for _, _, value in spans if value is not None))
    unresolved = any(value is None for _, _, value in spans)
    return Years(values=values, mentioned=bool(spans), unresolved=unresolved)


_MAY = re.compile(r"\bmayo\b|\b(?:in|about|of|for|during|since|until|from|and) may\b|\bmay (?:of |\d)")
"""English "may" is a month only where the modal verb cannot be ("in May", "May 2025")."""


def find_month(folded: str, today: date | None) -> tuple[int | None, int | None]:
    """``(month, year_override)`` named in the question: a month name, "este mes" or "el mes pasado"."""
    for index, (es, en) in enumerate(zip(MONTHS_ES, _MONTHS_EN, strict=True), start=1):
        if re.search(rf"\b(?:{es}|{en})\b", folded) and (en != "may" or _MAY.search(folded)):
            return index, None
    if today and re.search(r"\beste mes\b|\bthis month\b", folded):
        return today.month, today.year
    if today and re.search(r"\bmes pasado\b|\blast month\b", folded):
        if today.month == 1:
            return 12, today.year - 1
        return today.month - 1, today.year
    return None, None


_LIMITS = (
    re.compile(r"\btop\s*(\d{1,2}|\w+)\b"),
    re.compile(r"\b(\d{1,2}|\w+) (?:productos|products|articulos|items)\b"),
    re.compile(
        r"\b(?:los|las|the|primeros|primeras|first) (\d{1,2}|\w+) "
        r"(?:mas|mejores|primeros|principales|top|best|most|productos)\b"
    ),
)


def find_limit(folded: str) -> int | None:
    """A list size such as "top 3", "los 5 productos", "tres productos", "los 3 más vendidos"."""
    for pattern in _LIMITS:
        for match in pattern.finditer(folded):
            count = _count(match.group(1))
            if count and count <= 50:
                return count
    return None


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
_BEST = re.compile(_INTENTS["mejor_cliente"])
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
_GENERAL_SUBJECT = re.compile(
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
_FOLLOW_UP = re.compile(r"^\W*(?:y|and|e)\b|^\W*(?:que tal|what about|how about)\b")


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


def _raw_intents(folded: str) -> list[str]:
    found: list[tuple[int, str]] = []
    for name, pattern in _INTENTS.items():
        match = re.search(pattern, folded)
        if match:
            found.append((match.start(), name))
    names = [name for _, name in sorted(found)]
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


def _refers_to_customer(folded: str) -> bool:
    """Whether the question points at the customer in context ("ese cliente", "¿tiene facturas?")."""
    if re.search(r"\b(?:ese|este|dicho|mismo|aquel) cliente\b|\bthat customer\b|\bthis customer\b", folded):
        return True
    return bool(_IMPLICIT_CUSTOMER.search(folded)) and not _GENERAL_SUBJECT.search(folded)


def _best_customer_year(folded: str, conversation: Conversation) -> int | None:
    """The year written right after "mejor cliente" ("el que fue nuestro mejor cliente en 2024")."""
    spans = year_spans(folded, conversation.today, conversation.anio)
    for match in _BEST.finditer(folded):
        for start, _, value in spans:
            if (
                start >= match.end()
                and value is not None
                and _YEAR_LINK.fullmatch(folded[match.end() : start])
            ):
                return value
    return None


def _pending_of_best_customer(folded: str) -> bool:
    """Whether the pending invoices asked for are the best customer's, not everyone's.

    True when "mejor cliente" and the pending invoices share a request ("¿qué facturas tiene pendientes
    nuestro mejor cliente?") or the invoices' request has the customer as implicit subject ("¿cuál fue el
    mejor cliente y qué le falta pagar?").
    """
    pending = re.compile(_INTENTS["facturas_pendientes"])
    for part in _clauses(folded):
        if not pending.search(part):
            continue
        if _BEST.search(part) or _refers_to_customer(part):
            return True
    return False


def understand(
    question: str,
    conversation: Conversation,
    available: set[str] | frozenset[str],
    takes_year: set[str] | frozenset[str] = YEAR_OPERATIONS,
) -> Understanding:
    """What ``question`` needs, given the prompt's ``conversation``, the operations the prompt offers and
    those of them that take a year (``anio``), as its catalog or tools declare them."""
    folded = fold(question)
    if _INJECTION.search(folded):
        return Understanding("unsupported", reply=REPLIES["injection"])
    if _DESTRUCTIVE.search(folded):
        return Understanding("unsupported", reply=REPLIES["destructive"])
    intents = detect_intents(folded)
    if not intents:
        follow_up = _repeat_previous(question, folded, conversation)
        if isinstance(follow_up, Understanding):
            return follow_up
        if follow_up is not None:
            intents, overrides = follow_up
            return _build(question, folded, intents, conversation, available, overrides, takes_year)
        return _no_operation(folded)
    return _build(question, folded, intents, conversation, available, {}, takes_year)


def _no_operation(folded: str) -> Understanding:
    if _THANKS.search(folded):
        return Understanding("small_talk", reply=REPLIES["thanks"])
    if _BYE.search(folded):
        return Understanding("small_talk", reply=REPLIES["bye"])
    if _GREETING.search(folded) or _WHO.search(folded):
        return Understanding("small_talk", reply=REPLIES["greeting"])
    return Understanding("unsupported", reply=REPLIES["unsupported"])


_MONTHLY = {"ventas_anuales": "ventas_mensuales", "ventas_mensuales": "ventas_mensuales"}
"""Which earlier operation a month follow-up ("¿y en abril?") turns into."""


def _repeat_previous(
    question: str, folded: str, conversation: Conversation
) -> tuple[list[str], dict[str, dict[str, Any]]] | Understanding | None:
    """A follow-up ("¿y en 2024?", "¿y en abril?", "¿y Comercial Sur?") repeats the previous operations.

    The previous operations come from the prompt only: the conversation state, else the operations of the
    previous turn's messages, else a re-reading of the last exchange (its question, then its answer). A
    follow-up with nothing to repeat gets a question back, as a model would ask "¿qué quieres saber de 2024?".
    """
    years = find_years(folded, conversation.today, conversation.anio)
    month, _ = find_month(folded, conversation.today)
    customers = extract_customers(question)
    if not (_FOLLOW_UP.search(folded) or years.mentioned or month) or len(folded.split()) > 8:
        return None
    if not (years.mentioned or month or customers or find_limit(folded)):
        return None
    names: list[str] = []
    overrides: dict[str, dict[str, Any]] = {}
    previous = _previous_operations(conversation)
    for name, params in previous:
        target = _MONTHLY.get(name) if month else name
        if target is None or target in names:
            continue
        names.append(target)
        kept = {k: v for k, v in params.items() if k != "anio" and not isinstance(v, dict)}
        if customers and "cliente" in params:
            kept["cliente"] = customers[0]
        overrides[target] = kept
    if names:
        return names, overrides
    if previous:
        return Understanding("unsupported", reply=REPLIES["no_operation"])
    return Understanding("clarify", reply=REPLIES["which_data"])


def _previous_operations(conversation: Conversation) -> list[tuple[str, dict[str, Any]]]:
    if conversation.previous_operations:
        return list(conversation.previous_operations)
    if conversation.previous_question:
        # Read the previous question again, with what the prompt still says but without the exchange itself.
        earlier = replace(conversation, exchanges=(), previous_question=None, previous_operations=())
        steps = understand(conversation.previous_question, earlier, frozenset(KNOWN_OPERATIONS)).steps
        if steps:
            return [(step.funcion, step.parametros) for step in steps]
    if conversation.exchanges and re.search(r"\d", conversation.exchanges[-1][1]):
        # The last answer reported figures: what it talked about is what was asked.
        answer = fold(conversation.exchanges[-1][1])
        names = detect_intents(answer)
        if not names and re.search(r"\b(?:compro|bought)\b", answer):
            names = ["compras_cliente"]
        if names:
            return [(name, {}) for name in names]
    if fold(str(conversation.state.get("tema", ""))) == "ventas":
        return [("ventas_anuales", {})]
    return []


def _build(
    question: str,
    folded: str,
    intents: list[str],
    conversation: Conversation,
    available: set[str] | frozenset[str],
    overrides: dict[str, dict[str, Any]],
    takes_year: set[str] | frozenset[str],
) -> Understanding:
    usable = [name for name in intents if name in available]
    if not usable:
        return Understanding("unsupported", reply=not_offered(intents))
    years = find_years(folded, conversation.today, conversation.anio)
    month, month_year = find_month(folded, conversation.today)
    needs_year = any(name in takes_year for name in usable)
    year_values: list[int] = list(years.values)
    if month_year and not year_values:
        year_values = [month_year]
    if needs_year and not year_values:
        fallback = conversation.anio or (conversation.today.year if conversation.today else None)
        if years.unresolved or fallback is None:
            return Understanding("clarify", reply=REPLIES["which_year"])
        year_values = [fallback]

    customers = extract_customers(question)
    refers = _refers_to_customer(folded)
    best_mentioned = "mejor_cliente" in usable or _BEST.search(folded) is not None
    chained: set[str] = set()
    if best_mentioned and not customers and "mejor_cliente" in available:
        if "compras_cliente" in usable:
            chained.add("compras_cliente")
        if "facturas_pendientes" in usable and _pending_of_best_customer(folded):
            chained.add("facturas_pendientes")
    if chained:
        if "mejor_cliente" in usable:
            usable.remove("mejor_cliente")
        first = min(usable.index(name) for name in chained)
        usable.insert(first, "mejor_cliente")

    # Years per operation: usually every year for every operation; but when "mejor cliente" carries its own
    # year ("cuánto nos compró este año el que fue nuestro mejor cliente en 2024") the others get the rest.
    best_year = _best_customer_year(folded, conversation) if "mejor_cliente" in usable else None
    groups: list[tuple[int | None, list[str]]]
    if best_year is not None and any(year != best_year for year in year_values):
        rest = [name for name in usable if name != "mejor_cliente"]
        groups = [(best_year, ["mejor_cliente"])]
        groups += [(year, rest) for year in year_values if year != best_year]
    else:
        groups = [(year, usable) for year in year_values] or [(None, usable)]

    steps: list[Step] = []
    best_key: str | None = None
    done_once: set[str] = set()
    for year, names in groups:
        for name in names:
            if name not in takes_year:
                if name in done_once:
                    continue
                done_once.add(name)
            base: dict[str, Any] = dict(overrides.get(name, {}))
            if name in takes_year and year is not None:
                base["anio"] = year
            variants: list[tuple[dict[str, Any], str | None]] = [(base, None)]
            if name in chained and best_key is not None:
                variants = [(base | {"cliente": {"$ref": f"{best_key}.cliente"}}, best_key)]
            elif name == "compras_cliente":
                chosen: list[str | None] = list(customers) or [base.get("cliente") or conversation.cliente]
                if not all(chosen):
                    return Understanding("clarify", reply=REPLIES["which_customer"])
                variants = [(base | {"cliente": who}, None) for who in chosen]
            elif name == "facturas_pendientes":
                chosen = list(customers) or [
                    (conversation.cliente if refers else None) or base.get("cliente")
                ]
                if not all(chosen) and refers and not _GENERAL_SUBJECT.search(folded):
                    return Understanding("clarify", reply=REPLIES["which_debtor"])
                variants = [(base | {"cliente": who} if who else base, None) for who in chosen]
            elif name == "buscar_cliente":
                chosen = list(customers) or [base.get("texto")]
                if not all(chosen):
                    return Understanding("clarify", reply=REPLIES["which_text"])
                variants = [(base | {"texto": text}, None) for text in chosen]
            elif name == "ventas_mensuales" and month:
                base["mes"] = month
            elif name == "top_productos":
                limit = find_limit(folded)
                if limit is None and re.search(
                    r"\bel producto mas vendido|\bthe best[- ]selling product\b", folded
                ):
                    limit = 1
                if limit:
                    base["limite"] = limit
            for params, needs in variants:
                key = f"op{len(steps) + 1}"
                if name == "mejor_cliente":
                    best_key = key
                steps.append(Step(key=key, funcion=name, parametros=params, needs=needs))
    return Understanding("operations", steps=tuple(steps))
