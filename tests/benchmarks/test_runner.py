"""The run (benchmarks/runner.py): fresh conversations, streamed records, failures, resume and concurrency
(several targets in one run: ``test_runner_targets.py``).

Each turn is driven through the engine's ``astream`` and read to its ``TurnDone``; units run as workers of one
event loop, ``concurrency`` at a time."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from benchmarks.results import read_results
from benchmarks.runner import run_suite
from benchmarks.scenario import Scenario, load_scenarios
from benchmarks.scoring.turn import TurnScorer
from benchmarks.stand_ins import build_model
from benchmarks.targets import DEFAULT_TARGET, parse_targets
from shared.errors import ConfigurationError, ConversationAccessDenied, ProviderError
from shared.events import AnswerDelta, TurnEvent
from shared.security import Caller
from shared.turn import TurnResult
from tests.benchmarks.bench_fakes import TARGETS, Engines, FakeEngine, config, good_script, run


def timed_script(mode: str, conversation_id: str, message: str) -> TurnResult:
    """``good_script`` with the first-answer time an engine's ``astream`` sets."""
    return good_script(mode, conversation_id, message).model_copy(update={"first_answer_ms": 0.25})


def test_every_turn_of_every_mode_is_streamed_scored_and_written(
    tmp_path: Path, tiny_suite: list[Scenario], scorer: TurnScorer
) -> None:
    engines = Engines(timed_script)
    outcome = run(tiny_suite, config(tmp_path), engines, scorer)

    assert len(outcome.rows) == 6 and all(row.passed for row in outcome.rows), [
        row.score.details for row in outcome.rows
    ]
    assert sum(engine.streamed for engine in engines.built) == 6
    lines = [json.loads(line) for line in outcome.results_path.read_text().splitlines()]
    assert lines[0]["kind"] == "run" and lines[0]["modes"] == ["planner", "toolcalling"]
    assert lines[0]["scenarios"] == 2 and lines[0]["turns"] == 3
    assert [line["kind"] for line in lines[1:]] == ["turn"] * 6
    assert {"model_calls", "input_tokens", "output_tokens", "model_ms", "harness_ms", "score"} <= set(
        lines[1]
    )
    assert [line["first_answer_ms"] for line in lines[1:]] == [0.25] * 6
    assert all(row.simulated_first_answer_ms is None for row in outcome.rows)  # no model reported timing


def test_the_engine_sees_only_the_user_text_in_fresh_conversations(
    tmp_path: Path, tiny_suite: list[Scenario], scorer: TurnScorer
) -> None:
    engines = Engines()
    run(tiny_suite, config(tmp_path, repeat=2), engines, scorer)
    calls = engines.calls()
    assert {message for _, message in calls} == {t.user for s in tiny_suite for t in s.turns}
    conversations: dict[str, set[str]] = {}
    for conversation_id, message in calls:
        conversations.setdefault(conversation_id, set()).add(message)
    assert len(conversations) == 2 * 2 * 2  # modes × scenarios × repetitions
    assert len(engines.built) == 2, "one engine per mode, reused"


def test_a_failing_provider_is_recorded_and_the_run_goes_on(
    tmp_path: Path, tiny_suite: list[Scenario], scorer: TurnScorer
) -> None:
    def flaky(mode: str, conversation_id: str, message: str) -> TurnResult:
        if mode == "toolcalling" and message == "Hola":
            raise ProviderError("connection refused by the test")
        return good_script(mode, conversation_id, message)

    outcome = run(tiny_suite, config(tmp_path), Engines(flaky), scorer)
    assert len(outcome.rows) == 6
    [failed] = [row for row in outcome.rows if row.failed]
    assert (failed.mode, failed.scenario, failed.turn) == ("toolcalling", "saludo", 1)
    assert failed.errors == ["ProviderError: connection refused by the test"]
    assert not failed.passed and failed.score.details[0] == "the turn failed (provider)"
    after = next(r for r in outcome.rows if (r.mode, r.scenario, r.turn) == ("toolcalling", "saludo", 2))
    assert after.passed


class _Unfinished(FakeEngine):
    """An engine whose stream stops before ``TurnDone`` (a bug the run must survive)."""

    async def astream(
        self, conversation_id: str, message: str, caller: Caller, **_: Any
    ) -> AsyncIterator[TurnEvent]:
        yield AnswerDelta(text="a medias")


