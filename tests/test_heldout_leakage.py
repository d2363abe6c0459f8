"""Held-out means held out: nothing the models or the stand-in read was shaped on the held-out questions.

The held-out questions (``benchmarks/scenarios/heldout/``) measure how both architectures do on questions
nobody tuned for. They leak when a prompt template, a tool or operation description (what a model reads about
the operations) or the offline stand-in's source (its phrasings, its tables) carries their text: any sentence
of a held-out turn with at least :data:`~tests.test_prompt_leakage.MIN_SENTENCE_WORDS` words, or any run of
:data:`~tests.test_prompt_leakage.NGRAM_WORDS` consecutive words of it, unless the suite's own questions
have it too (a phrase the suite shares is tuning material: "¿tiene facturas pendientes?"). The set itself is
frozen: its hash is pinned here and recorded in every run's provenance.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks.scenario import Scenario, heldout_hash, heldout_scenarios_dir, load_scenarios
from shared.operations.registry import OperationRegistry
from shared.security import Caller
from tests.test_prompt_leakage import Leak, contains_phrase, prompt_templates, user_phrases

FROZEN_HASH = "cc7a5a7bb3df9f6e59b62f7c4b45ec314e8d93154d49bb9b975e1d161777ffcd"
"""The held-out set's hash. Changing a held-out question makes every earlier held-out figure incomparable:
add new questions as a new set instead."""

STAND_IN = Path(__file__).resolve().parents[1] / "benchmarks" / "stand_ins"
CALLERS = (
    Caller(user_id="gerente", roles=frozenset({"gerencia"})),
    Caller(user_id="ana", roles=frozenset({"ventas"})),
)


def model_facing_texts(registry: OperationRegistry) -> dict[str, str]:
    """Everything a model reads that the project wrote, and the stand-in's own source, by name."""
    texts = dict(prompt_templates())
    for caller in CALLERS:
        for spec in registry.catalog(caller):
            texts[f"operation {spec.name}"] = spec.model_dump_json()
        texts[f"denied operations for {caller.user_id}"] = "\n".join(registry.denied(caller))
    for path in sorted(STAND_IN.rglob("*")):
        if path.is_file() and path.suffix in {".py", ".md", ".yaml", ".json", ".txt"}:
            texts[str(path.relative_to(STAND_IN.parent))] = path.read_text(encoding="utf-8")
    return texts


def heldout_leaks(texts: dict[str, str], scenarios: list[Scenario], suite: str = "") -> list[Leak]:
    """Where ``texts`` carry a phrase of the held-out ``scenarios`` that the ``suite``'s questions (one text)
    do not."""
    leaks: list[Leak] = []
    for scenario in scenarios:
        for number, turn in enumerate(scenario.turns, start=1):
            for phrase in sorted(p for p in user_phrases(turn.user) if not contains_phrase(suite, p)):
                leaks += [
                    Leak(name, repr(phrase), f"{scenario.id} turn {number}: {turn.user!r}")
                    for name, text in texts.items()
                    if contains_phrase(text, phrase)
                ]
    return leaks


@pytest.fixture(scope="module")
def heldout() -> list[Scenario]:
    scenarios = load_scenarios([heldout_scenarios_dir()])
    assert scenarios and all(s.split == "heldout" for s in scenarios)
    return scenarios


def test_the_heldout_set_is_frozen() -> None:
    assert heldout_hash() == FROZEN_HASH


def test_the_heldout_set_covers_every_category_of_the_suite(heldout: list[Scenario]) -> None:
    suite = [s for s in load_scenarios() if s.split == "suite"]
    assert {s.category for s in suite} <= {s.category for s in heldout}
    assert sum(len(s.turns) for s in heldout) >= 60


def test_nothing_a_model_or_the_stand_in_reads_carries_a_heldout_question(
    heldout: list[Scenario], registry: OperationRegistry
) -> None:
    texts = model_facing_texts(registry)
    assert any(name.startswith("stand_ins/offline/") for name in texts)
    assert any(name.startswith("operation ") for name in texts)
    suite = "\n".join(turn.user for s in load_scenarios() if s.split == "suite" for turn in s.turns)
    leaks = heldout_leaks(texts, heldout, suite)
    assert not leaks, "Held-out text found where models or the stand-in read it:\n" + "\n".join(
        map(str, leaks)
    )


def test_the_scan_catches_a_leak(heldout: list[Scenario]) -> None:
    """The scan itself can fail: a template that quotes a held-out question, upper-cased and re-punctuated."""
    question = heldout[0].turns[0].user
    assert heldout_leaks({"leaky": f"Ejemplo: «{question.upper()}»"}, heldout)
    words = question.split()
    assert len(words) >= 3 and heldout_leaks({"leaky": " ".join(words[:5]) + " ..."}, heldout)
