"""Understanding a question: which sales operations it needs, with which parameters, or what to say instead.

This is the offline model's "reasoning": the intents :mod:`._intents` finds, the years, month and list size
:mod:`._numbers` reads, customer names from :mod:`._names`, and follow-up references resolved from the
:class:`~._prompt.Conversation` the prompt carries. A follow-up repeats the previous operations unless it
brings a new intent of its own. It only ever proposes operations named in the prompt.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import Any, Literal

from benchmarks.stand_ins.offline._answers import DESCRIPTIONS, REPLIES, not_offered
from benchmarks.stand_ins.offline._intents import (
    BEST,
    FOLLOW_UP,
    GENERAL_SUBJECT,
    best_customer_year,
    detect_intents,
    pending_of_best_customer,
    refers_to_customer,
    refusal,
    small_talk,
)
from benchmarks.stand_ins.offline._names import extract_customers
from benchmarks.stand_ins.offline._numbers import find_limit, find_month, find_years
from benchmarks.stand_ins.offline._prompt import Conversation
from shared.text import fold

KNOWN_OPERATIONS: tuple[str, ...] = tuple(DESCRIPTIONS)
"""The sales operations the offline model understands (it uses only those its prompt offers)."""

YEAR_OPERATIONS = frozenset(
    {"ventas_anuales", "mejor_cliente", "compras_cliente", "ventas_mensuales", "top_productos",
     "ventas_por_categoria"}
)  # fmt: skip

Kind = Literal["operations", "small_talk", "unsupported", "clarify"]


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


def understand(
    question: str,
    conversation: Conversation,
    available: set[str] | frozenset[str],
    takes_year: set[str] | frozenset[str] = YEAR_OPERATIONS,
) -> Understanding:
    """What ``question`` needs, given the prompt's ``conversation``, the operations the prompt offers and
    those of them that take a year (``anio``), as its catalog or tools declare them."""
    folded = fold(question)
    if refused := refusal(folded):
        return Understanding("unsupported", reply=REPLIES[refused])
    intents = detect_intents(folded)
    overrides: dict[str, dict[str, Any]] = {}
    if not intents:
        follow_up = _repeat_previous(question, folded, conversation)
        if follow_up is None:
            return _no_operation(folded)
        if isinstance(follow_up, Understanding):
            return follow_up
        intents, overrides = follow_up
    return _build(question, folded, intents, conversation, available, overrides, takes_year)


def _no_operation(folded: str) -> Understanding:
    if talk := small_talk(folded):
        return Understanding("small_talk", reply=REPLIES[talk])
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
    if not (FOLLOW_UP.search(folded) or years.mentioned or month) or len(folded.split()) > 8:
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
    refers = refers_to_customer(folded)
    best_mentioned = "mejor_cliente" in usable or BEST.search(folded) is not None
    chained: set[str] = set()
    if best_mentioned and not customers and "mejor_cliente" in available:
        if "compras_cliente" in usable:
            chained.add("compras_cliente")
        if "facturas_pendientes" in usable and pending_of_best_customer(folded):
            chained.add("facturas_pendientes")
    if chained:
        if "mejor_cliente" in usable:
            usable.remove("mejor_cliente")
        first = min(usable.index(name) for name in chained)
        usable.insert(first, "mejor_cliente")

    # Years per operation: usually every year for every operation; but when "mejor cliente" carries its own
    # year ("cuánto nos compró este año el que fue nuestro mejor cliente en 2024") the others get the rest.
    best_year = best_customer_year(folded, conversation) if "mejor_cliente" in usable else None
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
                if not all(chosen) and refers and not GENERAL_SUBJECT.search(folded):
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