def _not_installed(mode: str) -> FakeEngine:
    raise ConfigurationError("toolcalling is not installed")


@pytest.mark.parametrize(
    ("broken", "error"),
    [
        (_not_installed, "ConfigurationError: toolcalling is not installed"),
        (
            lambda mode: _Unfinished(mode, good_script),
            "RuntimeError: toolcalling: the event stream ended without TurnDone",
        ),
    ],
    ids=["cannot-be-built", "stream-without-result"],
)
def test_a_broken_engine_fails_its_own_turns_only(
    tmp_path: Path, tiny_suite: list[Scenario], scorer: TurnScorer, broken: Any, error: str
) -> None:
    def factory(mode: str) -> FakeEngine:
        return broken(mode) if mode == "toolcalling" else FakeEngine(mode, good_script)

    outcome = run(tiny_suite, config(tmp_path), factory, scorer)

    failed = [row for row in outcome.rows if row.mode == "toolcalling"]
    assert failed and all(row.failed and not row.passed for row in failed)
    assert failed[0].errors == [error]
    assert all(row.passed for row in outcome.rows if row.mode == "planner")


def test_a_target_without_a_factory_fails_its_turns_only(
    tmp_path: Path, tiny_suite: list[Scenario], scorer: TurnScorer
) -> None:
    outcome = run(tiny_suite, config(tmp_path, TARGETS), {"a": Engines()}, scorer)
    assert all(r.passed for r in outcome.rows if r.target == "a")
    missing = [r for r in outcome.rows if r.target == "b"]
    assert missing and all(r.failed for r in missing)
    assert "No engine factory for target 'b'" in missing[0].errors[0]


@pytest.mark.parametrize(
    ("specs", "last_target", "kept"), [([], DEFAULT_TARGET, 3), (TARGETS, "b", 7)], ids=["one", "targets"]
)
def test_resume_skips_finished_units_and_reruns_unfinished_ones(
    tmp_path: Path,
    tiny_suite: list[Scenario],
    scorer: TurnScorer,
    specs: list[str],
    last_target: str,
    kept: int,
) -> None:
    names = [spec.split("=")[0] for spec in specs] or [DEFAULT_TARGET]
    first = run(tiny_suite, config(tmp_path, specs), {name: Engines() for name in names}, scorer)
    lines = first.results_path.read_text().splitlines()
    # Interrupt the run inside the last unit (toolcalling · saludo): its second turn was never written.
    last = json.loads(lines[-1])
    assert (last["target"], last["mode"], last["scenario"], last["turn"]) == (
        last_target,
        "toolcalling",
        "saludo",
        2,
    )
    first.results_path.write_text("\n".join(lines[:-1]) + "\n")

    factories = {name: Engines() for name in names}
    second = run(tiny_suite, config(tmp_path, specs, resume=True), factories, scorer)
    assert (second.units_run, second.units_skipped) == (1, kept)
    assert [(e.mode, m) for engines in factories.values() for e in engines.built for _, m in e.calls] == [
        ("toolcalling", "Hola"),
        ("toolcalling", "¿Cuánto vendimos en 2025?"),
    ]
    assert factories[last_target].calls(), "the unfinished unit's target reran it"
    rows = read_results(second.results_path).rows
    assert len(rows) == 6 * len(names) == len({(r.unit, r.turn) for r in rows})


def test_a_complete_file_resumes_to_nothing_counting_a_turn_recorded_twice_once(
    tmp_path: Path, tiny_suite: list[Scenario], scorer: TurnScorer
) -> None:
    first = run(tiny_suite, config(tmp_path), Engines(), scorer)
    lines = first.results_path.read_text().splitlines()
    first.results_path.write_text("\n".join([*lines, lines[1]]) + "\n")
    engines = Engines()
    again = run(tiny_suite, config(tmp_path, resume=True), engines, scorer)
    assert again.units_run == 0 and engines.calls() == []
    assert len(again.rows) == 6 == len({(r.unit, r.turn) for r in again.rows})
    assert len(run(tiny_suite, config(tmp_path), Engines(), scorer).rows) == 6, "without resume: replaced"


