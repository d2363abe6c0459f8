"""An answer's words, sentences and clauses, read in one pass: what the claimed-actions check walks.

A word is a run of letters or digits, or one character of punctuation; ``.``, ``!``, ``?`` or ``…`` before a
space, or a line break, ends a sentence; ``;``, brackets, dashes, the conjunctions and ``,``/``:``/``-``
before a space part clauses. The only regular expressions match one word at a time, so a hostile text costs
time in proportion to its length.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from typing import NamedTuple

__all__ = ["IDENTIFIER", "LETTERS", "Word", "clauses", "questions", "sentences", "spaced"]

_WORD = re.compile(r"\w+|[^\w\s]")
"""A word, or one character of punctuation."""
LETTERS = re.compile(r"\w+")
IDENTIFIER = re.compile(r"[a-z][a-z0-9]*(?:_[a-z0-9]+)+")
"""An operation identifier (``borrar_cliente``), matched against one lowercased word."""


class Word(NamedTuple):
    text: str
    """Lowercased (accents kept: ``envió`` and ``envío`` differ)."""
    start: int
    end: int


_SENTENCE_END = frozenset(".!?…")
_CLAUSE_MARKS = frozenset(";()[]—–")
_SPACED_CLAUSE_MARKS = frozenset(",:-")
"""Clause marks only when a space follows (not inside ``850,000`` or ``10:30``)."""
_CONJUNCTIONS = frozenset({"y", "e", "pero", "aunque", "sino", "mientras", "and", "but"})


def sentences(text: str) -> Iterator[list[Word]]:
    """The words of each sentence: ``.``, ``!``, ``?`` or ``…`` before a space, or a line break, ends one."""
    sentence: list[Word] = []
    previous_end = 0
    for match in _WORD.finditer(text):
        if sentence and "\n" in text[previous_end : match.start()]:
            yield sentence
            sentence = []
        word = Word(match.group().lower(), match.start(), match.end())
        sentence.append(word)
        previous_end = word.end
        if word.text in _SENTENCE_END and spaced(text, word.end):
            yield sentence
            sentence = []
    if sentence:
        yield sentence


def spaced(text: str, position: int) -> bool:
    return position == len(text) or text[position].isspace()


def questions(sentence: Sequence[Word]) -> list[bool]:
    """For each word, whether it stands in a question: from ``¿`` to ``?``, or a whole sentence ending in
    ``?`` that opened none (English)."""
    words = [word.text for word in sentence]
    if "¿" not in words:
        return [words[-1] == "?"] * len(words)
    inside = False
    asked: list[bool] = []
    for word in words:
        inside = inside or word == "¿"
        asked.append(inside)
        inside = inside and word != "?"
    return asked


def clauses(sentence: Sequence[Word], text: str) -> Iterator[list[tuple[int, Word]]]:
    """The clauses of a sentence, each word with its position in the sentence; the marks and conjunctions
    that part them and the sentence's closing mark belong to none."""
    clause: list[tuple[int, Word]] = []
    for index, word in enumerate(sentence):
        parts = (
            word.text in _CLAUSE_MARKS
            or word.text in _CONJUNCTIONS
            or (word.text in _SPACED_CLAUSE_MARKS and spaced(text, word.end))
            or (word.text in _SENTENCE_END and spaced(text, word.end))
        )
        if not parts:
            clause.append((index, word))
        elif clause:
            yield clause
            clause = []
    if clause:
        yield clause
