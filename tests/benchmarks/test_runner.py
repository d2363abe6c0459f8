"""The run: fresh conversations, streamed records, failures, resume, concurrency (benchmarks/runner.py).

Each turn is driven through the engine's ``astream`` and read to its ``TurnDone``; the rows copy the engine's
``first_answer_ms`` and ``simulated_first_answer_ms``. Units run as workers of one event loop, ``concurrency``
at a time."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest

from benchmarks.modes import produces_state
from benchmarks.results import read_results
from benchmarks.runner import RunConfig, RunOutcome, run_benchmark, run_suite
from benchmarks.scenario import Scenario, load_scenarios
from benchmarks.scoring.turn import TurnScorer
from shared.errors import ConfigurationError, ConversationAccessDenied, ProviderError
from shared.events import AnswerDelta, TurnEvent
from shared.llm.factory import build_chat_model
from shared.security import Caller
from shared.turn import TurnResult
from tests.benchmarks.bench_fakes import Engines, FakeEngine, good_script


def config(tmp_path: Path, **kwargs: object) -> RunConfig:
    values: dict[str, object] = {"modes": ["planner", "toolcalling"], "out_dir": tmp_path / "out"}
    values.update(kwargs)
    return RunConfig.model_validate(values)


def run(
    suite: list[Scenario], cfg: RunConfig, factory: Callable[[str], FakeEngine], scorer: TurnScorer
) -> RunOutcome:
    return run_benchmark(suite, cfg, engine_factory=factory, scorer=scorer, show_progress=False)


def test_every_turn_of_every_mode_is_scored_and_streamed(
    tmp_path: Path, tiny_suite: list[Scenario], scorer: TurnScorer
) -> None:
    engines = Engines()
    outcome = run(tiny_suite, config(tmp_path), engines, scorer)
    assert len(outcome.rows) == 6 and all(row.passed for row in outcome.rows), [
        row.score.details for row in outcome.rows
    ]
    lines = [json.loads(line) for line in outcome.results_path.read_text().splitlines()]
    assert lines[0]["kind"] == "run" and lines[0]["modes"] == ["planner", "toolcalling"]
    assert lines[0]["scenarios"] == 2 and lines[0]["turns"] == 3
    assert [line["kind"] for line in lines[1:]] == ["turn"] * 6
    assert {"model_calls", "input_tokens", "output_tokens", "model_ms", "harness_ms", "score"} <= set(
        lines[1]
    )


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


def test_an_engine_that_cannot_be_built_fails_its_turns_only(
    tmp_path: Path, tiny_suite: list[Scenario], scorer: TurnScorer
) -> None:
    def factory(mode: str) -> FakeEngine:
        if mode == "toolcalling":
            raise ConfigurationError("toolcalling is not installed")
        return FakeEngine(mode, good_script)

    outcome = run(tiny_suite, config(tmp_path), factory, scorer)
    assert all(row.failed for row in outcome.rows if row.mode == "toolcalling")
    assert all(row.passed for row in outcome.rows if row.mode == "planner")


def test_resume_skips_finished_units_and_reruns_unfinished_ones(
    tmp_path: Path, tiny_suite: list[Scenario], scorer: TurnScorer
) -> None:
    first = run(tiny_suite, config(tmp_path), Engines(), scorer)
    lines = first.results_path.read_text().splitlines()
    # Interrupt the run inside the last unit (toolcalling · saludo): its second turn was never written.
    assert json.loads(lines[-1])["scenario"] == "saludo" and json.loads(lines[-1])["turn"] == 2
    first.results_path.write_text("\n".join(lines[:-1]) + "\n")

    engines = Engines()
    second = run(tiny_suite, config(tmp_path, resume=True), engines, scorer)
    assert (second.units_run, second.units_skipped) == (1, 3)
    assert [(e.mode, m) for e in engines.built for _, m in e.calls] == [
        ("toolcalling", "Hola"),
        ("toolcalling", "¿Cuánto vendimos en 2025?"),
    ]
    rows = read_results(second.results_path).rows
    assert sorted((r.mode, r.scenario, r.turn) for r in rows) == sorted(
        (m, s.id, i + 1) for m in ("planner", "toolcalling") for s in tiny_suite for i in range(len(s.turns))
    )


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


@pytest.mark.parametrize("settings", [{"repeat": 0}, {"modes": []}])
def test_invalid_settings_are_refused(tmp_path: Path, settings: dict[str, object]) -> None:
    with pytest.raises(ValueError):
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


def test_resume_drops_rows_that_are_not_part_of_this_run(
    tmp_path: Path, tiny_suite: list[Scenario], scorer: TurnScorer
) -> None:
    run(tiny_suite, config(tmp_path, repeat=2), Engines(), scorer)
    engines = Engines()
    again = run(tiny_suite, config(tmp_path, modes=["planner"], resume=True), engines, scorer)
    assert engines.calls() == []
    assert {(r.mode, r.repetition) for r in again.rows} == {("planner", 1)}
    assert len(again.rows) == 3


def test_resume_refuses_results_of_another_provider(
    tmp_path: Path, tiny_suite: list[Scenario], scorer: TurnScorer
) -> None:
    run(tiny_suite, config(tmp_path), Engines(), scorer)
    with pytest.raises(ConfigurationError, match="provider 'offline' → 'ollama'"):
        run(tiny_suite, config(tmp_path, provider="ollama", resume=True), Engines(), scorer)


def test_a_scoring_error_fails_the_turn_and_the_run_goes_on(
    tmp_path: Path, tiny_suite: list[Scenario], scorer: TurnScorer
) -> None:
    class BrokenScorer:
        def as_caller(self, _caller: object) -> BrokenScorer:
            return self

        def score(self, *args: object, **kwargs: object) -> object:
            raise RuntimeError("scorer bug")

    outcome = run_benchmark(
        tiny_suite,
        config(tmp_path),
        engine_factory=Engines(),
        scorer=BrokenScorer(),  # type: ignore[arg-type]
        show_progress=False,
    )
    assert len(outcome.rows) == 6
    assert all(r.score.details == ["scoring error: RuntimeError: scorer bug"] for r in outcome.rows)


def test_state_is_checked_only_in_modes_that_produce_it(tmp_path: Path, scorer: TurnScorer) -> None:
    suite_path = tmp_path / "state.yaml"
    suite_path.write_text(
        "scenarios:\n  - id: s\n    category: x\n    turns:\n      - user: hola\n"
        "        expect: {state: {cliente_actual: Empresa ABC}}\n",
        encoding="utf-8",
    )
    outcome = run(load_scenarios([suite_path]), config(tmp_path), Engines(), scorer)
    by_mode = {row.mode: row.score for row in outcome.rows}
    for mode, score in by_mode.items():  # the fake returns no state: a mode that should have some fails
        if produces_state(mode):
            assert score.state is False and not score.passed, mode
        else:
            assert score.state is None and score.passed, mode
    assert produces_state("planner")


def test_concurrent_workers_with_real_engines_give_the_same_records_as_one(
    tmp_path: Path, erp_db_url: str
) -> None:
    """Concurrent workers share the ERP, the SQLite memory store and the model, as `erp-ai bench` does."""
    suite = load_scenarios(tags=["articulo", "follow_up"])
    figures = {}
    for concurrency in (1, 4):
        cfg = config(
            tmp_path / str(concurrency),
            modes=["planner", "toolcalling", "toolcalling-full"],
            concurrency=concurrency,
            repeat=2,
        )
        outcome = run_suite(
            suite, cfg, db_url=erp_db_url, model=build_chat_model("offline"), show_progress=False
        )
        assert not any(row.failed for row in outcome.rows), [r.errors for r in outcome.rows if r.failed]
        figures[concurrency] = sorted(
            (r.mode, r.scenario, r.repetition, r.turn, r.passed, r.model_calls, r.input_tokens, r.answer)
            for r in outcome.rows
        )
    assert len(figures[1]) == 2 * 3 * sum(len(s.turns) for s in suite)
    assert figures[4] == figures[1]


def timed_script(mode: str, conversation_id: str, message: str) -> TurnResult:
    """``good_script`` with the first-answer time an engine's ``astream`` sets."""
    result = good_script(mode, conversation_id, message)
    return result.model_copy(update={"first_answer_ms": 0.25})


