"""Scoring one turn: it passes when its operations, facts, state, answer, claims, clean and reply checks
all hold (``None``: a check the scenario did not ask for).

Facts are values the ERP computes at scoring time; a scenario's ``asks`` narrows them to names or figures.
Claims (:mod:`benchmarks.scoring.claims`): nothing else the answer states is wrong. Clean
(:mod:`benchmarks.scoring.machinery`): no raw JSON, operation calls or English. Reply
(:mod:`benchmarks.scoring.reply`): the positive check of a turn that must run no operation.

**The answer is judged, not the path.** A follow-up answered from what the conversation already holds passes
the operations check although nothing ran, when the answer states every fact asked for, among them a figure
(a name can be guessed, an ERP figure cannot), names the subject of the expected calls and states nothing
wrong. Running a wrong operation still fails it.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, Field

from benchmarks.scoring.claims import Evidence, claim_problems
from benchmarks.scoring.entities import ErpNames, words
from benchmarks.scoring.facts import FACT_KEY, FactEvaluationError, FactEvaluator
from benchmarks.scoring.machinery import machinery_problems
from benchmarks.scoring.numbers import mentions_number
from benchmarks.scoring.operations import match_operations, normalize_value
from benchmarks.scoring.reply import capability_topics, reply_problems
from shared.erp.database import Erp
from shared.errors import INTERNAL_ERROR_PREFIX
from shared.operations.registry import OperationRegistry
from shared.security import Caller
from shared.text import fold

if TYPE_CHECKING:
    from benchmarks.scenario import Expectation


class TurnScore(BaseModel):
    """The checks of one turn. ``None`` means the scenario did not ask for that check."""

    passed: bool
    operations: bool | None = None
    facts: bool | None = None
    state: bool | None = None
    answer: bool | None = None
    claims: bool | None = None
    clean: bool | None = None
    reply: bool | None = None
    details: list[str] = Field(default_factory=list)
    """Why each failing check failed, in words."""


def value_in_answer(value: Any, answer: str, names: ErpNames | None = None) -> bool:
    """Whether a fact's value appears in the answer: numbers in any notation, names as whole folded words
    (``"Empresa AB"`` is not in ``"Empresa ABC"``); with ``names``, a customer or product also by what
    identifies it (:class:`~benchmarks.scoring.entities.ErpNames`)."""
    if isinstance(value, bool):
        value = "sí" if value else "no"
    if isinstance(value, int | float):
        return mentions_number(answer, float(value))
    if isinstance(value, Sequence) and not isinstance(value, str):
        return all(value_in_answer(item, answer, names) for item in value)
    if names is not None:
        return names.names(str(value), answer)
    return words(str(value)) in words(answer)


def _is_figure(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _asked(value: Any, asks: str | None) -> bool:
    if asks == "name":
        return not _is_figure(value)
    if asks == "figure":
        return _is_figure(value)
    return True


def _texts(value: Any) -> list[str]:
    """The text values inside a call's parameters (its subject: a customer's name)."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, Mapping):
        return [text for item in value.values() for text in _texts(item)]
    if isinstance(value, list):
        return [text for item in value for text in _texts(item)]
    return []


