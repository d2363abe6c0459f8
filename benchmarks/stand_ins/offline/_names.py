"""Customer names in free text: where one starts, where it ends, and how several are listed.

A name starts after a trigger word ("compró", "clientes", "pendientes de", "did", …), inside quotes, or as a
run of capitalised words. It ends at a stop: a preposition or verb that cannot be part of a name ("en",
"durante", "tiene", "tenemos", …), a year, punctuation, or a sentence-ending period. A period that closes a
company abbreviation ("S.A.", "S.R.L.", "S.A.E.C.A.", "Ltda.", "Inc.") is part of the name, not the end of
the sentence. Several names joined by "y", "and" or commas are read as a list.
"""

from __future__ import annotations

import re

from shared.text import fold

_SUFFIX_WORDS = frozenset(
    {"ltda", "cia", "inc", "corp", "co", "ltd", "hnos", "hno", "sa", "srl", "sac", "saeca", "sl", "sucs"}
)
"""Company abbreviations written as one word before their period."""
_DOTTED = re.compile(r"(?:[^\W\d_]\.)+[^\W\d_]\.?")
"""Letter-period abbreviations: ``S.A``, ``S.R.L.``, ``S.A.E.C.A.``."""


def is_abbreviation(token: str) -> bool:
    """Whether ``token`` (one word, with or without its final period) is a company abbreviation."""
    if _DOTTED.fullmatch(token):
        return True
    return fold(token.rstrip(".")) in _SUFFIX_WORDS


def any_of(*alternatives: str) -> str:
    """One regex alternation from readable pieces."""
    return "|".join(alternatives)


TRIGGERS = re.compile(
    r"(?:\bclientes?|\bcustomers?|\bclient|\bcompr(?:[oó]|aron|ado)|\bgast(?:[oó]|aron)|compras del?"
    r"|pendientes del?|facturas del?|nos debe|\bdeben?|llamad[oa]s?|named|called|purchases (?:of|by|from)"
    r"|\bdid|(?:pagar|pagarnos|cobrar|cobrarle|cobrarles) a)\s+",
    re.IGNORECASE,
)
"""Words after which a customer name usually follows."""

_STOP = re.compile(
    r"\s+(?:"
    + any_of(
        "en", "durante", "desde", "hasta", "el año", "el ano", r"(?:este|ese) (?:año|ano|mes)", "in",
        "during", "for", "this", "last", "since", "y", "and", "por", "tiene", "tienen", "compr[oó]",
        "compraron", "buy", "bought", "spend", "spent", "purchase", r"de (?:19|20)\d\d", "del año",
        "del ano", "el mes", "hace", "that", "with",
        r"(?-i:tenemos|tengo|hay|quedan?|total|have|has|owes?)",
    )
    + r")\b|[?¿!¡,;:()\n]|\.+(?=\s|$)|\s+(?:19|20)\d\d\b",
    re.IGNORECASE,
)  # fmt: skip
"""Where a name written after a trigger ends."""

_LEADING = re.compile(
    r"^(?:(?:la|el|los|las|a|al|nos|nuestro|nuestra|the|our|de|del|cliente|customer|empresa llamada)\s+)+",
    re.IGNORECASE,
)
_LIST_JOIN = re.compile(r"^(?:\s*,\s*(?:(?:y|and)\s+)?|\s+(?:y|and)\s+)(?:(?:de|del|a|al|of|from|by)\s+)?")
"""What joins two names in a list: a comma, "y", "and" (optionally repeating the preposition)."""
_QUOTED = re.compile(r"[\"“«']([^\"”»']{2,80})[\"”»']")
_WORD = r"[A-ZÁÉÍÓÚÑ][\w&\-]*(?:\.[\w&\-]+)*\.?"
_CAPITALISED = re.compile(rf"\b({_WORD}(?:\s+(?:(?:de|del|&)\s+)?(?:{_WORD}|[0-9][\w\-]*))+)")
_REFERENT = re.compile(
    r"^(?:ese|esa|este|esta|el|ella|dicho|mismo|that|this|him|her|it|them|same|nuestro|nuestra|mejor"
    r"|el mejor|que|quien|cual|mas|our|the best|best)\b"
)
NOT_A_NAME = frozenset(
    {
        "cuanto", "cuantos", "cuantas", "cual", "cuales", "que", "quien", "como", "donde", "cuando", "y",
        "hola", "dame", "decime", "dime", "muestra", "mostrame", "lista", "how", "what", "which", "who",
        "show", "give", "list", "and", "the", "en", "de", "del", "el", "la", "ventas", "facturas",
        "compras", "mejor", "cliente", "i", "we", "ruc", "datos", "busca", "buscar", "search", "find", "mas",
        "menos", "mucho", "poco", "algo", "nada", "you", "they", "pago", "cobro", "cobrar", "pagar", "todos",
        "todas", "total", "tenemos", "hay", "todo", "dinero", "plata", "saldo", "of", "in", "for", "from",
        "by", "to", "at", "on", "with", "this", "that", "last", "these", "those", "it", "all", "any", "some",
        "ano", "anos", "year", "years", "mes", "month",
    }
)  # fmt: skip
"""Words that start no customer name when written in lowercase (capitalised, "Total S.A." is a name)."""


