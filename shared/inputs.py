"""What a turn's caller may send: checked before anything is read, paid or written.

A question may hold tab, line feed and carriage return; every other ``Cc`` character is refused
(:data:`CONTROL_CHARACTERS`): NUL cannot be stored by PostgreSQL, C0/C1 controls and DEL drive terminals or
are mojibake. Format characters (``Cf``) stay allowed. :func:`shared.bounds.clean_text` removes the same set.
"""

from __future__ import annotations

import re
import unicodedata
from typing import Final

from shared.errors import InputError

CONVERSATION_ID_LENGTH: Final = 64
"""Longest conversation id accepted, the memory tables' key length (generated ids are 32-character uuid4
hex strings)."""
MAX_QUESTION_CHARS: Final = 4000
"""Longest question accepted, in characters: several paragraphs, far below any model's context."""

ALLOWED_CONTROLS: Final = "\t\n\r"
"""The control characters text may hold: tab, line feed, carriage return."""
CONTROL_CHARACTERS: Final = frozenset(map(chr, (*range(0x20), *range(0x7F, 0xA0)))) - frozenset(
    ALLOWED_CONTROLS
)
"""The control characters refused in a question (and in the AI server's request text): C0 but
:data:`ALLOWED_CONTROLS`, DEL and C1 (see the module docstring)."""
_CONTROL: Final = re.compile("[" + "".join(re.escape(char) for char in sorted(CONTROL_CHARACTERS)) + "]")


def find_control_character(text: str) -> int | None:
    """The index of the first of :data:`CONTROL_CHARACTERS` in ``text``, or ``None`` when it has none."""
    match = _CONTROL.search(text)
    return None if match is None else match.start()


def check_text(text: str, what: str) -> str:
    """Return ``text`` if it holds no control character (:data:`CONTROL_CHARACTERS`) and is valid Unicode;
    raise :class:`InputError` naming ``what`` (``"The question"``) and where, never echoing the character.
    """
    position = find_control_character(text)
    if position is not None:
        raise InputError(
            f"{what} contains a control character (U+{ord(text[position]):04X} at position {position + 1}), "
            "which is not text: remove it."
        )
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise InputError(
            f"{what} is not valid UTF-8 text (it contains undecodable bytes); check the terminal's "
            "encoding or the input file."
        ) from None
    return text


def check_question(message: str) -> str:
    """Return ``message`` if it is a usable question; raise :class:`InputError` saying what is wrong."""
    if not isinstance(message, str):
        raise InputError(f"The question must be text, not {type(message).__name__}.")
    if not message.strip():
        raise InputError("The question is empty: write what you want to know.")
    if len(message) > MAX_QUESTION_CHARS:
        raise InputError(
            f"The question has {len(message)} characters; the limit is {MAX_QUESTION_CHARS}. Shorten it."
        )
    return check_text(message, "The question")


def check_conversation_id(conversation_id: str) -> str:
    """Return ``conversation_id`` if it can name a conversation; raise :class:`InputError` saying why not."""
    if not isinstance(conversation_id, str):
        raise InputError(f"A conversation id must be text, not {type(conversation_id).__name__}.")
    if not conversation_id:
        raise InputError("The conversation id is empty: give 1 to 64 characters, or none for a new one.")
    if len(conversation_id) > CONVERSATION_ID_LENGTH:
        raise InputError(
            f"A conversation id must have 1 to {CONVERSATION_ID_LENGTH} characters, "
            f"got {len(conversation_id)} ({conversation_id[:20]!r}…)."
        )
    for position, char in enumerate(conversation_id):
        category = unicodedata.category(char)
        if category in ("Cc", "Cs"):
            what = "a control character" if category == "Cc" else "a lone surrogate"
            why = "" if category == "Cc" else ": it is not valid Unicode text"
            where = f"U+{ord(char):04X} at position {position + 1}"
            raise InputError(f"A conversation id may not contain {what} ({where}){why}.")
    return conversation_id


def check_turn_input(conversation_id: str, message: str) -> None:
    """Check a turn's conversation id and question; raise :class:`InputError` on the first problem."""
    check_conversation_id(conversation_id)
    check_question(message)
