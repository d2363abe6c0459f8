"""Claimed actions: an answer must not say the ERP (or the assistant) did something that no operation did.

The ERP's sales operations only read, yet a model's answer may state an action as done: ``Se mandó un correo
a Empresa ABC``, ``El precio ha sido cambiado a 50.000 guaraníes``, ``La función borrar_cliente se ejecutó
correctamente``. :func:`claimed_actions` finds those phrases; :func:`claimed_action_answer` is what the user
reads instead of such an answer.

How an answer is read, word by word (Spanish and English):

- a verb of one :data:`ActionKind` in a form that states the action as done: first person past (``envié``,
  ``he enviado``, ``acabo de enviar``, ``I sent``, ``I've sent``), impersonal or passive (``se envió``,
  ``se ha enviado``, ``fue/ha sido enviado``, ``quedó enviado``, ``was/has been sent``), ``we`` (``hemos
  enviado``, ``we sent``), or the ERP as subject (``el sistema envió``). A bare participle (``precio
  actualizado``) or an intransitive verb (``las ventas aumentaron``) states no action;
- a price verb (subir, bajar, aumentar, reducir, …) counts only with a price noun in its clause;
- a claim is dropped when its clause negates or supposes it before the verb (``no``, ``ni``, ``ningún``,
  ``nada``, ``si``, ``not``, ``n't``, ``if``, …) or when it stands in a question (``¿…?``);
- a register verb (registrar, crear, emitir, anular, dar de alta) in an impersonal, passive, ``we`` or ERP
  form describes the sales data, not an action, when it is plural or its clause states a figure or a date
  (``En 2025 se registraron 120 facturas``, ``La factura F-001 fue emitida el 3 de marzo de 2025``). The
  first person singular and ``quedó registrado`` are always claims.

Accents matter: ``envió`` (sent) is a claim, ``envío`` (I send) and ``envíe`` (that I send) are offers. The
voseo imperative of an ``-ir`` verb is spelt like its first person past (``subí el precio``: raise the price),
so ``subí``, ``emití``, ``remití``, ``suprimí`` and ``disminuí`` count only after ``yo``, ``ya`` or an
unstressed pronoun (``le emití``), which an imperative never has before it.

Every step is one pass over the text or over its words: the only regular expressions match one word or one
character at a time, so a hostile answer (a 60,000-letter word) costs time in proportion to its length.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import Literal, get_args

from shared.clauses import IDENTIFIER, LETTERS, Word, clauses, questions, sentences
from shared.turn import ExecutedOperation

__all__ = [
    "ACTION_KINDS",
    "ActionClaim",
    "ActionKind",
    "action_claims",
    "claimed_action_answer",
    "claimed_actions",
]

ActionKind = Literal["send", "change", "delete", "register", "execute"]
"""What an answer may claim was done: ``send`` (enviar, mandar, remitir, notificar), ``change`` (cambiar,
modificar, actualizar, ajustar, editar, and raising or lowering a price), ``delete`` (eliminar, borrar,
suprimir, dar de baja), ``register`` (registrar, crear, emitir, anular, dar de alta), ``execute``
(ejecutar)."""

ACTION_KINDS: tuple[ActionKind, ...] = get_args(ActionKind)

QUOTE_LIMIT = 120
"""The most characters of a claim that :func:`claimed_action_answer` quotes."""


@dataclass(frozen=True)
class ActionClaim:
    """One phrase of an answer that states an action was done."""

    kind: ActionKind
    """What the phrase says was done."""
    phrase: str
    """The clause that holds the claim, as written, without the punctuation or conjunction around it."""
    names: tuple[str, ...] = ()
    """The operation identifiers (snake_case words, lowercased) its sentence names."""


def claimed_actions(
    answer: str, operations: Sequence[ExecutedOperation], *, performed: Collection[str] = ()
) -> list[str]:
    """The phrases of ``answer`` that claim an action no operation of the turn did, in order, each once.

    ``performed`` lists the :data:`ActionKind` values that the turn's successful ``operations`` actually
    performed (every sales operation only reads: engines pass nothing). An ``execute`` claim is judged by the
    operations alone: it is supported when one ran ok and every snake_case identifier its sentence names is an
    operation that ran ok (or a parameter name of one)."""
    ran = {op.function.lower() for op in operations if op.ok}
    known = ran | {str(key).lower() for op in operations if op.ok for key in op.parameters}
    found: dict[str, None] = {}  # an ordered set: one long phrase may hold many claims
    for claim in action_claims(answer):
        if claim.kind == "execute":
            supported = bool(ran) and all(name in known for name in claim.names)
        else:
            supported = claim.kind in performed
        if not supported:
            found[claim.phrase] = None
    return list(found)


def claimed_action_answer(claims: Sequence[str]) -> str:
    """What the user reads instead of an answer that claimed an action the ERP did not do: the first of
    ``claims`` quoted (shortened to :data:`QUOTE_LIMIT` characters), and no figure of its own."""
    quote = f" («{_shortened(claims[0])}»)" if claims else ""
    return (
        f"Lo siento, la respuesta del modelo decía que se hizo algo que el ERP no hizo{quote}; el ERP solo "
        "consulta datos y no realizó esa acción, así que no la muestro ni la guardo."
    )


def action_claims(answer: str) -> list[ActionClaim]:
    """Every phrase of ``answer`` that states an action was done, supported or not, in order (one claim per
    clause and kind)."""
    text = unicodedata.normalize("NFC", answer)
    if _VERB_FORMS.isdisjoint(LETTERS.findall(text.lower())):
        return []  # most answers: no word of them can state an action
    claims: list[ActionClaim] = []
    for sentence in sentences(text):
        names = tuple(dict.fromkeys(word.text for word in sentence if IDENTIFIER.fullmatch(word.text)))
        asked = questions(sentence)
        for clause in clauses(sentence, text):
            kinds = _claimed_kinds(clause, asked, text)
            if kinds:
                phrase = text[clause[0][1].start : clause[-1][1].end]
                claims.extend(ActionClaim(kind, phrase, names) for kind in kinds)
    return claims


# --- the lexicon ------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Verb:
    kind: ActionKind | None
    """``None`` for ``dar``, whose kind the words after it give (``de baja``, ``de alta``)."""
    price_only: bool = False
    """Raising or lowering: an action only on a price (``subir el precio``, not ``subieron las ventas``)."""
    voseo: bool = False
    """Its first person past is spelt like its voseo imperative (``subí``)."""


_SEND, _CHANGE, _DELETE, _REGISTER, _EXECUTE = (_Verb(kind) for kind in ACTION_KINDS)
_PRICE = _Verb("change", price_only=True)

# infinitive, first person past, third person past (singular, plural), participle stem, verb
_SPANISH: tuple[tuple[str, str, str, str, str, _Verb], ...] = (
    ("enviar", "envié", "envió", "enviaron", "enviad", _SEND),
    ("reenviar", "reenvié", "reenvió", "reenviaron", "reenviad", _SEND),
    ("mandar", "mandé", "mandó", "mandaron", "mandad", _SEND),
    ("remitir", "remití", "remitió", "remitieron", "remitid", _Verb("send", voseo=True)),
    ("notificar", "notifiqué", "notificó", "notificaron", "notificad", _SEND),
    ("cambiar", "cambié", "cambió", "cambiaron", "cambiad", _CHANGE),
    ("modificar", "modifiqué", "modificó", "modificaron", "modificad", _CHANGE),
    ("actualizar", "actualicé", "actualizó", "actualizaron", "actualizad", _CHANGE),
    ("ajustar", "ajusté", "ajustó", "ajustaron", "ajustad", _CHANGE),
    ("editar", "edité", "editó", "editaron", "editad", _CHANGE),
    ("subir", "subí", "subió", "subieron", "subid", _Verb("change", price_only=True, voseo=True)),
    ("bajar", "bajé", "bajó", "bajaron", "bajad", _PRICE),
    ("rebajar", "rebajé", "rebajó", "rebajaron", "rebajad", _PRICE),
    ("aumentar", "aumenté", "aumentó", "aumentaron", "aumentad", _PRICE),
    ("incrementar", "incrementé", "incrementó", "incrementaron", "incrementad", _PRICE),
    ("reducir", "reduje", "redujo", "redujeron", "reducid", _PRICE),
    (
        "disminuir",
        "disminuí",
        "disminuyó",
        "disminuyeron",
        "disminuid",
        _Verb("change", price_only=True, voseo=True),
    ),
    ("eliminar", "eliminé", "eliminó", "eliminaron", "eliminad", _DELETE),
    ("borrar", "borré", "borró", "borraron", "borrad", _DELETE),
    ("suprimir", "suprimí", "suprimió", "suprimieron", "suprimid", _Verb("delete", voseo=True)),
    ("registrar", "registré", "registró", "registraron", "registrad", _REGISTER),
    ("crear", "creé", "creó", "crearon", "cread", _REGISTER),
    ("emitir", "emití", "emitió", "emitieron", "emitid", _Verb("register", voseo=True)),
    ("anular", "anulé", "anuló", "anularon", "anulad", _REGISTER),
    ("ejecutar", "ejecuté", "ejecutó", "ejecutaron", "ejecutad", _EXECUTE),
    ("dar", "di", "dio", "dieron", "dad", _Verb(None)),
)
_ENGLISH: dict[str, _Verb] = {
    **dict.fromkeys(["sent", "emailed", "mailed", "forwarded", "notified"], _SEND),
    **dict.fromkeys(["changed", "modified", "updated", "edited", "adjusted"], _CHANGE),
    **dict.fromkeys(["raised", "increased", "lowered", "reduced", "decreased", "cut", "hiked"], _PRICE),
    **dict.fromkeys(["deleted", "removed", "erased"], _DELETE),
    **dict.fromkeys(
        ["registered", "recorded", "created", "issued", "voided", "annulled", "cancelled", "canceled"],
        _REGISTER,
    ),
    "executed": _EXECUTE,
}
"""English past forms (each is also the participle)."""
_ENCLITICS = ("", "le", "les", "lo", "la", "los", "las")

_FIRST_PERSON = {row[1]: row[5] for row in _SPANISH}
_THIRD_PERSON = {
    form: (row[5], plural) for row in _SPANISH for form, plural in ((row[2], False), (row[3], True))
}
_PARTICIPLES = {
    row[4] + ending: (row[5], ending.endswith("s")) for row in _SPANISH for ending in ("o", "a", "os", "as")
}
_INFINITIVES = {row[0] + clitic: row[5] for row in _SPANISH for clitic in _ENCLITICS}

_VERB_FORMS = frozenset(_FIRST_PERSON.keys() | _THIRD_PERSON.keys() | _PARTICIPLES.keys())
_VERB_FORMS |= _INFINITIVES.keys() | _ENGLISH.keys()
"""Every word a claim's verb may be (most words of an answer are none)."""

