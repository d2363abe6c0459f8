"""One unit of a run, turn by turn: each turn streamed through the engine's ``astream`` (every event read to
the last), recorded as a :class:`~benchmarks.results.TurnRow` and scored against the ERP as the scenario's
user sees it. A turn that raises is recorded as failed and the unit goes on."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING

from benchmarks.results import OperationRecord, TurnRow
from benchmarks.scenario import ScenarioTurn
from benchmarks.scoring.turn import TurnScore, TurnScorer
from benchmarks.simulated_timing import SimulatedCalls, simulated_times
from benchmarks.targets import DEFAULT_TARGET
from benchmarks.transcripts import CallTranscript, TranscriptRecorder
from shared.engine import AssistantEngine
from shared.errors import ConfigurationError, ConversationAccessDenied
from shared.events import AnswerDelta, TurnDone
from shared.failures import failure_kind_of
from shared.security import DEMO_CALLER, Caller
from shared.turn import TurnResult

if TYPE_CHECKING:
    from langchain_core.runnables import RunnableConfig

    from benchmarks.run_plan import Unit


EngineFactory = Callable[[str], AssistantEngine]
"""Builds the engine of a mode (called once per target, mode and worker)."""
EngineFactories = EngineFactory | Mapping[str, EngineFactory]
"""One factory per target name, or one factory that serves every target."""
CallerResolver = Callable[[str | None], Caller]
"""The caller a scenario's user name stands for (``None``: the demo default)."""


def demo_callers(name: str | None) -> Caller:
    """The demo default only: scenarios that name a user need the ERP's resolver (see ``run_suite``)."""
    if name is None or name == DEMO_CALLER.user_id:
        return DEMO_CALLER
    raise ConfigurationError(f"Scenario user {name!r}: pass callers= to resolve the ERP's users.")


class EngineCache:
    """One worker's engines, one per target and mode, built on first use (a factory that raised is called
    again on the next turn)."""

    def __init__(self, factory: EngineFactories) -> None:
        self._factory = factory
        self._engines: dict[tuple[str, str], AssistantEngine] = {}

    def get(self, mode: str, target: str = DEFAULT_TARGET) -> AssistantEngine:
        key = (target, mode)
        if key not in self._engines:
            factory = self._factory
            if isinstance(factory, Mapping):
                if target not in factory:
                    raise ConfigurationError(f"No engine factory for target {target!r}.")
                factory = factory[target]
            self._engines[key] = factory(mode)
        return self._engines[key]


async def stream_turn(
    engine: AssistantEngine,
    conversation_id: str,
    message: str,
    caller: Caller,
    *,
    config: RunnableConfig | None = None,
    on_text: Callable[[str], None] | None = None,
) -> TurnResult:
    """Run one turn through ``engine.astream``, reading every event: the result of its ``TurnDone``.

    ``config`` is the turn's LangChain config; ``on_text`` is given each piece of answer text as it arrives.
    Raises what ``astream`` raises (``ConversationAccessDenied`` before the first event), and
    ``RuntimeError`` if the stream ends without a ``TurnDone`` (an engine bug).
    """
    result: TurnResult | None = None
    stream = engine.astream(conversation_id, message, caller=caller, config=config)
    try:
        async for event in stream:
            if isinstance(event, TurnDone):
                result = event.result
            elif isinstance(event, AnswerDelta) and event.text and on_text is not None:
                on_text(event.text)
    finally:
        close = getattr(stream, "aclose", None)  # an async generator: let it clean up however we left it
        if close is not None:
            await close()
    if result is None:
        raise RuntimeError(f"{engine.mode}: the event stream ended without TurnDone")
    return result


