"""The runner streams every turn (benchmarks/runner.py): time to first answer token on every row.

Each turn is driven through the engine's ``astream`` and read to its ``TurnDone``; the rows copy the engine's
``first_answer_ms`` and ``simulated_first_answer_ms``. Units run as workers of one event loop, ``concurrency``
at a time.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from benchmarks.results import read_results
from benchmarks.runner import RunConfig, run_benchmark, run_suite
from benchmarks.scenario import Scenario, load_scenarios
from benchmarks.scoring.turn import TurnScorer
from shared.errors import ConversationAccessDenied
from shared.events import AnswerDelta, TurnEvent
from shared.llm.factory import build_chat_model
from shared.security import Caller
from shared.turn import TurnResult
from tests.benchmarks.bench_fakes import FakeEngine, good_script


def config(tmp_path: Path, **kwargs: object) -> RunConfig:
    values: dict[str, object] = {"modes": ["planner", "toolcalling"], "out_dir": tmp_path / "out"}
    values.update(kwargs)
    return RunConfig.model_validate(values)


def timed_script(mode: str, conversation_id: str, message: str) -> TurnResult:
    """``good_script`` with the first-answer figures an engine's ``astream`` sets."""
    result = good_script(mode, conversation_id, message)
    return result.model_copy(update={"first_answer_ms": 0.25, "simulated_first_answer_ms": 420.0})


def test_every_turn_is_streamed_and_its_first_answer_times_recorded(
    tmp_path: Path, tiny_suite: list[Scenario], scorer: TurnScorer
) -> None:
    built: list[FakeEngine] = []

    def factory(mode: str) -> FakeEngine:
        built.append(FakeEngine(mode, timed_script))
        return built[-1]

    outcome = run_benchmark(
        tiny_suite, config(tmp_path), engine_factory=factory, scorer=scorer, show_progress=False
    )

    assert sum(engine.streamed for engine in built) == len(outcome.rows) == 6
    assert all(row.first_answer_ms == 0.25 and row.simulated_first_answer_ms == 420.0 for row in outcome.rows)
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

    outcome = run_benchmark(
        tiny_suite, config(tmp_path), engine_factory=factory, scorer=scorer, show_progress=False
    )

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
    outcome = run_benchmark(tiny_suite, cfg, engine_factory=factory, scorer=scorer, show_progress=False)

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
