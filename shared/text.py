"""Text helpers shared by the ERP, the offline model and the scorer."""

from __future__ import annotations

import re
import unicodedata

_THINK_TAG = re.compile(r"<(/?)think(?:ing)?>", re.IGNORECASE)

MARKDOWN_FENCE = re.compile(r"```[a-zA-Z0-9_-]*\s*\n?(.*?)```", re.DOTALL)
"""A Markdown code fence (any language tag); group 1 is its contents. Small models wrap JSON in one."""

_NON_WORD = re.compile(r"[^\w]+")
_LEGAL_FORM = re.compile(r"(?<!\s)\s+(?:S\.?\s?A\.?|S\.?\s?R\.?\s?L\.?|Ltda\.?)\s*+$", re.IGNORECASE)
"""The legal form a customer name ends with: ``S.A.``, ``S.R.L.``, ``Ltda.``."""
_PACK_SIZE = re.compile(r"(?<!\s)\s*+\([^()]*+\)\s*+$")
"""The pack size a product name ends with: ``(caja x 12)``."""


def fold(text: str) -> str:
    """Case- and accent-insensitive form of ``text``: ``"Compañía Ñandú"`` → ``"compania nandu"``."""
    decomposed = unicodedata.normalize("NFKD", text)
    stripped = "".join(ch for ch in decomposed if not unicodedata.combining(ch))
    return " ".join(stripped.casefold().split())


def words(text: str) -> str:
    """``text`` folded, with punctuation turned into single spaces and padded: `` comercial guarani s a ``.

    A name is named in a text when ``words(name) in words(text)``: whole words, case-, accent- and
    punctuation-insensitively (``la empresa ABC`` names Empresa ABC, ``Empresa AB`` does not)."""
    return " " + " ".join(_NON_WORD.sub(" ", fold(text)).split()) + " "


def without_legal_form(name: str) -> str:
    """A customer's name without the legal form it ends with: ``Importadora del Este S.A.`` →
    ``Importadora del Este`` (unchanged when it has none)."""
    return _LEGAL_FORM.sub("", name)


def without_pack_size(name: str) -> str:
    """A product's name without the pack size in brackets it ends with: ``Aceite de soja 900 ml (caja x 12)``
    → ``Aceite de soja 900 ml`` (unchanged when it has none)."""
    return _PACK_SIZE.sub("", name)


def format_guaranies(amount: int | float) -> str:
    """Format an amount the Paraguayan way: ``850000000`` → ``"₲850.000.000"``."""
    value = round(amount)
    sign = "-" if value < 0 else ""
    return f"{sign}₲{abs(value):,}".replace(",", ".")


def split_reasoning(text: str) -> tuple[str, str, bool]:
    """``(answer text, unclosed reasoning, had reasoning)``: the reply without its ``<think>`` blocks."""
    visible: list[str] = []
    position = 0
    opened_at: int | None = None
    had_reasoning = False
    for tag in _THINK_TAG.finditer(text):
        closing = tag.group(1) == "/"
        had_reasoning = True
        if not closing:
            if opened_at is None:
                visible.append(text[position : tag.start()])
                opened_at = tag.end()
        elif opened_at is not None:
            opened_at = None
            position = tag.end()
        else:
            visible.clear()
            position = tag.end()
    if opened_at is None:
        visible.append(text[position:])
        return "".join(visible), "", had_reasoning
    return "".join(visible), text[opened_at:], had_reasoning


def strip_reasoning(text: str) -> str:
    """``text`` without the reasoning a reasoning model wrote around its answer (``<think>…</think>``)."""
    visible, _reasoning, _had = split_reasoning(text)
    return visible.strip()
