"""The records a benchmark run writes to ``results.jsonl``, and reading them back.

One JSON object per line: a ``run`` line with the run's settings (written first; the last one wins), then one
``turn`` line per scored turn, appended as turns finish (``--resume`` rewrites the file with the new ``run``
line and the turns kept). ``erp-ai report`` re-renders every report from this file alone. A file cut short is
read up to its last whole line and says so (:attr:`RunResults.read_warnings`), so a report never presents
part of a run as the whole. Files that predate a field still load: rows without ``target`` belong to the one
implicit target, and fields added later read as ``None`` (not recorded).
"""

from __future__ import annotations

import json
import threading
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, Any, Final, Literal

from pydantic import BaseModel, Field, ValidationError, field_validator

from benchmarks.provenance import Provenance
from benchmarks.scoring.turn import TurnScore
from benchmarks.stand_ins.latency import LATENCY_PROFILES
from benchmarks.targets import DEFAULT_TARGET, BenchTarget, implicit_target
from planner_mode.plan_schema import PlanSchemaStyle
from shared.failures import FailureKind
from shared.inputs import CONTROL_CHARACTERS
from shared.llm.usage import ModelCall

RESULTS_FILE = "results.jsonl"


class OperationRecord(BaseModel):
    """One operation a turn asked the ERP to run."""

    funcion: str
    parametros: dict[str, Any] = Field(default_factory=dict)
    id: str | None = None
    error: str | None = None
    """Why the ERP refused or failed it; ``None`` when it ran."""
    repeat_of: str | None = Field(default=None, exclude_if=lambda value: value is None)
    """The earlier identical operation of the turn whose result this repeat got (it did not run again)."""


MAX_COUNT: Final = 10**12
"""The largest token or call count a results file may hold (far beyond any run)."""
MAX_MS: Final = 10**9
"""The largest time in milliseconds a results file may hold (about 11 days)."""

_MAX_LABEL_CHARS: Final = 500
"""Characters of a run line's labels (provider, model, base URL, host, start time): one line each."""

Count = Annotated[int, Field(ge=0, le=MAX_COUNT)]
"""A count a run records: a whole number from 0 to :data:`MAX_COUNT`."""
Millis = Annotated[float, Field(ge=0, le=MAX_MS, allow_inf_nan=False)]
"""A time a run records: finite milliseconds from 0 to :data:`MAX_MS`."""


