"""Logging conventions: stdlib ``logging``, one logger per package, one structured record per turn.

The library never configures handlers. :func:`log_turn` logs each finished turn once (INFO, WARNING if it
failed) with its fields in the message and in ``record.erp_ai``; question and answer texts are never logged.
"""

from __future__ import annotations

import logging
from typing import Any

from shared.turn import TurnResult

TURN_FIELDS = (
    "conversation_id",
    "user_id",
    "mode",
    "model_calls",
    "input_tokens",
    "output_tokens",
    "total_ms",
    "model_ms",
    "failure",
    "recorded",
)
"""The keys of ``record.erp_ai`` for a turn record."""


def turn_fields(result: TurnResult, user_id: str) -> dict[str, Any]:
    """The structured fields of one finished turn."""
    return {
        "conversation_id": result.conversation_id,
        "user_id": user_id,
        "mode": result.mode,
        "model_calls": result.model_calls,
        "input_tokens": result.input_tokens,
        "output_tokens": result.output_tokens,
        "total_ms": round(result.total_ms, 1),
        "model_ms": round(result.model_ms, 1),
        "failure": result.failure,
        "recorded": result.recorded,
    }


def log_turn(logger: logging.Logger, result: TurnResult, user_id: str) -> None:
    """Log one finished turn: INFO when it succeeded, WARNING with its failure kind otherwise."""
    fields = turn_fields(result, user_id)
    level = logging.INFO if result.failure is None else logging.WARNING
    if not logger.isEnabledFor(level):
        return
    text = " ".join(f"{key}={value}" for key, value in fields.items())
    logger.log(level, "turn %s", text, extra={"erp_ai": fields})
