"""How a finished reply is cut into stream chunks, so that a reader sees it grow a few tokens at a time.

The offline model (:class:`~benchmarks.stand_ins.offline.OfflineSalesModel`) and the protocol emulators
(:mod:`benchmarks.stand_ins.emulators`) compute a whole reply, then send it in pieces the way a real model
server does.
:func:`stream_pieces` is the one rule both use: every word with the whitespace after it, and a word longer
than :data:`PIECE_MAX_CHARS` (a long figure, a JSON key with its quotes and colon, a run of punctuation) cut
into slices of at most that many characters, about three tokens by :mod:`shared.llm.tokens`' ruler. JSON text
is cut the same way (``{"respuesta": "Las ventas …`` arrives as ``{"respuesta"``, ``: ``, ``"Las ``,
``ventas ``, …), so a reader that decodes the ``respuesta`` field incrementally gets several deltas.
"""

from __future__ import annotations

import re

from shared.llm.tokens import CHARS_PER_TOKEN

PIECE_MAX_CHARS = 3 * CHARS_PER_TOKEN
"""The longest piece :func:`stream_pieces` sends: about three tokens."""

_WORDS = re.compile(r"\S+\s*|\s+")
"""A word with the whitespace that follows it, or leading whitespace on its own."""


def stream_pieces(text: str, max_chars: int = PIECE_MAX_CHARS) -> list[str]:
    """Cut ``text`` into consecutive pieces whose concatenation is ``text`` (``[]`` for ``""``).

    Each piece is a word with its trailing whitespace; a piece longer than ``max_chars`` is sliced into parts
    of ``max_chars`` characters (the last one shorter).

    Raises:
        ValueError: ``max_chars`` is below 1.
    """
    if max_chars < 1:
        raise ValueError(f"max_chars must be at least 1, not {max_chars}.")
    pieces: list[str] = []
    for word in _WORDS.findall(text):
        pieces.extend(word[start : start + max_chars] for start in range(0, len(word), max_chars))
    return pieces