class RunMeta(BaseModel):
    """The settings of a run (``None``: not recorded, in files that predate the setting)."""

    kind: Literal["run"] = "run"
    started_at: str = Field(default_factory=lambda: datetime.now(UTC).isoformat(timespec="seconds"))
    provider: str = "offline"
    model: str | None = None
    base_url: str | None = None
    latency_profile: str | None = None
    """The latency profile model time was simulated under (one of ``LATENCY_PROFILES``), or ``None``."""
    structured: bool = False
    """Whether tool calling ended with a structured answer (``--structured``)."""
    plan_schema: PlanSchemaStyle = "union"
    """The planner's call-1 constraint (``--plan-schema``)."""
    tool_call_recovery: bool = True
    """Whether tool calling recovered tool calls written as text."""
    max_tokens: Annotated[int, Field(ge=1, le=MAX_COUNT)] | None = None
    """Output cap of every model call."""
    timeout: Annotated[float, Field(gt=0, le=MAX_MS, allow_inf_nan=False)] | None = None
    """Timeout of every model request in seconds."""
    modes: list[str] = Field(default_factory=list)
    repeat: Annotated[int, Field(ge=1, le=10_000)] = 1
    concurrency: Annotated[int, Field(ge=1, le=10_000)] = 1
    scenarios: Annotated[int, Field(ge=0, le=1_000_000)] = 0
    turns: Annotated[int, Field(ge=0, le=1_000_000)] = 0
    """Scenario turns per mode and repetition."""
    scenario_paths: list[str] = Field(default_factory=list)
    tags: list[str] = Field(default_factory=list)
    host: str | None = None
    """The machine the run measured on (:func:`describe_host`)."""
    provenance: Provenance | None = None
    """Code, packages, prompt and tool-schema hashes and model identity (:mod:`benchmarks.provenance`)."""
    warmup: Annotated[int, Field(ge=0, le=10_000)] = 0
    """Warm-up turns run before the measured ones, left out of every figure."""
    targets: list[BenchTarget] = Field(default_factory=list)
    """The models of the matrix, in order; empty for one implicit target described by ``provider``,
    ``model`` and ``base_url`` (which, with targets, repeat the first target's)."""
    prompt_cache: bool | None = None
    """Whether the offline model modelled a prefix cache."""
    scorer_version: str | None = None
    """The scorer that scored the rows (:func:`benchmarks.scoring.version.scorer_version`), set by ``bench``
    and by ``rescore``; ``None`` in files that predate it."""

    @field_validator("latency_profile")
    @classmethod
    def _known_profile(cls, value: str | None) -> str | None:
        if value is not None and value not in LATENCY_PROFILES:
            raise ValueError(f"unknown latency profile {value!r}; known: {', '.join(LATENCY_PROFILES)}")
        return value

    @field_validator("provider", "model", "base_url", "host", "started_at")
    @classmethod
    def _one_line(cls, value: str | None) -> str | None:
        if value is not None and ("\n" in value or len(value) > _MAX_LABEL_CHARS):
            raise ValueError(f"must be one line of at most {_MAX_LABEL_CHARS} characters")
        return value

    @property
    def run_targets(self) -> list[BenchTarget]:
        """The run's targets: ``targets``, or the one implicit target (:data:`DEFAULT_TARGET`)."""
        return list(self.targets) or [implicit_target(self.provider, self.model, self.base_url)]

    @property
    def matrix(self) -> bool:
        """Whether the run measured more than one target."""
        return len(self.targets) > 1

    @property
    def offline(self) -> bool:
        """Whether the deterministic offline stand-in produced every figure: in process, or behind one of
        the project's emulators (the model identity the server reported says so)."""
        models = dict(self.provenance.models) if self.provenance is not None else {}
        if self.provenance is not None and self.provenance.model is not None and not self.targets:
            models.setdefault(DEFAULT_TARGET, self.provenance.model)  # one implicit target: ``model`` only
        return all(
            target.offline or (target.name in models and models[target.name].stand_in)
            for target in self.run_targets
        )

    @property
    def any_offline(self) -> bool:
        """Whether some target is the offline stand-in (so the prefix-cache switch applied to it)."""
        return any(target.offline for target in self.run_targets)