def test_every_turn_is_streamed_and_its_first_answer_times_recorded(
    tmp_path: Path, tiny_suite: list[Scenario], scorer: TurnScorer
) -> None:
    built: list[FakeEngine] = []

    def factory(mode: str) -> FakeEngine:
        built.append(FakeEngine(mode, timed_script))
        return built[-1]

    outcome = run(tiny_suite, config(tmp_path), factory, scorer)

    assert sum(engine.streamed for engine in built) == len(outcome.rows) == 6
    assert all(row.first_answer_ms == 0.25 for row in outcome.rows)
    assert all(row.simulated_first_answer_ms is None for row in outcome.rows)  # no model reported timing
    written = read_results(outcome.results_path).rows
    assert [row.first_answer_ms for row in written] == [0.25] * 6


class _Unfinished(FakeEngine):
    """An engine whose stream stops before ``TurnDone`` (a bug the run must survive)."""

    async def astream(
        self, conversation_id: str, message: str, caller: Caller, **_: Any
    ) -> AsyncIterator[TurnEvent]:
        yield AnswerDelta(text="a medias")


def test_a_stream_that_ends_without_its_result_fails_that_turn_only(
    tmp_path: Path, tiny_suite: list[Scenario], scorer: TurnScorer
) -> None:
    def factory(mode: str) -> FakeEngine:
        return _Unfinished(mode, good_script) if mode == "toolcalling" else FakeEngine(mode, good_script)

    outcome = run(tiny_suite, config(tmp_path), factory, scorer)

    broken = [row for row in outcome.rows if row.mode == "toolcalling"]
    assert broken and all(row.failed and not row.passed for row in broken)
    assert broken[0].errors == ["RuntimeError: toolcalling: the event stream ended without TurnDone"]
    assert all(row.passed for row in outcome.rows if row.mode == "planner")


