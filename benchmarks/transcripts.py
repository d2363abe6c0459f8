"""What each model call of a run was sent and what it wrote: ``transcripts.jsonl`` beside ``results.jsonl``.

One line per model call, keyed to its turn (target, mode, scenario, turn, repetition) and numbered in the
order the turn's calls ended: the messages sent (role, text, tool calls, tool results), then the raw output
(text, tool calls, finish reason) or the error. Every text is cut at :data:`MAX_TEXT_CHARS`, and a line says
when it was (``cut``). ``report.html`` shows the calls of each failed turn (:func:`read_transcripts`);
``report`` and ``rescore`` work without the file.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Collection
from pathlib import Path
from typing import Any, Final, Literal
from uuid import UUID

from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, LLMResult
from pydantic import BaseModel, Field

from benchmarks.targets import DEFAULT_TARGET
from shared.bounds import TRUNCATION_MARK

__all__ = [
    "MAX_TEXT_CHARS",
    "TRANSCRIPTS_FILE",
    "CallTranscript",
    "TranscriptRecorder",
    "TurnKey",
    "read_transcripts",
]

TRANSCRIPTS_FILE: Final = "transcripts.jsonl"
MAX_TEXT_CHARS: Final = 20_000
"""Characters kept of one message's text or of one output (a whole prompt of the suite fits)."""


class Said(BaseModel):
    """One message sent to the model, or the model's output."""

    role: str
    text: str = ""
    tool_calls: list[dict[str, Any]] = Field(default_factory=list)
    """``{"name", "args"}`` of each tool call the message holds."""
    finish_reason: str | None = None
    """Why the model stopped (outputs only), as the provider said it."""


class CallTranscript(BaseModel):
    """One model call of one turn."""

    kind: Literal["call"] = "call"
    target: str = DEFAULT_TARGET
    mode: str
    scenario: str
    turn: int
    repetition: int
    call: int
    """The call's position among the turn's calls, from 0, in the order they ended."""
    messages: list[Said]
    output: Said | None = None
    error: str | None = None
    """What the call raised, when it failed (``output`` is then ``None``)."""
    cut: bool = False
    """Some text of this line was cut at :data:`MAX_TEXT_CHARS`."""


class TranscriptRecorder(BaseCallbackHandler):
    """A LangChain callback that keeps each model call of a turn: what it was sent, what it wrote."""

    raise_error = False
    run_inline = True

    def __init__(self) -> None:
        super().__init__()
        self._lock = threading.Lock()
        self._sent: dict[UUID, list[BaseMessage]] = {}
        self.calls: list[tuple[list[Said], Said | None, str | None, bool]] = []
        """``(messages, output, error, cut)`` per call, in the order the calls ended."""

    def on_chat_model_start(
        self, serialized: dict[str, Any], messages: list[list[BaseMessage]], *, run_id: UUID, **kwargs: Any
    ) -> None:
        with self._lock:
            self._sent[run_id] = list(messages[0]) if messages else []

    def on_llm_end(self, response: LLMResult, *, run_id: UUID, **kwargs: Any) -> None:
        generation = response.generations[0][0] if response.generations and response.generations[0] else None
        message = generation.message if isinstance(generation, ChatGeneration) else None
        self._end(run_id, message, None)

    def on_llm_error(self, error: BaseException, *, run_id: UUID, **kwargs: Any) -> None:
        self._end(run_id, None, f"{type(error).__name__}: {error}")

    def transcripts(self, **turn: Any) -> list[CallTranscript]:
        """The calls kept so far as transcript lines of the turn ``turn`` names (target, mode, scenario, turn,
        repetition)."""
        with self._lock:
            calls = list(self.calls)
        return [
            CallTranscript(**turn, call=index, messages=messages, output=output, error=error, cut=cut)
            for index, (messages, output, error, cut) in enumerate(calls)
        ]

    def _end(self, run_id: UUID, output: BaseMessage | None, error: str | None) -> None:
        with self._lock:
            sent = self._sent.pop(run_id, [])
        clipper = _Clipper()
        messages = [clipper.said(message) for message in sent]
        said = clipper.said(output, output=True) if output is not None else None
        with self._lock:
            self.calls.append((messages, said, clipper.text(error) if error else None, clipper.cut))


class _Clipper:
    """Cuts texts at :data:`MAX_TEXT_CHARS`, remembering whether it cut any."""

    def __init__(self) -> None:
        self.cut = False

    def text(self, value: Any) -> str:
        text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
        if len(text) <= MAX_TEXT_CHARS:
            return text
        self.cut = True
        return text[:MAX_TEXT_CHARS] + TRUNCATION_MARK

    def said(self, message: BaseMessage, *, output: bool = False) -> Said:
        calls = message.tool_calls if isinstance(message, AIMessage) else []
        metadata = message.response_metadata or {}
        reason = metadata.get("finish_reason") or metadata.get("done_reason") if output else None
        role = f"tool:{message.name}" if isinstance(message, ToolMessage) else message.type
        return Said(
            role=role,
            text=self.text(message.content),
            tool_calls=[{"name": call["name"], "args": self.text(call["args"])} for call in calls],
            finish_reason=str(reason) if reason is not None else None,
        )


TurnKey = tuple[str, str, str, int, int]
"""A turn as transcripts name it: (target, mode, scenario, turn, repetition)."""
MAX_LINE_CHARS: Final = 2_000_000
"""A transcripts line longer than this is not read (a line of the recorder is far shorter)."""


def read_transcripts(path: Path, wanted: Collection[TurnKey]) -> dict[TurnKey, list[CallTranscript]]:
    """The calls of the turns in ``wanted`` recorded in the transcripts file at ``path``, each turn's in call
    order (``{}`` when the file is missing or unreadable). A line that is not a call record is skipped: the
    file is a debugging aid, and a report never fails on it."""
    calls: dict[TurnKey, list[CallTranscript]] = {}
    if not wanted:
        return calls
    try:
        with path.open(encoding="utf-8", errors="replace") as lines:
            for line in lines:
                if len(line) > MAX_LINE_CHARS or '"kind":"call"' not in line.replace(" ", ""):
                    continue
                try:
                    call = CallTranscript.model_validate_json(line)
                except ValueError:
                    continue
                key = (call.target, call.mode, call.scenario, call.turn, call.repetition)
                if key in wanted:
                    calls.setdefault(key, []).append(call)
    except OSError:
        return {}
    return {key: sorted(found, key=lambda call: call.call) for key, found in calls.items()}
