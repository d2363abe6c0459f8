"""The reliability matrix: every fault a real model or provider produces × both modes × each path.

Paths: ``in-process`` (the offline model with an offline fault, :mod:`benchmarks.stand_ins.faults`),
``ai-server`` (planner only: a stateless AI server over HTTP whose model has the fault) and ``ollama-http``
(the real ``ChatOllama`` client against the Ollama emulator with an emulator fault).

Each cell runs one turn in a conversation that already holds one exchange and records its failure kind,
whether the conversation changed, the calls and tokens counted and what the user read; then a two-scenario
benchmark run with the same faulty engine shows that the run goes on. What a cell *should* give is asserted
by ``tests/benchmarks/test_reliability.py``.
"""

from __future__ import annotations

import tempfile
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack, contextmanager
from datetime import date
from pathlib import Path
from typing import Any, Literal, get_args

from pydantic import BaseModel

from benchmarks.modes import build_engine
from benchmarks.provenance import describe_host
from benchmarks.runner import RunConfig, run_benchmark
from benchmarks.scenario import Scenario
from benchmarks.scoring.turn import TurnScorer
from shared.answer import MemoryItem
from shared.engine import AssistantEngine
from shared.erp.database import Erp, open_demo_erp
from shared.extras import require, require_extra
from shared.failures import FailureKind
from shared.memory.store import MemoryStore, MessageIn, TurnRecord
from shared.operations.registry import OperationRegistry
from shared.operations.sales import sales_registry
from shared.security import DEMO_CALLER

ModelPath = Literal["in-process", "ai-server", "ollama-http"]
"""How the engine reaches the faulty model."""

MATRIX_MAX_TOKENS = 400
"""Output cap of every model call in the matrix: above any normal reply, so only runaways hit it."""
MATRIX_TIMEOUT_S = 60.0
"""Request timeout of every cell but the timeout faults': far above any reply, so that how fast the machine
is never decides a cell."""
TIMEOUT_FAULT_TIMEOUT_S = 0.5
"""Request timeout of the cells whose fault is a server that answers late or never (`TIMEOUT_FAULTS`)."""
TIMEOUT_FAULTS = ("slow", "stall")
"""The emulator faults that only a client's timeout ends."""
SLOW_FAULT_S = 1.0
"""How long the emulator's ``slow`` fault waits (more than :data:`TIMEOUT_FAULT_TIMEOUT_S`)."""

QUESTION = "¿Cuánto vendimos en 2025?"
_PRIOR = ("¿Cuál fue mi mejor cliente en 2025?", "El mejor cliente de 2025 fue Empresa ABC.")
_BENCH_SUITE = [
    {
        "id": "ventas",
        "category": "reliability",
        "turns": [
            {
                "user": QUESTION,
                "expect": {
                    "operations": [{"funcion": "ventas_anuales", "parametros": {"anio": 2025}}],
                    "facts": ["ventas_anuales(anio=2025).total"],
                },
            }
        ],
    },
    {"id": "saludo", "category": "reliability", "turns": [{"user": "Hola, ¿cómo estás?"}]},
]
_FAULT_MAX_TOKENS = {"repeat_memory": 8192}
"""Faults whose point is a long but complete reply get a cap that lets it finish (so the bounds show)."""


class MatrixCell(BaseModel):
    """What one fault did to one mode on one path."""

    fault: str
    mode: Literal["planner", "toolcalling"]
    path: ModelPath
    failure: FailureKind | None
    """The turn's failure kind (``None``: answered normally)."""
    recorded: bool
    untouched: bool
    """The conversation's messages, state and memories are exactly as before the turn."""
    model_calls: int
    input_tokens: int
    output_tokens: int
    answer: str
    stored_memories: int
    """Memory items of the conversation after the turn."""
    stored_chars: int
    """Characters of every memory item and state value stored after the turn (a wall of text shows here)."""
    errors: list[str]
    bench_turns: int
    """Turns the follow-up benchmark run recorded (it has two), of which ``bench_passed`` passed."""
    bench_passed: int
    bench_failures: dict[str, int]


def offline_faults() -> list[str]:
    from benchmarks.stand_ins.faults import FaultMode

    return list(get_args(FaultMode))


def emulator_faults() -> list[str]:
    from benchmarks.stand_ins.emulators.faults import EmulatorFault

    return list(get_args(EmulatorFault))


def _max_tokens(fault: str) -> int:
    return _FAULT_MAX_TOKENS.get(fault, MATRIX_MAX_TOKENS)


def request_timeout(fault: str) -> float:
    """The request timeout a cell with ``fault`` runs with."""
    return TIMEOUT_FAULT_TIMEOUT_S if fault in TIMEOUT_FAULTS else MATRIX_TIMEOUT_S


