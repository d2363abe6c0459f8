"""Fair prompts: no prompt template carries the benchmark's answers.

A prompt template that quotes a scenario's question, names a seeded customer or product, or shows a value the
suite expects (a year asked about, a total, the best customer) teaches the model the test: a real model copies
few-shot examples, so the mode with the leaky prompt would score better for the wrong reason. Examples in
templates must use invented names and values.

What is scanned: every prompt template file (package data, not Python) of ``planner_mode.prompts`` and
``toolcalling_mode.prompts``, folded (case and accents ignored). What counts as a leak:

- **scenario text**: any sentence of a scenario's user turn with at least :data:`MIN_SENTENCE_WORDS` words, or
  any run of :data:`NGRAM_WORDS` consecutive words of it;
- **seeded names**: every customer name, product name, SKU and category of the seeded demo ERP;
- **expected values**: the literal values in expected operations and states, the strings the answer must
  contain, and the value of every ``facts`` / ``$fact`` expression evaluated in the ERP as the turn's user
  (numbers of :data:`MIN_NUMBER` or more in any notation the scorer accepts: ``2025``, ``₲850.000.000``,
  ``850 millones``; strings of :data:`MIN_STRING_CHARS` or more characters as whole words).

Refusal phrasings (``answer_contains_any``) and forbidden strings (``answer_not_contains``) are not values a
correct answer carries, so they are not scanned.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from importlib import resources
from typing import Any

import pytest
from sqlalchemy import select

from benchmarks.scenario import FACT_KEY, Scenario, load_scenarios
from benchmarks.scoring.facts import FactEvaluationError, FactEvaluator
from benchmarks.scoring.numbers import mentions_number
from planner_mode.prompts import EXAMPLE_PLAN, EXAMPLE_QUESTION, compact_plan
from shared.erp.database import Erp
from shared.erp.models import Customer, Product
from shared.erp.users import DEFAULT_USER, caller_for
from shared.operations.registry import OperationRegistry
from shared.text import fold

TEMPLATE_PACKAGES = ("planner_mode.prompts", "toolcalling_mode.prompts")
MIN_SENTENCE_WORDS = 3
"""A whole sentence of a user turn this long is a leak ("¿Y cuánto compró?" is one)."""
NGRAM_WORDS = 5
"""Any run of this many consecutive words of a user turn is a leak."""
MIN_NUMBER = 100
"""Smaller expected numbers (a month, a limit of 5) are too common to mean anything."""
MIN_STRING_CHARS = 4


@dataclass(frozen=True)
class Leak:
    """One finding: which template, what leaked, and where the suite or the ERP has it."""

    template: str
    what: str
    source: str

    def __str__(self) -> str:
        return f"{self.template}: {self.what} ({self.source})"


def _words(text: str) -> list[str]:
    return re.findall(r"\w+", fold(text))


def _word_text(text: str) -> str:
    """The folded words of ``text`` joined by single spaces, padded so that phrases match whole words."""
    return f" {' '.join(_words(text))} "


def prompt_templates() -> dict[str, str]:
    """Every prompt template file of both modes, by ``package/file`` name; the planner's worked example."""
    templates: dict[str, str] = {}
    for package in TEMPLATE_PACKAGES:
        for entry in resources.files(package).iterdir():
            if entry.is_file() and not entry.name.endswith((".py", ".pyc")):
                templates[f"{package}/{entry.name}"] = entry.read_text(encoding="utf-8")
    templates["planner_mode.prompts worked example"] = f"{EXAMPLE_QUESTION}\n{compact_plan(EXAMPLE_PLAN)}"
    return templates


def user_phrases(text: str) -> set[str]:
    """The phrases of a user turn a template must not contain: long sentences and every word n-gram."""
    phrases: set[str] = set()
    for sentence in re.split(r"[.?!¿¡;\n]+", text):
        words = _words(sentence)
        if len(words) >= MIN_SENTENCE_WORDS:
            phrases.add(" ".join(words))
    words = _words(text)
    phrases.update(" ".join(words[i : i + NGRAM_WORDS]) for i in range(len(words) - NGRAM_WORDS + 1))
    return phrases


def contains_phrase(template: str, phrase: str) -> bool:
    """Whether the folded words of ``template`` contain ``phrase`` (folded words) as whole words."""
    return f" {phrase} " in _word_text(template)


def contains_value(template: str, value: Any) -> bool:
    """Whether ``template`` shows ``value``: a number in any notation, a string as whole words."""
    if isinstance(value, bool) or value is None:
        return False
    if isinstance(value, int | float):
        return abs(value) >= MIN_NUMBER and mentions_number(template, value)
    if isinstance(value, str):
        words = _words(value)
        return (
            len(fold(value)) >= MIN_STRING_CHARS
            and bool(words)
            and contains_phrase(template, " ".join(words))
        )
    return False


def _scalars(value: Any) -> Iterator[Any]:
    if isinstance(value, dict):
        for item in value.values():
            yield from _scalars(item)
    elif isinstance(value, list | tuple):
        for item in value:
            yield from _scalars(item)
    else:
        yield value


def _resolve(value: Any, evaluator: FactEvaluator) -> Iterator[tuple[Any, str]]:
    """The literal values inside an expectation, with each ``{"$fact": …}`` replaced by its value."""
    if isinstance(value, dict) and FACT_KEY in value:
        yield from _fact_values(value[FACT_KEY], evaluator)
    elif isinstance(value, dict):
        for item in value.values():
            yield from _resolve(item, evaluator)
    elif isinstance(value, list):
        for item in value:
            yield from _resolve(item, evaluator)
    else:
        yield value, repr(value)