def test_resume_drops_rows_that_are_not_part_of_this_run(
    tmp_path: Path, tiny_suite: list[Scenario], scorer: TurnScorer
) -> None:
    run(tiny_suite, config(tmp_path, repeat=2), Engines(), scorer)
    engines = Engines()
    again = run(tiny_suite, config(tmp_path, modes=["planner"], resume=True), engines, scorer)
    assert engines.calls() == []
    assert {(r.mode, r.repetition) for r in again.rows} == {("planner", 1)}
    assert len(again.rows) == 3


def test_resume_keeps_the_targets_both_runs_have_and_adds_the_new_one(
    tmp_path: Path, tiny_suite: list[Scenario], scorer: TurnScorer
) -> None:
    run(tiny_suite, config(tmp_path, ["a=offline"]), {"a": Engines()}, scorer)
    factories = {"a": Engines(), "c": Engines()}
    again = run(tiny_suite, config(tmp_path, ["a=offline", "c=offline"], resume=True), factories, scorer)
    assert factories["a"].calls() == [] and len(factories["c"].calls()) == 6
    assert {r.target for r in again.rows} == {"a", "c"}


@pytest.mark.parametrize(
    ("specs", "changed", "message"),
    [
        ([], {"provider": "ollama"}, "provider 'offline' → 'ollama'"),
        (["a=offline", "b=ollama:llama3.1:8b"], {}, "target b: provider 'offline' → 'ollama'"),
        (TARGETS, {"prompt_cache": False}, "prompt_cache True → False"),
    ],
    ids=["provider", "target-model", "prompt-cache"],
)
def test_resume_refuses_results_of_other_settings(
    tmp_path: Path,
    tiny_suite: list[Scenario],
    scorer: TurnScorer,
    specs: list[str],
    changed: dict[str, object],
    message: str,
) -> None:
    factories = {"a": Engines(), "b": Engines()} if specs else Engines()
    run(tiny_suite, config(tmp_path, TARGETS if specs else []), factories, scorer)
    with pytest.raises(ConfigurationError, match=message):
        run(tiny_suite, config(tmp_path, specs, resume=True, **changed), factories, scorer)


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"repeat": 0}, "greater than or equal to 1"),
        ({"modes": []}, "at least 1 item"),
        (
            {"targets": parse_targets(["a=offline"]) + parse_targets(["a=ollama"])},
            "target names must be unique",
        ),
    ],
    ids=["no-repetition", "no-mode", "same-target-name"],
)
def test_invalid_settings_are_refused(tmp_path: Path, settings: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        config(tmp_path, **settings)


@pytest.mark.parametrize(
    ("update", "failed"),
    [
        ({"recorded": False, "errors": ["ProviderError: HTTP 503"], "failure": "provider"}, True),
        ({"errors": ["UnknownOperationError: borrar_tabla"]}, False),  # not a failure by itself
    ],
)
def test_a_turn_fails_when_its_provider_failed_not_for_any_error(
    tmp_path: Path, tiny_suite: list[Scenario], scorer: TurnScorer, update: dict[str, object], failed: bool
) -> None:
    def script(mode: str, conversation_id: str, message: str) -> TurnResult:
        return good_script(mode, conversation_id, message).model_copy(update=update)

    outcome = run(tiny_suite, config(tmp_path), Engines(script), scorer)
    assert all(row.failed is failed and row.passed is not failed for row in outcome.rows)


def test_a_scoring_error_fails_the_turn_and_the_run_goes_on(
    tmp_path: Path, tiny_suite: list[Scenario]
) -> None:
    class BrokenScorer:
        def as_caller(self, _caller: object) -> BrokenScorer:
            return self

        def score(self, *args: object, **kwargs: object) -> object:
            raise RuntimeError("scorer bug")

    outcome = run(tiny_suite, config(tmp_path), Engines(), BrokenScorer())
    assert len(outcome.rows) == 6
    assert all(r.score.details == ["scoring error: RuntimeError: scorer bug"] for r in outcome.rows)


def test_state_is_checked_in_every_mode(tmp_path: Path, scorer: TurnScorer) -> None:
    suite_path = tmp_path / "state.yaml"
    suite_path.write_text(
        "scenarios:\n  - id: s\n    category: x\n    turns:\n      - user: hola\n"
        "        expect: {state: {cliente_actual: Empresa ABC}}\n",
        encoding="utf-8",
    )
    outcome = run(load_scenarios([suite_path]), config(tmp_path), Engines(), scorer)
    # the fake returns no state: every mode records some, so every mode fails the expectation
    assert [(row.score.state, row.passed) for row in outcome.rows] == [(False, False)] * 2


def test_a_denied_conversation_raised_by_astream_is_recorded_as_denied(
    tmp_path: Path, tiny_suite: list[Scenario], scorer: TurnScorer
) -> None:
    def refuse(mode: str, conversation_id: str, message: str) -> TurnResult:
        raise ConversationAccessDenied(f"conversation {conversation_id} belongs to another user")

    outcome = run(tiny_suite, config(tmp_path), Engines(refuse), scorer)

    assert all(row.denied and row.failed and row.first_answer_ms is None for row in outcome.rows)
    assert all(row.errors[0].startswith("ConversationAccessDenied: ") for row in outcome.rows)


class _Gathering(FakeEngine):
    """An engine whose first turn waits until ``barrier.parties`` engines are in their first turn at once."""

    def __init__(self, mode: str, barrier: asyncio.Barrier) -> None:
        super().__init__(mode, good_script)
        self.barrier = barrier

    async def astream(
        self, conversation_id: str, message: str, caller: Caller, **_: Any
    ) -> AsyncIterator[TurnEvent]:
        if not self.calls:  # a runner running one unit at a time never gets past this
            await asyncio.wait_for(self.barrier.wait(), timeout=5)
        async for event in super().astream(conversation_id, message, caller):
            yield event


def test_concurrency_runs_that_many_units_at_once_each_worker_with_its_own_engines(
    tmp_path: Path, tiny_suite: list[Scenario], scorer: TurnScorer
) -> None:
    barrier = asyncio.Barrier(2)
    built: list[str] = []

    def factory(mode: str) -> FakeEngine:
        built.append(mode)
        return _Gathering(mode, barrier)

    outcome = run(tiny_suite, config(tmp_path, concurrency=2, repeat=2, modes=["planner"]), factory, scorer)

    assert len(outcome.rows) == 6 and not any(row.failed for row in outcome.rows), [
        row.errors for row in outcome.rows
    ]
    assert built == ["planner", "planner"]  # one engine per worker and mode


def test_concurrent_workers_with_real_engines_give_the_same_records_as_one(
    tmp_path: Path, erp_db_url: str
) -> None:
    """Concurrent workers share the ERP, the SQLite memory store and the model, as `erp-ai bench` does."""
    suite = load_scenarios(tags=["articulo", "follow_up"])
    figures = {}
    for concurrency in (1, 4):
        modes = ["planner", "toolcalling", "toolcalling-full"]
        cfg = config(tmp_path / str(concurrency), modes=modes, concurrency=concurrency, repeat=2)
        model = build_model("offline")
        outcome = run_suite(suite, cfg, db_url=erp_db_url, model=model, show_progress=False)
        assert not any(row.failed for row in outcome.rows), [r.errors for r in outcome.rows if r.failed]
        figures[concurrency] = sorted(
            (r.mode, r.scenario, r.repetition, r.turn, r.passed, r.model_calls, r.input_tokens, r.answer)
            for r in outcome.rows
        )
    assert len(figures[1]) == 2 * 3 * sum(len(s.turns) for s in suite)
    assert figures[4] == figures[1]


def test_real_engines_stream_every_answered_turn_with_simulated_first_answer_times(
    tmp_path: Path, erp_db_url: str
) -> None:
    suite = load_scenarios(tags=["articulo"])
    model = build_model("offline", latency_profile="gpu-8b")

    outcome = run_suite(
        suite, config(tmp_path, latency_profile="gpu-8b"), db_url=erp_db_url, model=model, show_progress=False
    )

    answered = [row for row in outcome.rows if not row.failed]
    assert answered and {row.mode for row in answered} == {"planner", "toolcalling"}
    for row in answered:
        assert row.first_answer_ms is not None and 0 < row.first_answer_ms <= row.total_ms, row
        assert row.simulated_first_answer_ms is not None and row.simulated_model_ms is not None
        assert 0 < row.simulated_first_answer_ms <= row.simulated_model_ms, row  # == for a direct answer