class TurnRow(BaseModel):
    """Everything recorded about one turn of one scenario, in one target, mode and repetition."""

    kind: Literal["turn"] = "turn"
    target: str = DEFAULT_TARGET
    mode: str
    scenario: str
    category: str
    tags: list[str] = Field(default_factory=list)
    split: Literal["suite", "heldout"] = "suite"
    """The scenario's set: the tuning ``suite`` or the ``heldout`` questions nothing was tuned on."""
    turn: Annotated[int, Field(ge=1, le=1_000_000)]
    """1-based turn index within the scenario."""
    repetition: Annotated[int, Field(ge=0, le=10_000)]
    """1-based repetition index (0: a warm-up turn)."""
    user: str
    answer: str = ""
    conversation_id: str = ""
    model_calls: Count = 0
    input_tokens: Count = 0
    output_tokens: Count = 0
    cached_input_tokens: Count | None = None
    """Input tokens served from the provider's prompt cache (modelled by the offline model)."""
    usage_reported: bool = True
    """``False`` when a model call ended without token usage: the token counts are unknown, not 0."""
    connection_retries: Count = 0
    """Requests resent once because their connection failed before the server answered."""
    recovered_tool_calls: Count = 0
    """Tool calls the model wrote as text that tool-calling mode recovered into real tool calls."""
    ungrounded_figures: list[str] = Field(default_factory=list)
    """Figures of the answer no ERP source supported (``TurnResult.ungrounded_figures``)."""
    claimed_actions: list[str] = Field(default_factory=list)
    """Phrases of the answer claiming an action the ERP did not do (``TurnResult.claimed_actions``)."""
    model_ms: Millis = 0.0
    """Measured time inside model calls."""
    simulated_model_ms: Millis | None = None
    """Model time under the latency profile, when one is set."""
    first_answer_ms: Millis | None = None
    """Measured time from the turn's start to the first answer text reaching the reader (``None``: none
    arrived)."""
    simulated_first_answer_ms: Millis | None = None
    """Model time to the first answer token under the latency profile (:mod:`benchmarks.simulated_timing`);
    harness time is not included, unlike :attr:`simulated_latency_ms`."""
    harness_ms: Millis = 0.0
    """Total wall time minus measured model time."""
    total_ms: Millis = 0.0
    calls: list[ModelCall] = Field(default_factory=list)
    """Each model call of the turn (``TurnResult.calls``): role, time, time to first token, tokens; empty in
    rows recorded before calls were kept."""
    operations_ms: Millis = 0.0
    """Time the ERP spent running the turn's operations (part of :attr:`harness_ms`)."""
    operations: list[OperationRecord] = Field(default_factory=list)
    plan: dict[str, Any] | None = None
    state: dict[str, Any] = Field(default_factory=dict)
    errors: list[str] = Field(default_factory=list)
    failure: FailureKind | None = None
    """The turn's failure kind (``shared.failures``); ``None`` when it was answered normally."""
    denied: bool = False
    """The ERP refused the conversation (another user's; no model was called). When the scenario expected
    that refusal, the turn is not counted as failed."""
    caller: str | None = None
    """The ERP user the turn ran as (``None``: the demo default)."""
    failed: bool = False
    """Whether the turn ended in any failure kind; a failed turn never passes."""
    score: TurnScore
    warmup: bool = False
    """A warm-up turn: recorded, left out of every figure."""
    plan_valid: bool | None = None
    """Whether the model's request for operations was valid as written (``TurnResult.plan_valid``)."""

    @property
    def passed(self) -> bool:
        return self.score.passed

    @property
    def unit(self) -> tuple[str, str, str, int]:
        """The (target, mode, scenario, repetition) unit this turn belongs to."""
        return (self.target, self.mode, self.scenario, self.repetition)

    @property
    def latency_ms(self) -> float:
        return self.model_ms + self.harness_ms

    @property
    def simulated_latency_ms(self) -> float | None:
        """Simulated model time plus harness time, when a latency profile was set."""
        if self.simulated_model_ms is None:
            return None
        return self.simulated_model_ms + self.harness_ms


class RunResults(BaseModel):
    """A results file read back (or a run's records in memory), and what reading it left out."""

    meta: RunMeta
    rows: list[TurnRow]
    meta_recorded: bool = True
    """Whether the file had a ``run`` line; without one, :attr:`meta` only lists the rows' modes."""
    incomplete_last_line: bool = False
    """The file ends in a line cut short (a run interrupted while writing, a truncated copy): the rows before
    it were read, that one was not."""
    skipped_lines: list[int] = Field(default_factory=list)
    """Numbers of other lines that were not JSON records and were skipped."""

    @property
    def scored_rows(self) -> list[TurnRow]:
        """The rows every figure is computed from: all but warm-up turns."""
        return [row for row in self.rows if not row.warmup]

    @property
    def empty(self) -> bool:
        """Whether there is nothing to report: no ``run`` line and no turn."""
        return not self.meta_recorded and not self.rows

    @property
    def planned_turns(self) -> int | None:
        """Scored turns the run's settings call for (turns x repetitions x modes x targets); ``None`` when the
        ``run`` line does not say (no ``run`` line, or one that predates the counts)."""
        meta = self.meta
        if not self.meta_recorded or meta.turns <= 0 or not meta.modes:
            return None
        return meta.turns * meta.repeat * len(meta.modes) * len(meta.run_targets)

    @property
    def read_warnings(self) -> list[str]:
        """What a report must say before its figures: a cut last line, skipped lines, and fewer turns read
        than the run's settings plan (then the header's planned counts and the counts read differ, and both
        are stated). Empty for a complete file."""
        warnings: list[str] = []
        if self.incomplete_last_line:
            warnings.append(f"results file ends in an incomplete line: {len(self.rows)} rows read")
        if self.skipped_lines:
            numbers = ", ".join(map(str, self.skipped_lines[:10]))
            more = f" and {len(self.skipped_lines) - 10} more" if len(self.skipped_lines) > 10 else ""
            warnings.append(
                f"lines {numbers}{more} of the results file are not JSON records and were skipped"
            )
        planned, scored = self.planned_turns, self.scored_rows
        if planned is not None and len(scored) != planned:
            matrix = self.meta.matrix
            per_group = Counter(f"{row.target} · {row.mode}" if matrix else row.mode for row in scored)
            read = ", ".join(f"{group} {count}" for group, count in per_group.items()) or "none"
            per = "target and mode" if matrix else "mode"
            warnings.append(
                f"the header gives the run's plan, {planned} scored turns ({self.meta.turns} per {per} and "
                f"repetition); the file holds {len(scored)} of them ({read}), and every figure is computed "
                "from those"
            )
        return warnings