def _fact_values(fact: str, evaluator: FactEvaluator) -> Iterator[tuple[Any, str]]:
    try:
        result = evaluator.evaluate(fact)
    except FactEvaluationError:  # a fact the user may not see: it cannot be an expected value either
        return
    for scalar in _scalars(result):
        yield scalar, f"{fact} = {scalar!r}"


def expected_values(
    scenarios: list[Scenario], erp: Erp, registry: OperationRegistry
) -> list[tuple[Any, str]]:
    """Every value the suite expects, with where it comes from (``scenario turn N: …``)."""
    values: list[tuple[Any, str]] = []
    evaluators: dict[str, FactEvaluator] = {}
    for scenario in scenarios:
        for number, turn in enumerate(scenario.turns, start=1):
            user = turn.as_user or scenario.user or DEFAULT_USER
            if user not in evaluators:
                evaluators[user] = FactEvaluator(registry, erp, caller_for(erp, user))
            evaluator = evaluators[user]
            expect = turn.expect
            found: list[tuple[Any, str]] = []
            for operation in expect.operations or []:
                found.extend(_resolve(operation.parametros, evaluator))
            found.extend(_resolve(expect.state or {}, evaluator))
            for fact in expect.facts:
                found.extend(_fact_values(fact, evaluator))
            found.extend((text, repr(text)) for text in expect.answer_contains)
            values.extend((value, f"{scenario.id} turn {number}: {where}") for value, where in found)
    return values


def seeded_names(erp: Erp) -> list[tuple[str, str]]:
    """Every customer name, product name, SKU and category of the seeded ERP, with its kind."""
    with erp.session() as session:
        names = [(name, "customer") for name in session.scalars(select(Customer.name))]
        for sku, name, category in session.execute(select(Product.sku, Product.name, Product.category)):
            names += [(name, "product"), (sku, "SKU"), (category, "category")]
    return list(dict.fromkeys(names))


def scenario_leaks(templates: dict[str, str], scenarios: list[Scenario]) -> list[Leak]:
    leaks: list[Leak] = []
    for scenario in scenarios:
        for number, turn in enumerate(scenario.turns, start=1):
            for phrase in sorted(user_phrases(turn.user)):
                leaks += [
                    Leak(name, repr(phrase), f"{scenario.id} turn {number}: {turn.user!r}")
                    for name, text in templates.items()
                    if contains_phrase(text, phrase)
                ]
    return _first_of_each(leaks)


def _first_of_each(leaks: list[Leak]) -> list[Leak]:
    """One finding per template and leaked text (the first place the suite or the ERP has it)."""
    first: dict[tuple[str, str], Leak] = {}
    for leak in leaks:
        first.setdefault((leak.template, leak.what), leak)
    return list(first.values())


def value_leaks(templates: dict[str, str], values: list[tuple[Any, str]]) -> list[Leak]:
    return _first_of_each(
        [
            Leak(name, repr(value), source)
            for value, source in values
            for name, text in templates.items()
            if contains_value(text, value)
        ]
    )


@pytest.fixture(scope="module")
def scenarios() -> list[Scenario]:
    return load_scenarios()


@pytest.fixture(scope="module")
def templates() -> dict[str, str]:
    found = prompt_templates()
    assert {"planner_mode.prompts/system.md", "toolcalling_mode.prompts/system.md"} <= set(found)
    return found


def test_no_template_contains_a_scenario_question(
    templates: dict[str, str], scenarios: list[Scenario]
) -> None:
    leaks = scenario_leaks(templates, scenarios)
    assert not leaks, "Prompt templates quote the suite's questions:\n" + "\n".join(map(str, leaks))


def test_no_template_names_a_seeded_customer_product_or_category(templates: dict[str, str], erp: Erp) -> None:
    names = seeded_names(erp)
    assert ("Empresa ABC", "customer") in names and len(names) > 100
    leaks = value_leaks(templates, [(name, f"seeded {kind}") for name, kind in names])
    assert not leaks, "Prompt templates name seeded ERP data:\n" + "\n".join(map(str, leaks))


def test_no_template_contains_a_value_the_suite_expects(
    templates: dict[str, str], scenarios: list[Scenario], erp: Erp, registry: OperationRegistry
) -> None:
    values = expected_values(scenarios, erp, registry)
    assert any(value == 850_000_000 for value, _ in values)  # the article's figure is among them
    leaks = value_leaks(templates, values)
    assert not leaks, "Prompt templates show values the suite expects:\n" + "\n".join(map(str, leaks))


def test_the_scan_catches_each_kind_of_leak(
    scenarios: list[Scenario], erp: Erp, registry: OperationRegistry
) -> None:
    """The scan itself can fail: a template with a suite question, a seeded name or an expected value."""
    question = scenarios[0].turns[0].user
    leaky = {
        "question": f"Ejemplo: {question.upper()}",
        "ngram": "el usuario dice: cual fue nuestro mejor cliente en aquel periodo",
        "customer": 'Ejemplo: {"cliente_actual": "empresa abc"}',
        "amount": "Escribe los importes así: ₲850.000.000.",
        "year": '{"anio": 2025}',
        "clean": 'Ejemplo inventado: {"proveedor": "Papelera Orión", "anio": 2031, "total": 1234567}',
    }
    assert {leak.template for leak in scenario_leaks(leaky, scenarios)} == {"question", "ngram"}
    names = [(name, kind) for name, kind in seeded_names(erp)]
    assert {leak.template for leak in value_leaks(leaky, names)} == {"customer"}
    found = {leak.template for leak in value_leaks(leaky, expected_values(scenarios, erp, registry))}
    assert {"customer", "amount", "year"} <= found
    assert "clean" not in found
    assert not contains_phrase("ahora decimos", "hora de")  # whole words only, not substrings
