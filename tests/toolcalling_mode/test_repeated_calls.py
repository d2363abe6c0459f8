"""An identical tool call runs once per turn: a repeat gets the earlier result, says so to the model, and is
recorded with ``repeat_of``; a failed call is not reused."""

from __future__ import annotations

import json
import threading
import time
from typing import Any

import pytest
from langchain_core.messages import AIMessage, BaseMessage

from shared.errors import CustomerNotFoundError
from shared.events import OperationDone
from shared.operations.registry import OperationRegistry
from shared.result_text import for_model
from tests.engine_backends import SQLITE_ONLY, run_turn, streamed
from tests.fakes import (
    BestCustomer,
    CallInfo,
    CustomerParams,
    CustomerTotal,
    YearParams,
    YearTotal,
    toy_operations,
)
from tests.toolcalling_mode.toolcalling_fakes import YEAR_TOTALS, ask_tools, call
from toolcalling_mode._agent import REPEAT_NOTE

pytestmark = SQLITE_ONLY  # the subject is the turn's middleware, not the database


class Counted:
    """The toy operations, counting how often each handler ran; ``pause`` slows ``ventas_anuales`` down so
    that parallel calls overlap."""

    def __init__(self, pause: float = 0.0) -> None:
        self.runs: list[str] = []
        self.pause = pause
        self._lock = threading.Lock()

    def _ran(self, entry: str) -> None:
        with self._lock:
            self.runs.append(entry)

    def ventas(self, _ctx: Any, params: YearParams) -> YearTotal:
        self._ran(f"ventas {params.anio}")
        time.sleep(self.pause)
        return YearTotal(anio=params.anio, total=YEAR_TOTALS.get(params.anio, 0))

    def mejor(self, _ctx: Any, params: YearParams) -> BestCustomer:
        self._ran(f"mejor {params.anio}")
        return BestCustomer(anio=params.anio, cliente="ACME S.A.", total=120_000_000)

    def compras(self, _ctx: Any, params: CustomerParams) -> CustomerTotal:
        self._ran(f"compras {params.cliente} {params.anio}")
        raise CustomerNotFoundError("compras_cliente", params.cliente, ["ACME S.A."])

    def registry(self) -> OperationRegistry:
        return OperationRegistry(toy_operations(self.ventas, self.mejor, self.compras))


def steps(*replies: AIMessage | str) -> Any:
    """A model that sends ``replies`` in turn, one per model call of the turn."""

    def reply(messages: list[BaseMessage], info: CallInfo) -> AIMessage | str:
        answered = sum(isinstance(m, AIMessage) for m in messages)  # earlier steps of this turn
        return replies[min(answered, len(replies) - 1)]

    return reply


@pytest.mark.parametrize("driver", ["ask", "astream"])
async def test_a_call_repeated_in_a_later_step_runs_once_and_the_model_is_told(
    make_engine: Any, driver: str
) -> None:
    toy = Counted()
    first, again = call("ventas_anuales", anio=2025), call("ventas_anuales", anio="2025")
    engine, model = make_engine(
        steps(ask_tools(first), ask_tools(again), "Vendimos 850000000."), registry=toy.registry()
    )

    result = await run_turn(engine, driver, "c1", "¿Cuánto vendimos en 2025?")

    assert toy.runs == ["ventas 2025"]
    earlier, repeat = result.operations
    assert (earlier.repeat_of, repeat.repeat_of) == (None, first["id"])
    assert repeat.result == earlier.result == {"anio": 2025, "total": 850_000_000}
    assert (repeat.id, repeat.parameters, repeat.duration_ms, repeat.ok) == (
        again["id"],
        {"anio": "2025"},
        0.0,
        True,
    )
    shown = model.calls[2].tool_results[-1]  # what the model read for the repeat: the note, then the result
    assert str(shown.content).startswith(REPEAT_NOTE + "\n")
    assert json.loads(str(shown.content).removeprefix(REPEAT_NOTE)) == for_model(earlier.result)
    assert result.failure is None and result.answer == "Vendimos 850000000."


async def test_identical_parallel_calls_run_once_and_each_repeat_is_announced_as_such(
    make_engine: Any,
) -> None:
    toy = Counted(pause=0.2)  # the three calls overlap: two wait for the one that runs
    calls = [call("ventas_anuales", anio=2025) for _ in range(3)]
    engine, model = make_engine(steps(ask_tools(*calls), "Listo."), registry=toy.registry())

    events, result = await streamed(engine, "c1", "¿Cuánto vendimos?")

    assert toy.runs == ["ventas 2025"]
    ran = [op for op in result.operations if op.repeat_of is None]
    assert len(ran) == 1 and ran[0].duration_ms > 0
    assert sorted(str(op.id) for op in result.operations) == sorted(c["id"] for c in calls)
    assert [op.repeat_of for op in result.operations if op is not ran[0]] == [ran[0].id, ran[0].id]
    assert all(op.result == {"anio": 2025, "total": 850_000_000} for op in result.operations)
    announced = [e.operation for e in events if isinstance(e, OperationDone)]
    assert {op.id: op.repeat_of for op in announced} == {op.id: op.repeat_of for op in result.operations}
    notes = [str(m.content).startswith(REPEAT_NOTE) for m in model.calls[1].tool_results]
    assert sorted(notes) == [False, True, True]


async def test_a_failed_call_is_not_reused_so_an_identical_one_runs_again(make_engine: Any) -> None:
    toy = Counted()
    first, again = (
        call("compras_cliente", cliente="Nadie", anio=2025),
        call("compras_cliente", cliente="Nadie", anio=2025),
    )
    engine, _ = make_engine(
        steps(ask_tools(first), ask_tools(again), "No existe ese cliente."), registry=toy.registry()
    )

    result = await run_turn(engine, "aask", "c1", "¿Cuánto compró Nadie en 2025?")

    assert toy.runs == ["compras Nadie 2025", "compras Nadie 2025"]
    assert [(op.error_kind, op.repeat_of) for op in result.operations] == [
        ("refused", None),
        ("refused", None),
    ]


async def test_different_calls_are_not_repeats(make_engine: Any) -> None:
    toy = Counted()
    engine, _ = make_engine(
        steps(ask_tools(call("ventas_anuales", anio=2025), call("ventas_anuales", anio=2024)), "Listo."),
        registry=toy.registry(),
    )

    result = await run_turn(engine, "aask", "c1", "¿Cuánto vendimos?")

    assert sorted(toy.runs) == ["ventas 2024", "ventas 2025"]
    assert [op.repeat_of for op in result.operations] == [None, None]
