"""Scoring one turn: operations, facts, state, answer and reply checks; the turn passes when all of them hold.

The reply check (:mod:`benchmarks.scoring.reply`) is the positive check of a turn that must run no operation
(``operations: []``): without it, any model that calls nothing, babble included, would pass small talk,
refusals and prompt injections.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, Field

from benchmarks.scoring.facts import FACT_KEY, FactEvaluationError, FactEvaluator
from benchmarks.scoring.numbers import mentions_number
from benchmarks.scoring.operations import match_operations, normalize_value
from benchmarks.scoring.reply import reply_problems
from shared.erp.database import Erp
from shared.errors import INTERNAL_ERROR_PREFIX
from shared.operations.registry import OperationRegistry
from shared.security import Caller
from shared.text import fold

if TYPE_CHECKING:
    from benchmarks.scenario import Expectation

_NON_WORD = re.compile(r"[^\w]+")


class TurnScore(BaseModel):
    """The checks of one turn. ``None`` means the scenario did not ask for that check."""

    passed: bool
    operations: bool | None = None
    facts: bool | None = None
    state: bool | None = None
    answer: bool | None = None
    reply: bool | None = None
    """The positive check of a turn expecting no operation: a complete Spanish reply (and a refusal when one
    is due); ``None`` for turns that expect operations or do not say."""
    details: list[str] = Field(default_factory=list)
    """Why each failing check failed, in words."""


def _words(text: str) -> str:
    """``text`` folded, with punctuation turned into single spaces and padded: `` comercial guarani s a ``."""
    return " " + " ".join(_NON_WORD.sub(" ", fold(text)).split()) + " "


def value_in_answer(value: Any, answer: str) -> bool:
    """Whether a fact's value appears in the answer: numbers in any notation, names as whole words.

    Names compare case-, accent- and punctuation-insensitively, and only as whole words, so ``"Empresa AB"``
    is not found in ``"Empresa ABC"`` nor ``"si"`` in ``"así"``.
    """
    if isinstance(value, bool):
        value = "sí" if value else "no"
    if isinstance(value, int | float):
        return mentions_number(answer, float(value))
    if isinstance(value, Sequence) and not isinstance(value, str):
        return all(value_in_answer(item, answer) for item in value)
    return _words(str(value)) in _words(answer)


class TurnScorer:
    """Scores turns against their expectations, evaluating facts in the ERP (cached)."""

    def __init__(self, registry: OperationRegistry, erp: Erp) -> None:
        self.registry = registry
        self.facts = FactEvaluator(registry, erp)

    def as_caller(self, caller: Caller) -> TurnScorer:
        """The scorer whose facts are evaluated as ``caller`` sees the ERP (same cache)."""
        if caller == self.facts.caller:
            return self
        other = copy.copy(self)
        other.facts = self.facts.as_caller(caller)
        return other

    def resolve(self, value: Any) -> Any:
        """Replace every ``{"$fact": expr}`` inside ``value`` by the fact's value."""
        if isinstance(value, Mapping):
            if FACT_KEY in value:
                return self.facts.evaluate(str(value[FACT_KEY]))
            return {key: self.resolve(item) for key, item in value.items()}
        if isinstance(value, list):
            return [self.resolve(item) for item in value]
        return value

    def score(
        self,
        expect: Expectation,
        *,
        answer: str,
        operations: Sequence[Mapping[str, Any]],
        state: Mapping[str, Any] | None,
        failed: bool = False,
        failure: str | None = None,
        denied: bool = False,
        refusal: bool | None = None,
        refused: Sequence[Mapping[str, Any]] = (),
    ) -> TurnScore:
        """Score a turn. ``operations`` are the calls the ERP executed successfully; ``refused`` the ones it
        refused or that failed (each with its ``error``), which only explain a failed operations check.

        ``state`` is ``None`` when the mode produces no state: the state check is then skipped. A mode that
        does produce state is checked even when its state is empty (an empty state lacks the expected keys).
        A ``failed`` turn (any failure kind, or an engine that raised) never passes; ``failure`` is its kind.
        ``denied`` says the ERP refused the turn because the conversation belongs to another user: a turn that
        expects it passes exactly when it happened, and no other check applies. A turn expecting no operation
        must also give a reply that passes :func:`~benchmarks.scoring.reply.reply_problems`; ``refusal`` says
        whether it must decline (default: the expectation's ``refusal`` flag).
        """
        if expect.denied or denied:
            ok = expect.denied and denied
            why = (
                []
                if ok
                else ["the ERP refused the conversation" if denied else "expected the ERP to refuse it"]
            )
            return TurnScore(passed=ok, details=why)
        details: list[str] = []
        try:
            ops_ok = self._check_operations(expect, operations, details, refused)
            facts_ok = self._check_facts(expect, answer, details)
            state_ok = self._check_state(expect, state, details)
        except FactEvaluationError as exc:
            details.append(f"scenario error: {exc}")
            return TurnScore(passed=False, details=details)
        answer_ok = self._check_answer(expect, answer, details)
        must_refuse = expect.refusal if refusal is None else refusal
        reply_ok = self._check_reply(expect, answer, failure, must_refuse, details)
        checks = [ops_ok, facts_ok, state_ok, answer_ok, reply_ok]
        if failed:
            details.insert(0, f"the turn failed ({failure})" if failure else "the turn failed")
        passed = not failed and all(check is not False for check in checks)
        return TurnScore(
            passed=passed,
            operations=ops_ok,
            facts=facts_ok,
            state=state_ok,
            answer=answer_ok,
            reply=reply_ok,
            details=details,
        )

    def _check_operations(
        self,
        expect: Expectation,
        operations: Sequence[Mapping[str, Any]],
        details: list[str],
        refused: Sequence[Mapping[str, Any]] = (),
    ) -> bool | None:
        if expect.operations is None:
            return None
        expected = [
            {"funcion": op.funcion, "parametros": self.resolve(op.parametros)} for op in expect.operations
        ]
        match = match_operations(expected, operations, self.registry)
        if not match.ok:
            details += [_refusal_detail(op) for op in refused]
            if expected and not operations and not refused:
                details.append("no operation ran: the model answered without calling the ERP")
            details.append(match.describe())
        return match.ok

    def _check_facts(self, expect: Expectation, answer: str, details: list[str]) -> bool | None:
        if not expect.facts:
            return None
        ok = True
        for fact in expect.facts:
            value = self.facts.evaluate(fact)
            if not value_in_answer(value, answer):
                details.append(f"answer lacks {fact} = {value!r}")
                ok = False
        return ok

    def _check_state(
        self, expect: Expectation, state: Mapping[str, Any] | None, details: list[str]
    ) -> bool | None:
        if expect.state is None or state is None:
            return None
        ok = True
        for key, wanted in self.resolve(expect.state).items():
            got = state.get(key)
            if normalize_value(got) != normalize_value(wanted):
                details.append(f"state {key} = {got!r}, expected {wanted!r}")
                ok = False
        return ok

    @staticmethod
    def _check_reply(
        expect: Expectation, answer: str, failure: str | None, refusal: bool, details: list[str]
    ) -> bool | None:
        if expect.operations is None or expect.operations:
            return None
        problems = reply_problems(answer, refusal=refusal, failure=failure)
        details.extend(problems)
        return not problems

    def _check_answer(self, expect: Expectation, answer: str, details: list[str]) -> bool | None:
        if not (expect.answer_contains or expect.answer_not_contains or expect.answer_contains_any):
            return None
        folded = fold(answer)
        ok = True
        for text in expect.answer_contains:
            if fold(text) not in folded:
                details.append(f"answer lacks {text!r}")
                ok = False
        for text in expect.answer_not_contains:
            if fold(text) in folded:
                details.append(f"answer contains {text!r}")
                ok = False
        if expect.answer_contains_any and not any(fold(t) in folded for t in expect.answer_contains_any):
            details.append(f"answer has none of {expect.answer_contains_any!r}")
            ok = False
        return ok


def _refusal_detail(operation: Mapping[str, Any]) -> str:
    """What happened to an operation the model asked for that did not run to a result."""
    error = str(operation.get("error") or "")
    name = operation.get("funcion", "?")
    if error.startswith(INTERNAL_ERROR_PREFIX):
        return f"operation {name} failed in the ERP ({error})"
    return f"the ERP refused operation {name}: {error}"