def test_a_denied_conversation_raised_by_astream_is_recorded_as_denied(
    tmp_path: Path, tiny_suite: list[Scenario], scorer: TurnScorer
) -> None:
    def refuse(mode: str, conversation_id: str, message: str) -> TurnResult:
        raise ConversationAccessDenied(f"conversation {conversation_id} belongs to another user")

    outcome = run_benchmark(
        tiny_suite,
        config(tmp_path),
        engine_factory=lambda m: FakeEngine(m, refuse),
        scorer=scorer,
        show_progress=False,
    )

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

    cfg = config(tmp_path, concurrency=2, repeat=2, modes=["planner"])
    outcome = run(tiny_suite, cfg, factory, scorer)

    assert len(outcome.rows) == 6 and not any(row.failed for row in outcome.rows), [
        row.errors for row in outcome.rows
    ]
    assert built == ["planner", "planner"]  # one engine per worker and mode


def test_real_engines_stream_every_answered_turn_with_simulated_first_answer_times(
    tmp_path: Path, erp_db_url: str
) -> None:
    suite = load_scenarios(tags=["articulo"])
    cfg = config(tmp_path, latency_profile="gpu-8b")
    model = build_chat_model("offline", latency_profile="gpu-8b")

    outcome = run_suite(suite, cfg, db_url=erp_db_url, model=model, show_progress=False)

    answered = [row for row in outcome.rows if not row.failed]
    assert answered and {row.mode for row in answered} == {"planner", "toolcalling"}
    for row in answered:
        assert row.first_answer_ms is not None and 0 < row.first_answer_ms <= row.total_ms, row
        assert row.simulated_first_answer_ms is not None and row.simulated_model_ms is not None
        assert 0 < row.simulated_first_answer_ms <= row.simulated_model_ms, row  # == for a direct answer