def _offline_model(fault: str) -> Any:
    from benchmarks.stand_ins.models import build_model

    return build_model("offline", faults=fault, max_tokens=_max_tokens(fault))  # type: ignore[arg-type]


@contextmanager
def _path_engines(
    path: ModelPath, fault: str, registry: OperationRegistry, erp: Erp, store: MemoryStore
) -> Iterator[Callable[[str], AssistantEngine]]:
    """Yield a factory ``mode -> engine`` whose model has ``fault``, reached through ``path``.

    Each cell gets its own AI server or emulator: an emulator's reply faults depend on its request count.
    """

    def engine(mode: str, **model: Any) -> AssistantEngine:
        return build_engine(mode, registry=registry, erp=erp, store=store, **model)

    if path == "in-process":
        yield lambda mode: engine(mode, model=_offline_model(fault))
    elif path == "ai-server":
        from benchmarks.serving import ServerThread
        from planner_mode import HttpAIClient, create_app

        with ServerThread(create_app(_offline_model(fault))) as server:
            client = HttpAIClient([server.url], timeout=MATRIX_TIMEOUT_S, retries=0)
            try:
                yield lambda _mode: engine("planner", ai=client)
            finally:
                client.close()
    else:
        from benchmarks.stand_ins.emulators import EmulatorFaults, start_emulator
        from shared.llm.factory import build_chat_model

        faults = EmulatorFaults(mode=fault, slow_seconds=SLOW_FAULT_S)  # type: ignore[arg-type]
        with start_emulator("ollama", faults=faults) as base_url:
            model = build_chat_model(
                "ollama", base_url=base_url, max_tokens=_max_tokens(fault), timeout=request_timeout(fault)
            )
            yield lambda mode: engine(mode, model=model)


def _snapshot(store: MemoryStore, conversation_id: str) -> tuple[Any, ...]:
    history = [(m.role, m.content) for m in store.history(conversation_id)]
    memories = [(m.content, m.importance) for m in store.memories(conversation_id)]
    return (history, store.get_state(conversation_id), memories)


def _stored_chars(store: MemoryStore, conversation_id: str) -> int:
    memories = sum(len(m.content) for m in store.memories(conversation_id))
    return memories + sum(len(str(value)) for value in store.get_state(conversation_id).values())


def _seed_conversation(store: MemoryStore, conversation_id: str) -> None:
    question, answer = _PRIOR
    store.record_turn(
        conversation_id,
        user_id=DEMO_CALLER.user_id,
        turn=TurnRecord(
            messages=[
                MessageIn(role="user", content=question, metadata={}),
                MessageIn(role="assistant", content=answer, metadata={}),
            ],
            memories=[MemoryItem(content=answer, importance=0.9)],
            state={"tema": "ventas", "anio": 2025},
        ),
    )


def _cell(
    fault: str,
    mode: Literal["planner", "toolcalling"],
    path: ModelPath,
    *,
    registry: OperationRegistry,
    erp: Erp,
    store: MemoryStore,
    scorer: TurnScorer,
    work_dir: Path,
) -> MatrixCell:
    conversation_id = f"matrix-{path}-{mode}-{fault}"[:64]
    _seed_conversation(store, conversation_id)
    before = _snapshot(store, conversation_id)
    with _path_engines(path, fault, registry, erp, store) as engines:
        result = engines(mode).ask(conversation_id, QUESTION, DEMO_CALLER)
        after = _snapshot(store, conversation_id)
        config = RunConfig(modes=[mode], out_dir=work_dir / f"{path}-{mode}-{fault}")
        outcome = run_benchmark(
            [Scenario.model_validate(s) for s in _BENCH_SUITE],
            config,
            engine_factory=engines,
            scorer=scorer,
            show_progress=False,
        )
    failed = Counter(row.failure or "provider" for row in outcome.rows if row.failed)
    return MatrixCell(
        fault=fault,
        mode=mode,
        path=path,
        **result.model_dump(include=_FROM_THE_TURN),
        untouched=after == before,
        stored_memories=len(store.memories(conversation_id)),
        stored_chars=_stored_chars(store, conversation_id),
        bench_turns=len(outcome.rows),
        bench_passed=sum(row.passed for row in outcome.rows),
        bench_failures=dict(failed),
    )


_FROM_THE_TURN = {"failure", "recorded", "model_calls", "input_tokens", "output_tokens", "answer", "errors"}
"""The fields of a cell that are the turn's own figures."""


def matrix_plan(
    paths: Sequence[ModelPath] = ("in-process", "ai-server", "ollama-http"),
) -> list[tuple[str, str, ModelPath]]:
    """Every (fault, mode, path) cell the matrix runs, in table order."""
    cells: list[tuple[str, str, ModelPath]] = []
    for path in paths:
        faults = emulator_faults() if path == "ollama-http" else offline_faults()
        modes = ("planner",) if path == "ai-server" else ("planner", "toolcalling")
        cells += [(fault, mode, path) for fault in faults for mode in modes]
    return cells