class TurnScorer:
    """Scores turns against their expectations, evaluating facts in the ERP (cached)."""

    def __init__(self, registry: OperationRegistry, erp: Erp) -> None:
        self.registry = registry
        self.facts = FactEvaluator(registry, erp)
        self._erp = erp
        self._loaded: list[ErpNames] = []  # a list, so that as_caller's copies share it

    def as_caller(self, caller: Caller) -> TurnScorer:
        if caller == self.facts.caller:
            return self
        other = copy.copy(self)
        other.facts = self.facts.as_caller(caller)
        return other

    @property
    def names(self) -> ErpNames:
        if not self._loaded:
            self._loaded.append(ErpNames.of(self._erp))
        return self._loaded[0]

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
        question: str = "",
        failed: bool = False,
        failure: str | None = None,
        denied: bool = False,
        refusal: bool | None = None,
        refused: Sequence[Mapping[str, Any]] = (),
    ) -> TurnScore:
        """Score a turn. ``operations``: the calls the ERP executed; ``refused``: those it refused or that
        failed (each with its ``error``), which only explain a failed operations check. ``question``: what
        the user wrote (its numbers may be repeated). ``state`` is ``None`` when the mode keeps none (no
        state check). A ``failed`` turn never passes. ``denied``: the ERP refused the conversation (another
        user's); a turn expecting it passes exactly then, and no other check applies. ``refusal``: whether
        the reply must decline (default: the expectation's flag).
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
            expected = self._expected_calls(expect)
            facts_ok = self._check_facts(expect, answer, details)
            state_ok = self._check_state(expect, state, details)
            evidence = self._evidence(expect, expected, question)
        except FactEvaluationError as exc:
            details.append(f"scenario error: {exc}")
            return TurnScore(passed=False, details=details)
        claims_ok = self._check(
            None if evidence is None else claim_problems(answer, evidence, self.names), details
        )
        from_context = (
            expected is not None
            and bool(expected)
            and not operations
            and not refused
            and facts_ok is True
            and claims_ok is not False
            and self._answers_alone(expect, expected, answer)
        )
        operation_details: list[str] = []
        ops_ok = (
            True if from_context else self._check_operations(expected, operations, operation_details, refused)
        )
        details[:0] = operation_details
        answer_ok = self._check_answer(expect, answer, details)
        clean_ok = self._check(machinery_problems(answer, [op.name for op in self.registry]), details)
        must_refuse = expect.refusal if refusal is None else refusal
        reply_ok = self._check_reply(expect, answer, failure, must_refuse, details)
        checks = [ops_ok, facts_ok, state_ok, answer_ok, claims_ok, clean_ok, reply_ok]
        if failed:
            details.insert(0, f"the turn failed ({failure})" if failure else "the turn failed")
        passed = not failed and all(check is not False for check in checks)
        return TurnScore(
            passed=passed,
            operations=ops_ok,
            facts=facts_ok,
            state=state_ok,
            answer=answer_ok,
            claims=claims_ok,
            clean=clean_ok,
            reply=reply_ok,
            details=details,
        )

    @staticmethod
    def _check(problems: list[str] | None, details: list[str]) -> bool | None:
        if problems is None:
            return None
        details.extend(problems)
        return not problems

    def _expected_calls(self, expect: Expectation) -> list[dict[str, Any]] | None:
        """The expected calls with their facts resolved; ``None`` when operations are not checked."""
        if expect.operations is None:
            return None
        return [
            {"funcion": op.funcion, "parametros": self.resolve(op.parametros)} for op in expect.operations
        ]

    def _evidence(
        self, expect: Expectation, expected: list[dict[str, Any]] | None, question: str
    ) -> Evidence | None:
        """Every call the expectation names (operations and facts' calls), with its result; ``None`` when it
        names none."""
        calls = [(call["funcion"], call["parametros"]) for call in expected or []]
        calls += [call for fact in expect.facts for call in self.facts.calls(fact)]
        unique = {
            f"{name}:{json.dumps(params, sort_keys=True, default=str)}": (name, params)
            for name, params in calls
        }
        if not unique:
            return None
        called = [(name, params, self.facts.call(name, params)) for name, params in unique.values()]
        return Evidence(calls=called, question=question, today=self._erp.today)

    def _answers_alone(self, expect: Expectation, expected: list[dict[str, Any]], answer: str) -> bool:
        """Whether the answer stands without the calls: it states a figure the question asks for and names
        every text parameter of the expected calls (the facts and claims are checked apart)."""
        figures = [self.facts.evaluate(fact) for fact in expect.facts]
        if not any(_is_figure(value) and _asked(value, expect.asks) for value in figures):
            return False
        subjects = [text for call in expected for text in _texts(call["parametros"])]
        return all(self.names.names(subject, answer) for subject in subjects)

    def _check_operations(
        self,
        expected: list[dict[str, Any]] | None,
        operations: Sequence[Mapping[str, Any]],
        details: list[str],
        refused: Sequence[Mapping[str, Any]] = (),
    ) -> bool | None:
        if expected is None:
            return None
        match = match_operations(expected, operations, self.registry, names=self.names)
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
            if _asked(value, expect.asks) and not value_in_answer(value, answer, self.names):
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

    def _check_reply(
        self, expect: Expectation, answer: str, failure: str | None, refusal: bool, details: list[str]
    ) -> bool | None:
        if expect.operations is None or expect.operations:
            return None
        capabilities = (
            capability_topics(op.name for op in self.registry) if expect.small_talk == "capabilities" else ()
        )
        problems = reply_problems(
            answer,
            refusal=refusal,
            failure=failure,
            courtesy=expect.small_talk == "courtesy",
            capabilities=capabilities,
        )
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
    error = str(operation.get("error") or "")
    name = operation.get("funcion", "?")
    if error.startswith(INTERNAL_ERROR_PREFIX):
        return f"operation {name} failed in the ERP ({error})"
    return f"the ERP refused operation {name}: {error}"