_NEGATIONS = frozenset(
    {"no", "ni", "nunca", "jamás", "ningún", "ninguna", "ninguno", "nada", "nadie", "tampoco"}
    | {"not", "never", "nothing", "none", "nor", "cannot", "neither"}
)
_SUPPOSITIONS = frozenset({"si", "if", "whether"})
_APOSTROPHES = frozenset("'’")
_PRONOUNS = frozenset({"me", "te", "le", "les", "lo", "la", "los", "las", "nos", "se"})
"""Unstressed pronouns: before a verb they rule out an imperative (``le emití``)."""
_PRONOUNS_AFTER_SE = frozenset({"le", "les", "lo", "la", "los", "las", "ya"})
_HABER = frozenset({"ha", "han", "había", "habían"})
_QUEDAR = frozenset({"quedó", "quedaron", "queda", "quedan"})
_PLURAL_AUXILIARIES = frozenset({"han", "habían", "fueron", "quedaron", "quedan", "were", "have"})
_SYSTEM = frozenset({"sistema", "erp", "asistente", "system", "assistant"})
_PRICES = frozenset({"precio", "precios", "tarifa", "tarifas", "price", "prices"})
_ENGLISH_ADVERBS = frozenset({"just", "already", "also", "successfully", "now"})
_ENGLISH_PERFECT = frozenset({"have", "has", "had", "ve", "'", "’"}) | _ENGLISH_ADVERBS
_MONTHS = frozenset(
    {"enero", "febrero", "marzo", "abril", "mayo", "junio", "julio", "agosto", "septiembre", "setiembre"}
    | {"octubre", "noviembre", "diciembre", "january", "february", "march", "april", "may", "june", "july"}
    | {"august", "september", "october", "november", "december", "trimestre", "semestre", "quarter"}
)

