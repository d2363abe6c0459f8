"""Benchmark test helpers: a scripted fake engine (like pydantic-ai's FunctionModel), a tiny suite, a run of
fake engines, and the CLI's error checks."""

from __future__ import annotations

import json
import os
import sqlite3
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

from benchmarks.run_plan import RunConfig
from benchmarks.run_turns import EngineFactories
from benchmarks.runner import RunOutcome, run_benchmark
from benchmarks.scenario import Scenario
from benchmarks.targets import parse_targets
from shared.events import AnswerDelta, TurnDone, TurnEvent
from shared.security import Caller
from shared.turn import ExecutedOperation, TurnResult

Script = Callable[[str, str, str], TurnResult]
"""(mode, conversation_id, message) -> TurnResult; may raise to simulate a failing provider."""

TINY_SUITE = """
scenarios:
  - id: ventas
    category: single_operation
    tags: [articulo]
    turns:
      - user: "¿Cuánto vendimos en 2025?"
        expect:
          operations: [{funcion: ventas_anuales, parametros: {anio: 2025}}]
          facts: ["ventas_anuales(anio=2025).total"]
  - id: saludo
    category: small_talk
    turns:
      - user: "Hola"
        expect: {operations: []}
      - user: "¿Cuánto vendimos en 2025?"
        expect:
          operations: [{funcion: ventas_anuales, parametros: {anio: 2025}}]
"""


def good_script(mode: str, conversation_id: str, message: str) -> TurnResult:
    """Answers the tiny suite correctly."""
    figures = {"input_tokens": 100, "output_tokens": 20, "model_ms": 1.0, "harness_ms": 0.5, "total_ms": 1.5}
    if "2025" in message:
        sales = {"funcion": "ventas_anuales", "parametros": {"anio": 2025}, "result": {"total": 850000000}}
        answer, operations, calls = "En 2025 vendimos ₲850.000.000.", [ExecutedOperation(**sales)], 2
    else:
        answer, operations, calls = "¡Hola! ¿En qué puedo ayudarte?", [], 1
    return TurnResult(
        mode=mode,
        conversation_id=conversation_id,
        question=message,
        answer=answer,
        operations=operations,
        model_calls=calls,
        **figures,
    )


class FakeEngine:
    """An AssistantEngine driven by a plain function, like pydantic-ai's FunctionModel.

    ``astream`` yields the script's answer in two deltas (none when the turn failed), then ``TurnDone``;
    ``calls`` lists the (conversation, message) of every turn, ``streamed`` counts them.
    """

    def __init__(self, mode: str, script: Script) -> None:
        self.mode = mode
        self.script = script
        self.calls: list[tuple[str, str]] = []
        self.streamed = 0

    def ask(self, conversation_id: str, message: str, caller: Caller, **_: Any) -> TurnResult:
        self.calls.append((conversation_id, message))
        return self.script(self.mode, conversation_id, message)

    async def astream(
        self, conversation_id: str, message: str, caller: Caller, **_: Any
    ) -> AsyncIterator[TurnEvent]:
        result = self.ask(conversation_id, message, caller)  # raises before the first event, like engines
        self.streamed += 1
        if not result.failed:
            half = len(result.answer) // 2
            for piece in (result.answer[:half], result.answer[half:]):
                yield AnswerDelta(text=piece)
        yield TurnDone(result=result)


TARGETS = ["a=offline", "b=offline:offline-sales"]
"""Two targets of the offline model (``--target`` specs)."""


def config(tmp_path: Path, specs: list[str] | None = None, **kwargs: object) -> RunConfig:
    """Planner and tool calling into ``tmp_path/out``; ``specs``: the targets (none: the implicit one)."""
    values: dict[str, object] = {"modes": ["planner", "toolcalling"], "out_dir": tmp_path / "out"}
    return RunConfig.model_validate({**values, "targets": parse_targets(specs or []), **kwargs})


def run(suite: list[Scenario], cfg: RunConfig, factory: EngineFactories, scorer: Any) -> RunOutcome:
    return run_benchmark(suite, cfg, engine_factory=factory, scorer=scorer, show_progress=False)


class Engines:
    """An engine factory that keeps the engines it built."""

    def __init__(self, script: Script = good_script) -> None:
        self.script = script
        self.built: list[FakeEngine] = []

    def __call__(self, mode: str) -> FakeEngine:
        engine = FakeEngine(mode, self.script)
        self.built.append(engine)
        return engine

    def calls(self) -> list[tuple[str, str]]:
        return [call for engine in self.built for call in engine.calls]


def one_line(output: str) -> str:
    """The one line of an error output (never a traceback)."""
    lines = [line for line in output.splitlines() if line.strip()]
    assert "Traceback" not in output
    assert len(lines) == 1, output
    return lines[0]


def json_error(stdout: str) -> dict[str, str]:
    """The ``{"error": {"kind", "message"}}`` a refused command prints under ``--json``."""
    document = json.loads(stdout)
    assert set(document) == {"error"}, document
    error: dict[str, str] = document["error"]
    assert set(error) == {"kind", "message"} and error["message"], error
    return error


def subprocess_env(env: dict[str, str | None]) -> dict[str, str]:
    """This process's environment with ``env`` applied (``None`` unsets), for a child process."""
    merged = {**os.environ, **env}
    return {key: value for key, value in merged.items() if value is not None}


def copy_database(url: str, target: Path) -> Path:
    """A consistent copy of the SQLite database at ``url`` (SQLite's online backup), at ``target``."""
    source, copy = sqlite3.connect(url.removeprefix("sqlite:///")), sqlite3.connect(target)
    with source, copy:
        source.backup(copy)
    source.close()
    copy.close()
    return target
