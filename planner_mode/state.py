"""The conversation state a planner turn stores: what the ERP derives itself, plus what only the model knows.

SKELETON (issue 11, latency of the article's design): today the model's ``estado`` is stored as is.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from shared.turn import ExecutedOperation

__all__ = ["turn_state"]


def turn_state(
    previous: Mapping[str, Any], operations: Sequence[ExecutedOperation], model_state: Mapping[str, Any]
) -> dict[str, Any]:
    """The state update to store for this turn (merged key by key into the stored state by the store).

    ``previous`` is the state the turn's context showed, ``operations`` what the ERP executed this turn and
    ``model_state`` the ``estado`` call 2 returned.
    """
    return dict(model_state)
