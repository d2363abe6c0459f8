"""The load test's audit: what the conversation memory holds after a run, against what every turn reported.

:func:`audit_memory` reads the memory tables directly (never through the store under test) and counts, over
the run's conversations (each question distinct within its conversation):

- **lost**: messages of turns reported recorded that the database does not hold (question and answer);
- **duplicated**: a question stored twice, or more answers than questions;
- **out of order**: recorded turns stored in another order than they were sent;
- **half-recorded**: a question without its answer right after it, or an answer without its question;
- **phantom**: turns reported *not* recorded that the database holds all the same;
- **inconsistent conversations**: a state version other than the number of turns stored, a state other than
  the last recorded turn's, or rows of a conversation whose every turn failed.
"""

from __future__ import annotations

import itertools
import json
from collections import Counter
from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict, Field
from sqlalchemy import Engine, select

from shared.memory.tables import Conversation, ConversationState, Message

_MESSAGES_PER_TURN = 2
"""A planner turn stores the user's question and the assistant's answer."""
_BATCH = 200
"""Conversation ids per ``IN (…)`` query."""


class TurnOutcome(BaseModel):
    """What one turn of the load reported to its caller."""

    model_config = ConfigDict(frozen=True)

    conversation_id: str
    index: int
    """The turn's position in its conversation (0 first), also the order it was sent in."""
    question: str
    recorded: bool
    failure: str | None = None
    """The turn's failure kind, if any (``crash`` when the engine raised instead of returning a result)."""
    stale_state: bool = False
    state: dict[str, Any] = Field(default_factory=dict)
    """The conversation state the turn returned (after it, when recorded)."""
    started_s: float = 0.0
    """Seconds from the start of the load."""
    latency_ms: float = 0.0
    model_ms: float = 0.0
    """The part spent in the AI calls (the server requests, queueing included)."""
    harness_ms: float = 0.0
    """The rest, on the ERP side (context, plan checks, operations, recording)."""


class Audit(BaseModel):
    """The audit of a load test run: turn counts from the reports, integrity counts from the database."""

    attempted: int = 0
    recorded: int = 0
    failed: int = 0
    """Turns that ended in a failure kind, recorded ones (``invalid_plan``, ``operation_error``) included."""
    failed_by_kind: dict[str, int] = Field(default_factory=dict)
    messages_expected: int = 0
    messages_found: int = 0
    lost: int = 0
    duplicated: int = 0
    out_of_order: int = 0
    half_recorded: int = 0
    phantom: int = 0
    inconsistent_conversations: int = 0
    stale_turns: int = 0

    @property
    def clean(self) -> bool:
        return not (
            self.lost
            or self.duplicated
            or self.out_of_order
            or self.half_recorded
            or self.phantom
            or self.inconsistent_conversations
        )


def audit_memory(engine: Engine, outcomes: Sequence[TurnOutcome]) -> Audit:
    """Audit the memory database behind ``engine`` for the conversations of ``outcomes``."""
    by_conversation: dict[str, list[TurnOutcome]] = {}
    for outcome in outcomes:
        by_conversation.setdefault(outcome.conversation_id, []).append(outcome)
    messages, states, owners = _read(engine, list(by_conversation))
    failures = Counter(outcome.failure for outcome in outcomes if outcome.failure is not None)
    audit = Audit(
        attempted=len(outcomes),
        recorded=sum(outcome.recorded for outcome in outcomes),
        failed=sum(failures.values()),
        failed_by_kind=dict(sorted(failures.items())),
        stale_turns=sum(outcome.stale_state for outcome in outcomes),
    )
    for conversation_id, turns in by_conversation.items():
        turns.sort(key=lambda outcome: outcome.index)
        _audit_conversation(
            audit,
            turns,
            messages.get(conversation_id, []),
            states.get(conversation_id),
            conversation_id in owners,
        )
    return audit


def _audit_conversation(
    audit: Audit,
    turns: list[TurnOutcome],
    stored: list[tuple[str, str]],
    state: tuple[int, dict[str, Any]] | None,
    has_row: bool,
) -> None:
    """Add one conversation's counts to ``audit``; ``stored`` is its ``(role, content)`` messages by id."""
    reported = [turn for turn in turns if turn.recorded]
    audit.messages_expected += _MESSAGES_PER_TURN * len(reported)
    audit.messages_found += len(stored)
    index_of = {turn.question: turn.index for turn in turns}
    recorded_indexes = {turn.index for turn in reported}

    # Walk the messages in id order: each question must be followed at once by its answer.
    stored_turns: list[int] = []  # send index of each question stored whole, in storage order
    question_count: Counter[int] = Counter()
    answers = 0
    pending: int | None = None  # a question still waiting for its answer
    for role, content in stored:
        if role == "user":
            if pending is not None:
                audit.half_recorded += 1  # the previous question never got its answer
            index = index_of.get(content, -1)
            question_count[index] += 1
            pending = index
        elif role == "assistant":
            answers += 1
            if pending is None:
                audit.half_recorded += 1  # an answer without a question before it
            else:
                stored_turns.append(pending)
                pending = None
    if pending is not None:
        audit.half_recorded += 1

    audit.duplicated += sum(count - 1 for count in question_count.values() if count > 1)
    audit.duplicated += max(0, answers - sum(question_count.values()))
    stored_indexes = set(stored_turns)
    audit.lost += _MESSAGES_PER_TURN * len(recorded_indexes - stored_indexes)
    audit.phantom += len(stored_indexes - recorded_indexes - {-1})
    audit.out_of_order += sum(1 for before, after in itertools.pairwise(stored_turns) if after < before)

    last = reported[-1] if reported else None
    if last is None:
        consistent = state is None and not has_row and not stored
    else:
        consistent = (
            state is not None
            and has_row
            and state[0] == len(stored_turns)
            and _json(state[1]) == _json(last.state)
        )
    audit.inconsistent_conversations += not consistent


def _json(state: dict[str, Any]) -> str:
    """A state as a JSON document (the database returns what JSON can hold)."""
    return json.dumps(state, sort_keys=True, default=str)


def _read(
    engine: Engine, conversation_ids: list[str]
) -> tuple[dict[str, list[tuple[str, str]]], dict[str, tuple[int, dict[str, Any]]], set[str]]:
    """The run's messages by conversation (in id order), state rows and conversation rows."""
    messages: dict[str, list[tuple[str, str]]] = {}
    states: dict[str, tuple[int, dict[str, Any]]] = {}
    owners: set[str] = set()
    with engine.connect() as connection:
        for start in range(0, len(conversation_ids), _BATCH):
            batch = conversation_ids[start : start + _BATCH]
            rows = connection.execute(
                select(Message.conversation_id, Message.role, Message.content)
                .where(Message.conversation_id.in_(batch))
                .order_by(Message.id)
            )
            for conversation_id, role, content in rows:
                messages.setdefault(conversation_id, []).append((role, content))
            for conversation_id, version, state in connection.execute(
                select(
                    ConversationState.conversation_id, ConversationState.version, ConversationState.state
                ).where(ConversationState.conversation_id.in_(batch))
            ):
                states[conversation_id] = (int(version), dict(state or {}))
            owners.update(
                connection.execute(select(Conversation.id).where(Conversation.id.in_(batch))).scalars()
            )
    return messages, states, owners
