"""One check of a model-written answer before it is shown as the ERP's truth, the same in both modes.

An answer fails the check when it states figures no ERP source supports (:mod:`shared.grounding`: invented,
or said of another year, customer or product) or claims the ERP did something no executed operation did
(:mod:`shared.actions`: sent, changed, deleted, registered, executed). Memory items with ungrounded figures
are dropped whatever the outcome. An engine under the ``refuse`` policy shows :func:`refusal_text` instead
and records that exchange, with the state the executed operations imply, so a follow-up keeps its referent.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import date
from typing import Any

from shared.actions import claimed_action_answer, claimed_actions
from shared.answer import MemoryItem
from shared.grounding import check_answer
from shared.memory.context import ConversationContext, render_context
from shared.result_text import with_results
from shared.state import ERP_STATE_KEYS
from shared.turn import ExecutedOperation

__all__ = ["AnswerCheck", "failed_check_errors", "refusal_text", "trusted_context", "verify_answer"]


@dataclass(frozen=True)
class AnswerCheck:
    """What the check found in one answer."""

    figures: list[str]
    """Figures no source supports, as written (``[]``: grounded)."""
    claims: list[str]
    """Phrases that claim an action no executed operation did (``[]``: none)."""
    memories: list[MemoryItem]
    """The memory items to store: those whose figures are all grounded."""
    state: dict[str, Any]
    """The model-written state to store: its entries whose figures are all grounded."""

    @property
    def passed(self) -> bool:
        """Whether the answer may be shown as it is."""
        return not self.figures and not self.claims


def verify_answer(
    answer: str,
    memories: Sequence[MemoryItem],
    operations: Sequence[ExecutedOperation],
    texts: Iterable[str],
    today: date,
    state: Mapping[str, Any] | None = None,
) -> AnswerCheck:
    """Check ``answer`` (and ``memories`` and the model-written ``state``) against the turn's
    ``operations``, the ``texts`` the ERP sent (question, context rendered by :func:`trusted_context`,
    catalog, refusals) and ``today``."""
    grounding = check_answer(answer, memories, operations, texts, today, state)
    claims = claimed_actions(answer, operations)
    return AnswerCheck(grounding.figures, claims, grounding.memories, grounding.state)


def trusted_context(context: ConversationContext) -> str:
    """``context`` rendered as a grounding source: without the state keys only a model wrote (the ERP's own
    keys stay), so a figure a model once wrote in ``estado`` never grounds a later answer."""
    erp_state = {key: value for key, value in context.state.items() if key in ERP_STATE_KEYS}
    return render_context(context.model_copy(update={"state": erp_state}))


def failed_check_errors(check: AnswerCheck) -> list[str]:
    """The turn's error lines for an answer that failed ``check``: its ungrounded figures, its claims."""
    errors = []
    if check.figures:
        errors.append(f"Ungrounded figures in the answer: {', '.join(check.figures)}")
    if check.claims:
        errors.append(f"Claimed actions the ERP did not do: {' | '.join(check.claims)}")
    return errors


def refusal_text(check: AnswerCheck, operations: Sequence[ExecutedOperation]) -> str:
    """What the user reads instead of an answer that failed ``check``: why, and the ERP's own rendering of
    the results of the operations that ran."""
    if check.figures:
        return ungrounded_answer(check.figures, operations)
    return with_results(claimed_action_answer(check.claims), operations)


def ungrounded_answer(figures: Sequence[str], operations: Sequence[ExecutedOperation]) -> str:
    """What the user reads instead of an answer with ungrounded ``figures``: which figures, and the ERP's
    own plain-text rendering of the results of the operations that ran (:mod:`shared.result_text`; none ran:
    a request to ask again)."""
    shown = ", ".join(figures[:5]) + (" …" if len(figures) > 5 else "")
    head = (
        "Lo siento, no puedo confirmar con los datos del ERP algunas cifras de la respuesta del modelo "
        f"({shown}), así que no la muestro ni la guardo."
    )
    return with_results(head, operations, none_ran="¿Puede intentarlo de nuevo o reformular la pregunta?")