_Form = Literal["first", "we", "impersonal", "passive", "resultative", "system"]
"""How a claim is stated: ``first`` person singular (I), ``we``, ``impersonal`` (``se envió``), ``passive``
(``fue enviado``), ``resultative`` (``quedó enviado``) or with the ERP as subject."""
_DATA_FORMS: frozenset[_Form] = frozenset({"we", "impersonal", "passive", "system"})
"""The forms in which a register verb may describe the sales data (``se registraron 120 facturas``)."""


@dataclass(frozen=True)
class _Reading:
    """A verb read as a claim, before its clause's negations, prices and figures are weighed."""

    verb: _Verb
    form: _Form
    plural: bool


# --- reading a clause -------------------------------------------------------------------------------------


class _Clause:
    """One clause's words, with what its checks look up, each computed in one pass."""

    def __init__(self, clause: Sequence[tuple[int, Word]], text: str) -> None:
        self.positions = [index for index, _word in clause]
        self.words = [word.text for _index, word in clause]
        self.text = text
        self.spans = [word for _index, word in clause]
        self.blocked_after = len(self.words)
        """The first negation or supposition: a verb after it is not claimed."""
        self.system_at = len(self.words)
        """The first word naming the ERP as a subject."""
        self.last_price = -1
        for index, word in enumerate(self.words):
            negated_contraction = word == "t" and index > 0 and self.words[index - 1] in _APOSTROPHES
            if word in _NEGATIONS or word in _SUPPOSITIONS or negated_contraction:
                self.blocked_after = min(self.blocked_after, index)
            if word in _SYSTEM:
                self.system_at = min(self.system_at, index)
            if word in _PRICES:
                self.last_price = index

    def word(self, index: int) -> str:
        return self.words[index] if 0 <= index < len(self.words) else ""

    def back(self, index: int, skipping: frozenset[str], limit: int = 3) -> int:
        """The position of the first word before ``index`` that is not in ``skipping`` (at most ``limit``
        skipped)."""
        index -= 1
        while limit and self.word(index) in skipping:
            index -= 1
            limit -= 1
        return index

    def states_figures_or_dates(self) -> bool:
        """Whether the clause states a figure (digits not glued to a code like ``F-001``) or a date."""
        for word, span in zip(self.words, self.spans, strict=True):
            if word in _MONTHS:
                return True
            glued = span.start > 0 and (
                self.text[span.start - 1] == "-" or self.text[span.start - 1].isalnum()
            )
            if word[0].isdigit() and not glued:
                return True
        return False