class ResultsWriter:
    """Appends records to a results file (or any JSON-lines file of records), one line each, flushed at once
    (thread-safe)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()
        path.parent.mkdir(parents=True, exist_ok=True)

    def write(self, record: BaseModel) -> None:
        line = record.model_dump_json() + "\n"
        with self._lock, self.path.open("a", encoding="utf-8") as handle:
            handle.write(line)
            handle.flush()

    def rewrite(self, records: list[RunMeta | TurnRow]) -> None:
        """Replace the file's content with ``records`` (used by ``--resume`` to drop unfinished units)."""
        with self._lock:
            tmp = self.path.with_suffix(".jsonl.tmp")
            tmp.write_text("".join(r.model_dump_json() + "\n" for r in records), encoding="utf-8")
            tmp.replace(self.path)


def read_results(path: Path) -> RunResults:
    """Read a results file; lines that are not JSON are skipped, and said so (``read_warnings``).

    A last line cut short (an interrupted run, a truncated copy, even one cut inside a UTF-8 character) sets
    :attr:`RunResults.incomplete_last_line`; other lines that are not JSON are listed in
    :attr:`RunResults.skipped_lines`. Raises ``ValueError`` naming the line when a complete JSON line is not a
    valid record or not UTF-8.
    """
    meta: RunMeta | None = None
    rows: list[TurnRow] = []
    incomplete = False
    skipped: list[int] = []
    lines = path.read_bytes().split(b"\n")
    for number, raw in enumerate(lines, start=1):
        if not raw.strip():
            continue
        last = number == len(lines)  # no newline after it: what an interrupted write leaves
        try:
            record = _clean(json.loads(raw.decode("utf-8")))
        except RecursionError:
            raise ValueError(f"{path}:{number}: nested deeper than any results record") from None
        except ValueError as exc:  # not UTF-8, or not JSON
            if last:
                incomplete = True
            elif isinstance(exc, UnicodeDecodeError):
                raise ValueError(
                    f"{path}:{number}: not UTF-8 text ({exc.reason} at byte {exc.start})"
                ) from None
            else:
                skipped.append(number)
            continue
        kind = record.get("kind") if isinstance(record, dict) else None
        try:
            if kind == "run":
                meta = RunMeta.model_validate(record)
            elif kind == "turn":
                rows.append(TurnRow.model_validate(record))
        except ValidationError as exc:
            raise ValueError(f"{path}:{number}: not a valid {kind} record: {_first_error(exc)}") from None
    recorded = meta is not None
    if meta is None:
        meta = RunMeta(modes=sorted({row.mode for row in rows}))
    return RunResults(
        meta=meta, rows=rows, meta_recorded=recorded, incomplete_last_line=incomplete, skipped_lines=skipped
    )


_UNSAFE: dict[int, str | None] = {
    **dict.fromkeys(map(ord, CONTROL_CHARACTERS)),
    **dict.fromkeys(range(0xD800, 0xE000), "\ufffd"),
}
"""Removed from every text a results file holds: control characters (C0 but tab and newline, DEL, C1), which
would drive the terminal a report is printed on; and replaced: unpaired surrogates, which no file can hold."""


def _clean(value: Any) -> Any:
    """``value`` as read from a results line, every string (keys too) without :data:`_UNSAFE` characters."""
    if isinstance(value, str):
        return value.translate(_UNSAFE)
    if isinstance(value, list):
        return [_clean(item) for item in value]
    if isinstance(value, dict):
        return {str(key).translate(_UNSAFE): _clean(item) for key, item in value.items()}
    return value


def _first_error(error: ValidationError) -> str:
    """A validation error on one line: the first problem, where it is, and how many more there are."""
    problems = error.errors(include_url=False)
    first = problems[0]
    where = ".".join(str(part) for part in first.get("loc", ())) or "record"
    more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
    return f"{where}: {first.get('msg', 'invalid')}{more}"