async def arun_unit(
    unit: Unit,
    engines: EngineCache,
    scorer: TurnScorer,
    emit: Callable[[TurnRow], None],
    *,
    callers: CallerResolver = demo_callers,
    warmup: bool = False,
    transcripts: Callable[[CallTranscript], None] | None = None,
) -> list[TurnRow]:
    """Run one scenario in a fresh conversation, emitting every turn as soon as it is scored.

    Each turn runs as the scenario's user (or the turn's ``as_user``), resolved by ``callers``, and is scored
    as that user sees the ERP. ``warmup`` marks every row as a warm-up turn (left out of the figures).
    ``transcripts`` is given each model call of each turn (:mod:`benchmarks.transcripts`).
    """
    conversation_id = f"bench-{unit.mode}-{unit.repetition}-{uuid.uuid4().hex[:16]}"
    rows: list[TurnRow] = []
    for index, turn in enumerate(unit.scenario.turns, start=1):
        started = time.perf_counter()
        result: TurnResult | None = None
        error: Exception | None = None
        user = turn.as_user or unit.scenario.user
        caller = DEMO_CALLER  # scored as the demo default if the user cannot even be resolved
        simulated, recorder = SimulatedCalls(), TranscriptRecorder()
        try:
            caller = callers(user)
            engine = engines.get(unit.mode, unit.target)
            result = await stream_turn(
                engine, conversation_id, turn.user, caller, config={"callbacks": [simulated, recorder]}
            )
        except Exception as exc:  # a failing turn is data, not the end of the run
            error = exc
        if transcripts is not None:
            key = {"target": unit.target, "mode": unit.mode, "scenario": unit.scenario.id}
            for call in recorder.transcripts(**key, turn=index, repetition=unit.repetition):
                transcripts(call)
        elapsed_ms = (time.perf_counter() - started) * 1000
        row = _row(unit, index, conversation_id, turn.user, result, error, elapsed_ms)
        if result is not None:
            row.simulated_model_ms, row.simulated_first_answer_ms = simulated_times(result, simulated.calls)
        row.caller = user
        row.warmup = warmup
        row.score = await asyncio.to_thread(score_row, scorer, caller, turn, row)
        if row.denied and turn.expect.denied:  # the refusal the scenario asked for is the right outcome
            row.failed, row.failure = False, None
        rows.append(row)
        emit(row)
    return rows


def score_row(scorer: TurnScorer, caller: Caller, turn: ScenarioTurn, row: TurnRow) -> TurnScore:
    """The row's score as ``caller`` sees the ERP; a scoring bug fails this turn, not the whole run. The one
    scoring step of a run and of a re-scoring (:mod:`benchmarks.rescore`)."""
    executed = [op.model_dump() for op in row.operations if op.error is None]
    refused = [op.model_dump() for op in row.operations if op.error is not None]
    try:
        return scorer.as_caller(caller).score(
            turn.expect,
            answer=row.answer,
            operations=executed,
            refused=refused,
            state=row.state,  # every mode records the state the ERP derives from the turn's operations
            question=turn.user,
            failed=row.failed,
            failure=row.failure,
            denied=row.denied,
        )
    except Exception as exc:
        return TurnScore(passed=False, details=[f"scoring error: {type(exc).__name__}: {exc}"])


_COPIED = (
    "answer", "model_calls", "input_tokens", "output_tokens", "cached_input_tokens", "usage_reported",
    "connection_retries", "recovered_tool_calls", "model_ms", "first_answer_ms", "harness_ms", "plan",
    "state", "errors", "failure", "plan_valid", "ungrounded_figures", "claimed_actions", "calls",
)  # fmt: skip
"""The fields a row takes from the turn's result as they are."""
_OPERATION = {"function", "parameters", "id", "error", "repeat_of"}
"""What a row keeps of each operation (not its result)."""


def _row(
    unit: Unit,
    index: int,
    conversation_id: str,
    user: str,
    result: TurnResult | None,
    error: Exception | None,
    elapsed_ms: float,
) -> TurnRow:
    base = {
        "target": unit.target,
        "mode": unit.mode,
        "scenario": unit.scenario.id,
        "category": unit.scenario.category,
        "tags": unit.scenario.tags,
        "split": unit.scenario.split,
        "turn": index,
        "repetition": unit.repetition,
        "user": user,
        "conversation_id": conversation_id,
        "score": TurnScore(passed=False),
    }
    if result is None:  # the ERP refused the conversation, or the engine raised or could not be built
        return TurnRow(
            **base,
            failure=failure_kind_of(error) if error is not None else "provider",
            failed=True,
            denied=isinstance(error, ConversationAccessDenied),
            errors=[f"{type(error).__name__}: {error}" if error is not None else "unknown error"],
            total_ms=elapsed_ms,
            harness_ms=elapsed_ms,
        )
    return TurnRow(
        **base,
        **{name: getattr(result, name) for name in _COPIED},
        failed=result.failed,
        total_ms=result.total_ms or elapsed_ms,
        operations_ms=sum(op.duration_ms for op in result.operations),
        operations=[OperationRecord(**op.model_dump(include=_OPERATION)) for op in result.operations],
    )