def _claimed_kinds(
    clause_words: Sequence[tuple[int, Word]], asked: Sequence[bool], text: str
) -> list[ActionKind]:
    clause = _Clause(clause_words, text)
    kinds: list[ActionKind] = []
    data: bool | None = None  # computed once, when a register verb needs it
    for index in range(len(clause.words)):
        reading = _reading(clause, index)
        if reading is None or index > clause.blocked_after or asked[clause.positions[index]]:
            continue
        kind = reading.verb.kind or _dar_kind(clause, index)
        if kind is None or kind in kinds:
            continue
        if reading.verb.price_only and not _on_a_price(clause, index, reading.form):
            continue
        if kind == "register" and reading.form in _DATA_FORMS:
            if data is None:
                data = clause.states_figures_or_dates()
            if reading.plural or data:
                continue
        kinds.append(kind)
    return kinds


def _on_a_price(clause: _Clause, index: int, form: _Form) -> bool:
    """A price verb acts on a price named in its clause; with the ERP as subject, the price is its object
    (``el sistema redujo el precio``, not ``el sistema muestra que los precios bajaron``)."""
    return clause.last_price > index if form == "system" else clause.last_price >= 0


_DAR: dict[str, ActionKind] = {"baja": "delete", "alta": "register"}
"""``dar de baja`` deletes, ``dar de alta`` registers."""


def _dar_kind(clause: _Clause, index: int) -> ActionKind | None:
    if clause.word(index + 1) != "de":
        return None
    return _DAR.get(clause.word(index + 2))


def _reading(clause: _Clause, index: int) -> _Reading | None:
    """How the word at ``index`` states an action, if it does."""
    word = clause.word(index)
    if word not in _VERB_FORMS:
        return None
    for read in (_first_person, _third_person, _participle, _infinitive, _english):
        reading = read(clause, index, word)
        if reading is not None:
            return reading
    return None


def _first_person(clause: _Clause, index: int, word: str) -> _Reading | None:
    verb = _FIRST_PERSON.get(word)
    if verb is None:
        return None
    if verb.voseo and clause.word(index - 1) not in _PRONOUNS | {"yo", "ya"}:
        return None  # ``subí el precio`` may be an order to the reader
    return _Reading(verb, "first", plural=False)


