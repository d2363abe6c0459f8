"""The record of one assistant turn, returned by both modes so the benchmark compares like with like."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from shared.failures import FailureKind
from shared.llm.usage import ModelCall

__all__ = ["ExecutedOperation", "FailureKind", "FirstAnswerCall", "OperationErrorKind", "TurnResult"]

OperationErrorKind = Literal["invalid", "refused", "internal"]
"""Why an operation did not run: the request was ``invalid`` (unknown operation, invalid parameters, an
unresolved ``$ref``, a failed dependency); the ERP ``refused`` it on its data or rules (e.g. no such customer:
a normal answer); or it broke ``internal``-ly (``error interno (ref XXXX)``)."""


class FirstAnswerCall(BaseModel):
    """Where a turn's answer text started: the model call that wrote it and what that call wrote first.

    Lets a reader of the turn place its first answer token on a timeline of the turn's calls (under a
    simulated latency profile, say)."""

    call: int
    """The call's position among the turn's model calls, from 0, in the order they ran."""
    prefix: str = ""
    """What the call wrote before the answer's first character (``{"respuesta":"`` for a JSON answer whose
    first key is the answer, ``""`` for prose)."""


class ExecutedOperation(BaseModel):
    """One sales operation the ERP executed (or refused) during a turn."""

    model_config = ConfigDict(
        validate_by_name=True, validate_by_alias=True, serialize_by_alias=True
    )  # Spanish aliases on the wire

    function: str = Field(alias="funcion")
    """Operation name as the model requested it."""
    parameters: dict[str, Any] = Field(alias="parametros", default_factory=dict)
    """Parameters after `$ref` resolution (planner) or as the tool call sent them (tool calling)."""
    id: str | None = None
    """Plan operation id (planner) or tool call id (tool calling)."""
    result: Any = None
    """JSON-serialisable result when the operation succeeded."""
    error: str | None = None
    """Error message when the operation was refused or failed."""
    error_kind: OperationErrorKind | None = None
    """Set with ``error``: see :data:`OperationErrorKind`."""
    duration_ms: float = 0.0
    """Wall time spent executing the operation in the ERP (0 for a repeat: nothing ran)."""
    repeat_of: str | None = None
    """Set when the turn had already run an identical operation (same name, same parameters once validated
    by the operation's model): this one did not run again and carries that operation's outcome. It names the
    earlier operation: its ``id`` (the tool call id; the plan id), or, for a plan operation without one,
    ``"#N"``, its index ``N`` in the plan and in ``TurnResult.operations`` (from 0). ``None``: it ran."""

    @property
    def ok(self) -> bool:
        return self.error is None


class TurnResult(BaseModel):
    """Everything one turn produced and cost."""

    mode: str
    """Which architecture ran the turn (``planner``, ``toolcalling``, ``toolcalling-full``)."""
    conversation_id: str
    question: str
    answer: str
    """The text shown to the user."""
    plan: dict[str, Any] | None = None
    """The validated plan (planner mode) as JSON; ``None`` for tool calling."""
    operations: list[ExecutedOperation] = Field(default_factory=list)
    plan_valid: bool | None = None
    """Whether the model's request for operations was valid as written. Planner: call 1's output parsed as
    a plan and passed validation (known operations, valid parameters, references, limits); an empty plan
    (small talk) is valid. Tool calling: every tool call of the turn named a known operation with valid
    arguments (a turn with no tool call is valid). A permitted-but-refused operation (the caller's role) does
    not make a request invalid. ``None`` when no model output was read (the first call failed)."""
    memories: list[str] = Field(default_factory=list)
    """Memory items stored by this turn."""
    state: dict[str, Any] = Field(default_factory=dict)
    """Conversation state after this turn."""
    model_calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cached_input_tokens: int = 0
    """Input tokens the provider served from its prompt (prefix) cache; part of ``input_tokens``."""
    usage_reported: bool = True
    """``False`` when a model call of the turn ended without its provider reporting token usage: the token
    counts then miss that call (unknown, not 0) and reports say "not reported"."""
    connection_retries: int = 0
    """Requests resent once because their connection failed before the server answered a byte
    (:mod:`shared.llm.connection_retry`); not model calls of their own."""
    recovered_tool_calls: int = 0
    """Tool calling: tool calls the model wrote as text (a fenced or bare ``{"name", "arguments"}`` object, a
    ``<tool_call>`` tag) that the engine recovered into real tool calls; always 0 in planner mode."""
    model_ms: float = 0.0
    """Measured wall time spent inside model calls."""
    calls: list[ModelCall] = Field(default_factory=list)
    """Each model call of the turn, in the order it ended, with its role, time, time to first token and
    tokens (empty when the calls were measured without the detail, e.g. by an older AI server)."""
    first_answer_ms: float | None = None
    """Measured time from the turn's start to the first piece of the kept answer (``answer``) reaching the
    caller; set by ``astream`` (``None`` for ``ask``/``aask``, where the whole answer arrives at
    ``total_ms``). Text streamed and then replaced (a preamble, a refused or failed answer) does not count:
    when the caller never saw ``answer`` streamed, it is ``total_ms``."""
    first_answer_call: FirstAnswerCall | None = None
    """Which model call wrote the first answer text, and what it wrote before it; ``None`` when no model
    wrote an answer (a refused input, a failed call, an answer the ERP rendered itself)."""
    harness_ms: float = 0.0
    """Everything except measured model time: context building, validation, execution, storage."""
    total_ms: float = 0.0
    ungrounded_figures: list[str] = Field(default_factory=list)
    """Figures of the model's answer that no ERP source supports (:mod:`shared.grounding`), as written: with
    the ``refuse`` policy the turn failed as ``ungrounded`` and the user read the ERP's rendering instead;
    with ``flag`` the answer was shown and recorded with them (its memory items with them dropped)."""
    claimed_actions: list[str] = Field(default_factory=list)
    """Phrases of the model's answer that claim the ERP did something no executed operation did
    (:mod:`shared.actions`: sent, changed, deleted, registered, executed); refused or flagged as ungrounded
    figures are."""
    errors: list[str] = Field(default_factory=list)
    """Non-fatal problems: invalid plans, refused operations, model output errors, provider errors."""
    failure: FailureKind | None = None
    """Set when the turn could not be answered normally (see :mod:`shared.failures`)."""
    stale_state: bool = False
    """The turn was planned on conversation state that another turn changed before this one was recorded;
    it was recorded anyway, its state updates merged per key over the newer state (see
    :mod:`shared.memory.store`)."""
    recorded: bool = True
    """Whether the turn was stored in the conversation memory (see the recording policy in
    :mod:`shared.failures`)."""

    @property
    def failed(self) -> bool:
        """Whether the turn ended in any failure kind."""
        return self.failure is not None