def cut_name(text: str) -> str:
    """The name at the start of ``text``: up to the first stop that is not an abbreviation's period."""
    padded = f" {text}"  # so that a stop word right at the start ("del año pasado") is seen too
    end = len(padded)
    for stop in _STOP.finditer(padded):
        if stop.group().startswith("."):
            before = padded[: stop.start()].split()
            if before and is_abbreviation(before[-1]):
                continue
        end = stop.start()
        break
    return tidy(padded[:end])


def tidy(name: str) -> str:
    """``name`` without surrounding spaces, leading articles and sentence period (abbreviations keep it)."""
    name = _LEADING.sub("", name.strip()).strip()
    name = re.sub(r"\.{2,}$", ".", name)
    while name.endswith((".", " ")):
        last = name.rsplit(None, 1)[-1] if name.strip() else ""
        if name.endswith(".") and last and is_abbreviation(last):
            break
        name = name[:-1]
    return name.strip()


def plausible(name: str) -> bool:
    """Whether ``name`` can be a customer name (not a referent like "ese cliente", a number or a keyword)."""
    folded = fold(name)
    if len(name) < 2 or not folded or re.match(r"^\d", name) or _REFERENT.match(folded):
        return False
    first = name.split()[0]
    if folded in NOT_A_NAME:
        return False
    return not (first.islower() and fold(first) in NOT_A_NAME)


def names_after(text: str) -> list[str]:
    """The names listed at the start of ``text`` ("Empresa ABC y Comercial Sur S.A. en 2025" → both)."""
    found: list[str] = []
    rest = text
    while True:
        name = cut_name(rest)
        if not plausible(name):
            break
        found.append(name)
        start = rest.find(name)
        rest = rest[start + len(name) :] if start >= 0 else ""
        join = _LIST_JOIN.match(rest)
        if not join:
            break
        rest = rest[join.end() :]
        if not rest[:1].isupper() and rest[:1] not in "\"“«'":
            break
    return found


def extract_customers(question: str) -> list[str]:
    """Customer names written in ``question``: quoted, after a trigger word, or capitalised; in order."""
    quoted = [q.strip() for q in _QUOTED.findall(question)]
    if quoted:
        return list(dict.fromkeys(quoted))
    for trigger in TRIGGERS.finditer(question):
        found = names_after(question[trigger.end() :])
        if found:
            return found
    return _capitalised(question)


def _capitalised(question: str) -> list[str]:
    found: list[str] = []
    previous_end = -1
    for match in _CAPITALISED.finditer(question):
        words = match.group(1).split()
        while words and fold(words[0]).strip(".") in NOT_A_NAME:
            words = words[1:]
        if not (len(words) >= 2 or (words and words[0].isupper() and len(words[0]) > 1)):
            continue
        if found and not _LIST_JOIN.fullmatch(question[previous_end : match.start()] + " "):
            break
        found.append(tidy(" ".join(words)))
        previous_end = match.end()
    return found


def name_in_answer(text: str, after: re.Pattern[str]) -> str | None:
    """The last name written right after a match of ``after`` in ``text`` (an assistant's earlier answer)."""
    names = [cut_name(text[match.end() :]) for match in after.finditer(text)]
    names = [name for name in names if plausible(name)]
    return names[-1] if names else None
