"""How a finished reply is cut into stream chunks, so that a reader sees it grow a few tokens at a time.

The offline model and the protocol emulators compute a whole reply, then send it in :func:`stream_pieces`:
each word with the whitespace after it, a longer one in slices of :data:`PIECE_MAX_CHARS` (about three
tokens). JSON is cut alike (``{"respuesta": "Las ventas …`` arrives as ``{"respuesta"``, ``: ``, ``"Las ``,
``ventas ``, …), so a reader decoding the ``respuesta`` field incrementally gets several deltas.
"""

from __future__ import annotations

import re

from shared.llm.tokens import CHARS_PER_TOKEN

PIECE_MAX_CHARS = 3 * CHARS_PER_TOKEN

_WORDS = re.compile(r"\S+\s*|\s+")
"""A word with the whitespace that follows it, or leading whitespace on its own."""


def stream_pieces(text: str, max_chars: int = PIECE_MAX_CHARS) -> list[str]:
    """Consecutive pieces whose concatenation is ``text`` (``[]`` for ``""``), none over ``max_chars``.

    Raises:
        ValueError: ``max_chars`` is below 1.
    """
    if max_chars < 1:
        raise ValueError(f"max_chars must be at least 1, not {max_chars}.")
    pieces: list[str] = []
    for word in _WORDS.findall(text):
        pieces.extend(word[start : start + max_chars] for start in range(0, len(word), max_chars))
    return pieces
