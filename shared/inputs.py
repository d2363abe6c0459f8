"""What a turn's caller may send: checked before anything is read, paid or written.

Both engines call :func:`check_turn_input` first, so a bad conversation id or question costs no model call
and leaves nothing behind (failure kind ``input``); the CLI refuses it with one line before opening a model.
"""

from __future__ import annotations

from shared.errors import InputError

__all__ = ["MAX_QUESTION_CHARS", "check_question", "check_turn_input"]

MAX_QUESTION_CHARS = 4000
"""Longest question accepted, in characters: several paragraphs, far below any model's context."""


def check_question(message: str) -> str:
    """Return ``message`` if it is a usable question; raise :class:`InputError` saying what is wrong.

    Refused: a non-string, an empty or whitespace-only text, more than :data:`MAX_QUESTION_CHARS` characters,
    and text that is not valid Unicode (lone surrogates, which a terminal sends for undecodable bytes).
    """
    if not isinstance(message, str):
        raise InputError(f"The question must be text, not {type(message).__name__}.")
    if not message.strip():
        raise InputError("The question is empty: write what you want to know.")
    if len(message) > MAX_QUESTION_CHARS:
        raise InputError(
            f"The question has {len(message)} characters; the limit is {MAX_QUESTION_CHARS}. Shorten it."
        )
    try:
        message.encode("utf-8")
    except UnicodeEncodeError:
        raise InputError(
            "The question is not valid UTF-8 text (it contains undecodable bytes); check the terminal's "
            "encoding or the input file."
        ) from None
    return message


def check_turn_input(conversation_id: str, message: str) -> None:
    """Check a turn's conversation id and question; raise :class:`InputError` on the first problem."""
    from shared.memory.store import check_conversation_id

    check_conversation_id(conversation_id)
    check_question(message)