def _require_extras(paths: Sequence[ModelPath]) -> None:
    if "ai-server" in paths:
        require_extra("server", "The reliability matrix's AI server path")
    if "ollama-http" in paths:
        require("langchain_ollama", "ollama", "The reliability matrix's Ollama path")


def run_matrix(
    paths: Sequence[ModelPath] = ("in-process", "ai-server", "ollama-http"),
    *,
    on_cell: Callable[[MatrixCell], None] | None = None,
) -> list[MatrixCell]:
    """Run every cell of :func:`matrix_plan` against a fresh demo ERP and memory in a temporary directory
    (a missing ``server`` or ``ollama`` extra is a ``ConfigurationError`` before any cell runs)."""
    _require_extras(paths)
    registry = sales_registry()
    cells: list[MatrixCell] = []
    with ExitStack() as stack:
        work_dir = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="erp-ai-matrix-")))
        erp = open_demo_erp(f"sqlite:///{work_dir / 'erp.sqlite3'}")
        stack.callback(erp.engine.dispose)
        store = stack.enter_context(MemoryStore(f"sqlite:///{work_dir / 'memory.sqlite3'}"))
        scorer = TurnScorer(registry, erp)
        for fault, mode, path in matrix_plan(paths):
            cell = _cell(
                fault,
                mode,  # type: ignore[arg-type]
                path,
                registry=registry,
                erp=erp,
                store=store,
                scorer=scorer,
                work_dir=work_dir,
            )
            cells.append(cell)
            if on_cell is not None:
                on_cell(cell)
    return cells


README_BLOCK = "reliability"


def readme_block(cells: Sequence[MatrixCell]) -> str:
    """The README block: markers, how the table was produced, the table, and how to read a cell."""
    from benchmarks.report.readme import end_marker, start_marker

    return "\n".join(
        [
            start_marker(README_BLOCK, "erp-ai reliability --readme README.md"),
            "",
            f"Measured by `erp-ai reliability` on {date.today().isoformat()}: {len(cells)} cells, "
            f"{matrix_limits()}, on {describe_host()}. "
            "Each cell: the failure kind the turn ended in (or *answered*), whether the conversation was "
            "recorded or left untouched, the model calls and input+output tokens counted, and whether a "
            "two-turn benchmark run with the same fault went on to its end (and how many of its turns "
            "passed the ERP-grounded checks).",
            "",
            matrix_markdown(cells),
            "",
            end_marker(README_BLOCK),
        ]
    )


def matrix_limits() -> str:
    """The bounds every cell ran with: "output cap 400 tokens (8,192 for `repeat_memory`), request timeout
    60 s (0.5 s for `slow`, `stall`)"."""
    own = ", ".join(f"{cap:,} for `{fault}`" for fault, cap in _FAULT_MAX_TOKENS.items())
    late = ", ".join(f"`{fault}`" for fault in TIMEOUT_FAULTS)
    return (
        f"output cap {MATRIX_MAX_TOKENS:,} tokens{f' ({own})' if own else ''}, "
        f"request timeout {MATRIX_TIMEOUT_S:g} s ({TIMEOUT_FAULT_TIMEOUT_S:g} s for {late})"
    )


def matrix_markdown(cells: Sequence[MatrixCell]) -> str:
    """The matrix as a Markdown table: one row per (path, fault), one column per mode."""
    from benchmarks.report.markdown import render_table

    def outcome(cell: MatrixCell | None) -> str:
        if cell is None:
            return "–"
        kind = cell.failure or "answered"
        kept = "recorded" if cell.recorded else ("untouched" if cell.untouched else "CHANGED")
        calls = f"{cell.model_calls} call{'' if cell.model_calls == 1 else 's'}"
        tokens = f"{calls}, {cell.input_tokens}+{cell.output_tokens} tok"
        bench = (
            f"run went on, {cell.bench_passed}/{cell.bench_turns} passed"
            if cell.bench_turns == len(_BENCH_SUITE)
            else "RUN STOPPED"
        )
        return f"{kind} · {kept} · {tokens} · {bench}"

    by_key = {(c.path, c.fault, c.mode): c for c in cells}
    rows = [
        [
            path,
            f"`{fault}`",
            *(outcome(by_key.get((path, fault, mode))) for mode in ("planner", "toolcalling")),
        ]
        for path, fault in dict.fromkeys((c.path, c.fault) for c in cells)
    ]
    header = ["path", "fault", "planner", "toolcalling"]
    return "\n".join(render_table(header, rows, align="llll"))
