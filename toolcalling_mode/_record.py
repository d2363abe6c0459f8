"""The turn's record: what the store keeps of a finished turn (the recording policy of
:mod:`shared.failures`), and the :class:`~shared.turn.TurnResult` the caller gets."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from shared.errors import ConversationAccessDenied, StorageError
from shared.events import AnswerDelta
from shared.failures import NOT_RECORDED_NOTE, is_recorded, user_message
from shared.llm.usage import UsageTracker
from shared.memory.store import MessageIn, TurnRecord, VersionedState
from shared.security import Caller, require_caller
from shared.state import turn_state
from shared.turn import FailureKind, TurnResult
from shared.turn_steps import AnswerClock, text_of
from toolcalling_mode._outcome import Outcome
from toolcalling_mode._run import AgentRun
from toolcalling_mode._streaming import AnswerSteps
from toolcalling_mode.history import step_rows

if TYPE_CHECKING:
    from shared.memory.store import MemoryStore


@dataclass
class Turn:
    """What a turn knows from its first line: who asks what, when it started, and its usage tracker."""

    conversation_id: str
    message: str
    caller: Caller
    clock: AnswerClock
    """When the turn started, and when a reader (``astream``) saw its first answer text."""
    tracker: UsageTracker = field(default_factory=UsageTracker)

    def __post_init__(self) -> None:
        self.caller = require_caller(self.caller)  # before anything reads it (trace inputs, access check)

    @property
    def trace_inputs(self) -> dict[str, Any]:
        """The inputs of the turn's parent run."""
        return {
            "conversation_id": text_of(self.conversation_id),
            "message": text_of(self.message),
            "user_id": self.caller.user_id,
        }

    def deltas(self, text: str) -> list[AnswerDelta]:
        """``text`` as an ``AnswerDelta`` (none when empty); the first one a reader sees stamps the clock."""
        return [self.clock.delta(text)] if text else []


@dataclass
class Kept:
    """What became of a finished turn: the answer shown, its failure kind, and what the store kept."""

    answer: str
    failure: FailureKind | None
    state: dict[str, Any]
    """The conversation's state after the turn, stored or unchanged."""
    memories: list[str] = field(default_factory=list)
    recorded: bool = False
    answered: bool = False
    """The model wrote the turn's answer (recorded, or lost only by storage)."""
    stale_state: bool = False


def record_turn(
    store: MemoryStore,
    turn: Turn,
    stored_state: VersionedState,
    run: AgentRun,
    end: Outcome,
    errors: list[str],
    answer_tools: frozenset[str],
) -> Kept:
    """Record the turn when the recording policy says so (blocking: async drivers call it in a thread);
    appends to ``errors`` what kept it from the store."""
    if not is_recorded(end.failure):
        return Kept(end.answer, end.failure, dict(stored_state))
    rows = [
        MessageIn(role="user", content=turn.message, metadata={}),
        *step_rows(run.messages, answer_tools),
        MessageIn(role="assistant", content=end.answer, metadata=end.metadata),
    ]
    # The same state update the planner records: ERP-derived keys from the operations that ran, over the
    # structured answer's estado (empty for a prose answer).
    update = turn_state(stored_state, run.operations, end.state)
    record = TurnRecord(messages=rows, memories=end.memories, state=update)
    try:
        state = store.record_turn(
            turn.conversation_id, record, user_id=turn.caller.user_id, expected_version=stored_state.version
        )
    except ConversationAccessDenied as exc:  # another user created this id while the model worked
        errors.append(str(exc))
        return Kept(user_message("input", exc), "input", dict(stored_state))
    except StorageError as exc:  # the answer is good; only remembering it failed
        errors.append(f"Turn not recorded: {exc}")
        answer = f"{end.answer}\n\n{NOT_RECORDED_NOTE}"
        return Kept(answer, "storage", dict(stored_state), answered=True)
    memories = [item.contenido for item in end.memories]
    return Kept(
        end.answer,
        end.failure,
        dict(state),
        memories=memories,
        recorded=True,
        answered=True,
        stale_state=state.stale,
    )


def turn_result(
    mode: str, turn: Turn, run: AgentRun, kept: Kept, errors: list[str], steps: AnswerSteps | None
) -> TurnResult:
    """The turn's record. ``steps``: the answer decoders after the run (fed live or replayed); only a turn
    whose answer the model wrote has a ``first_answer_call``, whichever driver ran it (text that a failed
    stream showed before breaking does not count, as ``ask`` never sees it)."""
    tracker = turn.tracker
    first = steps.first if kept.answered and steps is not None else None
    total_ms = turn.clock.elapsed_ms()
    return TurnResult(
        mode=mode,
        conversation_id=text_of(turn.conversation_id),
        question=text_of(turn.message),
        answer=kept.answer,
        operations=run.operations,
        plan_valid=run.plan_valid,
        memories=kept.memories,
        state=kept.state,
        model_calls=tracker.calls,
        input_tokens=tracker.input_tokens,
        output_tokens=tracker.output_tokens,
        cached_input_tokens=tracker.cached_input_tokens,
        usage_reported=tracker.unreported_calls == 0,
        connection_retries=tracker.connection_retries,
        recovered_tool_calls=run.recovered_tool_calls,
        model_ms=tracker.model_ms,
        first_answer_ms=turn.clock.first_answer_ms,
        first_answer_call=first,
        harness_ms=max(0.0, total_ms - tracker.model_ms),
        total_ms=total_ms,
        errors=errors,
        failure=kept.failure,
        recorded=kept.recorded,
        stale_state=kept.stale_state,
    )