def _third_person(clause: _Clause, index: int, word: str) -> _Reading | None:
    """``se envió``, ``se le enviaron``; ``el sistema envió``."""
    found = _THIRD_PERSON.get(word)
    if found is None:
        return None
    verb, plural = found
    if clause.word(clause.back(index, _PRONOUNS_AFTER_SE)) == "se":
        return _Reading(verb, "impersonal", plural)
    if clause.system_at < index:
        return _Reading(verb, "system", plural)
    return None


def _participle(clause: _Clause, index: int, word: str) -> _Reading | None:
    """``he enviado``, ``hemos enviado``, ``ha sido enviado``, ``fue enviado``, ``quedó enviado``, ``se ha
    enviado``, ``el sistema ha enviado``; an adverb in ``-mente`` or ``ya`` may come before the participle."""
    found = _PARTICIPLES.get(word)
    if found is None:
        return None
    verb, plural = found
    before = index - 1
    if clause.word(before).endswith("mente") or clause.word(before) == "ya":
        before -= 1
    auxiliary = clause.word(before)
    plural = plural or auxiliary in _PLURAL_AUXILIARIES
    if auxiliary == "sido":
        perfect = clause.word(before - 1)
        if perfect in _HABER:
            return _Reading(verb, "passive", plural or perfect in _PLURAL_AUXILIARIES)
        return {"he": _Reading(verb, "first", False), "hemos": _Reading(verb, "we", True)}.get(perfect)
    if auxiliary in ("fue", "fueron"):
        return _Reading(verb, "passive", plural)
    if auxiliary in _QUEDAR or (auxiliary == "quedado" and clause.word(before - 1) in _HABER):
        return _Reading(verb, "resultative", plural)
    if auxiliary == "he":
        return _Reading(verb, "first", plural=False)
    if auxiliary == "hemos":
        return _Reading(verb, "we", plural=False)  # the business "we": its object says whether it is data
    if auxiliary in _HABER:
        if clause.word(clause.back(before, _PRONOUNS_AFTER_SE)) == "se":
            return _Reading(verb, "impersonal", plural)
        if clause.system_at < before:
            return _Reading(verb, "system", plural)
    return None


def _infinitive(clause: _Clause, index: int, word: str) -> _Reading | None:
    """``acabo de enviar``, ``se acaba de enviar``, ``procedí a enviar``, ``se procedió a enviarle``."""
    verb = _INFINITIVES.get(word)
    if verb is None:
        return None
    link, lead, before_lead = clause.word(index - 1), clause.word(index - 2), clause.word(index - 3)
    if link == "de" and lead in ("acabo", "acabamos"):
        return _Reading(verb, "first" if lead == "acabo" else "we", plural=False)
    if link == "a" and lead in ("procedí", "procedimos", "procedido"):
        return _Reading(verb, "we" if lead == "procedimos" else "first", plural=False)
    if before_lead == "se" and (link, lead) in (("de", "acaba"), ("de", "acaban"), ("a", "procedió")):
        return _Reading(verb, "impersonal", plural=lead == "acaban")
    return None


def _english(clause: _Clause, index: int, word: str) -> _Reading | None:
    """``I sent``, ``I've just sent``, ``we have sent``, ``was sent``, ``has been sent``, ``the ERP sent``."""
    verb = _ENGLISH.get(word)
    if verb is None:
        return None
    before = clause.back(index, _ENGLISH_ADVERBS, limit=2)
    auxiliary = clause.word(before)
    if auxiliary == "been" and clause.word(before - 1) in ("has", "have", "had"):
        return _Reading(verb, "passive", plural=clause.word(before - 1) == "have")
    if auxiliary in ("was", "were"):
        return _Reading(verb, "passive", plural=auxiliary == "were")
    subject = clause.word(clause.back(index, _ENGLISH_PERFECT, limit=4))
    if subject == "i":
        return _Reading(verb, "first", plural=False)
    if subject == "we":
        return _Reading(verb, "we", plural=False)
    if clause.system_at < index:
        return _Reading(verb, "system", plural=False)
    return None


# --- the refusal ------------------------------------------------------------------------------------------


def _shortened(claim: str) -> str:
    """``claim`` on one line, cut at a word to at most :data:`QUOTE_LIMIT` characters (``…`` included)."""
    line = " ".join(claim.split())
    if len(line) <= QUOTE_LIMIT:
        return line
    cut = line[: QUOTE_LIMIT - 1]
    space = cut.rfind(" ")
    if space >= QUOTE_LIMIT // 2:
        cut = cut[:space]
    return cut.rstrip(" ,;:.") + "…"
