"""Plan execution: independent operations concurrently, dependent ones in order, failures as outcomes.

``astream_plan`` runs the plan on the event loop, each handler in a thread, and yields each outcome as it
finishes.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from typing import Any

import pytest

from planner_mode.executor import astream_plan
from planner_mode.plan import Plan
from planner_mode.validation import ValidatedPlan, validate_plan
from shared.erp.database import Erp
from shared.operations.registry import OperationRegistry
from shared.security import DEMO_CALLER
from shared.turn import ExecutedOperation
from tests.planner_mode.planner_fakes import Toy, op, plan, ref, replace_handler


async def aexecute(validated: ValidatedPlan, registry: OperationRegistry, erp: Erp, **options: Any) -> Any:
    """Every outcome of ``astream_plan``, in plan order."""
    done = dict(
        [item async for item in astream_plan(validated, registry, erp, caller=DEMO_CALLER, **options)]
    )
    return [done[index] for index in range(len(validated.plan.operations))]


def validated_plan(registry: OperationRegistry, *operations: dict[str, Any]) -> ValidatedPlan:
    validated = validate_plan(Plan.model_validate(plan(*operations)), registry, caller=DEMO_CALLER)
    assert validated.ok, validated.issues
    return validated


def run(registry: OperationRegistry, erp: Erp, *operations: dict[str, Any]) -> list[ExecutedOperation]:
    """Validate ``operations`` and execute them, on a fresh event loop."""
    return asyncio.run(aexecute(validated_plan(registry, *operations), registry, erp))  # type: ignore[no-any-return]


def sales_waiting_for(event: threading.Event, registry: OperationRegistry, why: str) -> None:
    """Make ``ventas_anuales`` wait (at most 10 s, failing with ``why``) until ``event`` is set."""
    original = registry.get("ventas_anuales").handler

    def ventas(*args: Any) -> Any:
        assert event.wait(timeout=10), why
        return original(*args)

    replace_handler(registry, "ventas_anuales", ventas)


SALES, BEST = op("ventas_anuales", "v", anio=2025), op("mejor_cliente", "m", anio=2025)
UNKNOWN_CUSTOMER = op("compras_cliente", "a", cliente="Nadie", anio=2025)
ITS_DEPENDANT = op("compras_cliente", cliente=ref("a.cliente"), anio=2024)


def test_independent_operations_run_concurrently(
    toy: Toy, toy_registry: OperationRegistry, toy_erp: Erp
) -> None:
    # Each handler waits at a two-party barrier: run one after the other, the first would time out.
    toy.barrier = threading.Barrier(2, timeout=10)
    ops = run(toy_registry, toy_erp, op("ventas_anuales", anio=2025), op("mejor_cliente", anio=2025))
    assert [op.error for op in ops] == [None, None]
    assert ops[0].result == {"anio": 2025, "total": 850_000_000}
    assert ops[1].result["cliente"] == "Empresa ABC"


def test_dependent_operation_gets_the_resolved_reference(
    toy: Toy, toy_registry: OperationRegistry, toy_erp: Erp
) -> None:
    ops = run(
        toy_registry,
        toy_erp,
        op("compras_cliente", "op2", cliente=ref("op1.cliente"), anio=2025),
        op("mejor_cliente", "op1", anio=2025),
    )
    assert toy.log == ["mejor 2025", "compras Empresa ABC 2025"]
    assert [op.function for op in ops] == ["compras_cliente", "mejor_cliente"]  # plan order is kept
    assert ops[0].parameters == {"cliente": "Empresa ABC", "anio": 2025}
    assert ops[0].result == {"cliente": "Empresa ABC", "anio": 2025, "total": 120_000_000}
    assert ops[0].id == "op2"
    assert all(op.duration_ms >= 0 for op in ops)


async def test_domain_errors_become_outcomes_and_dependants_are_skipped_yet_yielded(
    toy: Toy, toy_registry: OperationRegistry, toy_erp: Erp
) -> None:
    validated = validated_plan(toy_registry, UNKNOWN_CUSTOMER, ITS_DEPENDANT, op("ventas_anuales", anio=2025))
    seen = [item async for item in astream_plan(validated, toy_registry, toy_erp, caller=DEMO_CALLER)]
    order, ops = [index for index, _ in seen], dict(seen)
    assert sorted(order) == [0, 1, 2] and order.index(0) < order.index(1)  # the skipped one is yielded too
    assert ops[0].error is not None and "Nadie" in ops[0].error
    assert ops[1].error == "Not executed: it depends on a, which failed."
    assert (ops[0].error_kind, ops[1].error_kind) == ("refused", "refused")
    assert ops[2].ok
    assert toy.log.count("compras Empresa ABC 2024") == 0


def test_a_reference_missing_from_the_actual_result_is_an_error(
    toy_registry: OperationRegistry, toy_erp: Erp
) -> None:
    # Validation refuses references the result model cannot hold; this one slips past it (as a reference
    # into a list that turns out shorter would), so the executor must still refuse it at run time.
    dependent = plan(
        op("mejor_cliente", "op1", anio=2025), op("compras_cliente", cliente=ref("op1.cliente.0"), anio=2025)
    )
    validated = ValidatedPlan(
        plan=Plan.model_validate(dependent), waves=[[0], [1]], dependencies={0: set(), 1: {0}}
    )
    ops = asyncio.run(aexecute(validated, toy_registry, toy_erp))
    assert ops[0].ok
    assert ops[1].error is not None and "op1.cliente.0" in ops[1].error
    assert ops[1].error_kind == "invalid"


def test_unexpected_handler_exceptions_do_not_escape(toy_registry: OperationRegistry, toy_erp: Erp) -> None:
    def broken(*_args: Any) -> Any:
        raise RuntimeError("disk on fire")

    replace_handler(toy_registry, "ventas_anuales", broken)
    [outcome] = run(toy_registry, toy_erp, op("ventas_anuales", anio=2025))
    assert outcome.error is not None and outcome.error.startswith("error interno (ref ")
    assert (
        "disk on fire" not in outcome.error and outcome.error_kind == "internal"
    )  # the text stays in the log


def test_an_invalid_plan_cannot_be_executed(toy_registry: OperationRegistry, toy_erp: Erp) -> None:
    validated = validate_plan(
        Plan.model_validate(plan({"funcion": "nope"})), toy_registry, caller=DEMO_CALLER
    )
    with pytest.raises(ValueError, match="valid plan"):
        asyncio.run(aexecute(validated, toy_registry, toy_erp))


# -- on the event loop ------------------------------------------------------------------------------------


async def test_each_outcome_is_yielded_as_soon_as_its_operation_finishes(
    toy_registry: OperationRegistry, toy_erp: Erp
) -> None:
    # ventas_anuales cannot finish before mejor_cliente's outcome has reached the consumer.
    release = threading.Event()
    sales_waiting_for(release, toy_registry, "ventas_anuales was not released")
    seen: list[tuple[int, str]] = []
    validated = validated_plan(toy_registry, SALES, BEST)
    async for index, outcome in astream_plan(validated, toy_registry, toy_erp, caller=DEMO_CALLER):
        seen.append((index, outcome.function))
        release.set()
    assert seen == [(1, "mejor_cliente"), (0, "ventas_anuales")]


async def test_handlers_run_in_threads_so_the_event_loop_keeps_running(
    toy_registry: OperationRegistry, toy_erp: Erp
) -> None:
    # The handler blocks until a coroutine on the loop runs: on the loop's own thread it would never return.
    loop_ran = threading.Event()
    sales_waiting_for(loop_ran, toy_registry, "the event loop was blocked")

    async def meanwhile() -> None:
        await asyncio.sleep(0)
        loop_ran.set()

    ops, _ = await asyncio.gather(
        aexecute(validated_plan(toy_registry, SALES), toy_registry, toy_erp), meanwhile()
    )
    assert [op.result for op in ops] == [{"anio": 2025, "total": 850_000_000}]


# Three at once pass the barrier together; one at a time, the first wait times out (quickly: it must).
@pytest.mark.parametrize("max_workers, expected, patience", [(1, 1, 0.2), (3, 3, 10.0)])
async def test_max_workers_bounds_the_operations_running_at_once(
    toy_registry: OperationRegistry, toy_erp: Erp, max_workers: int, expected: int, patience: float
) -> None:
    running = peak = 0
    lock = threading.Lock()
    all_started = threading.Barrier(3, timeout=patience)
    original = toy_registry.get("ventas_anuales").handler

    def ventas(*args: Any) -> Any:
        nonlocal running, peak
        with lock:
            running += 1
            peak = max(peak, running)
        with contextlib.suppress(threading.BrokenBarrierError):
            all_started.wait()
        with lock:
            running -= 1
        return original(*args)

    replace_handler(toy_registry, "ventas_anuales", ventas)
    years = validated_plan(toy_registry, *[op("ventas_anuales", anio=year) for year in (2023, 2024, 2025)])
    ops = await aexecute(years, toy_registry, toy_erp, max_workers=max_workers)
    assert [op.result["anio"] for op in ops] == [2023, 2024, 2025]
    assert peak == expected


# -- identical operations --------------------------------------------------------------------------------


async def test_an_identical_operation_runs_once_and_its_repeat_says_so(
    toy: Toy, toy_registry: OperationRegistry, toy_erp: Erp
) -> None:
    # "2025" is 2025 once the operation's model has validated it: the same call.
    validated = validated_plan(toy_registry, SALES, op("ventas_anuales", "w", anio="2025"), BEST)
    seen = [item async for item in astream_plan(validated, toy_registry, toy_erp, caller=DEMO_CALLER)]
    ops = dict(seen)
    assert sorted(index for index, _ in seen) == [0, 1, 2]  # one outcome per planned operation
    assert toy.log.count("ventas 2025") == 1
    assert (ops[0].repeat_of, ops[1].repeat_of, ops[2].repeat_of) == (None, "v", None)
    assert ops[1].result == ops[0].result == {"anio": 2025, "total": 850_000_000}
    assert (ops[1].id, ops[1].parameters, ops[1].duration_ms) == ("w", {"anio": "2025"}, 0.0)


def test_a_repeat_without_an_id_names_the_earlier_operation_by_its_index(
    toy: Toy, toy_registry: OperationRegistry, toy_erp: Erp
) -> None:
    ops = run(toy_registry, toy_erp, BEST, op("ventas_anuales", anio=2025), op("ventas_anuales", anio=2025))
    assert toy.log.count("ventas 2025") == 1
    assert [op.repeat_of for op in ops] == [None, None, "#1"]
    assert ops[2].result == ops[1].result and ops[2].ok


def test_a_repeat_known_only_once_its_reference_resolves_runs_once_and_can_be_referenced(
    toy: Toy, toy_registry: OperationRegistry, toy_erp: Erp
) -> None:
    ops = run(
        toy_registry,
        toy_erp,
        op("mejor_cliente", "m", anio=2025),
        op("compras_cliente", "a", cliente="Empresa ABC", anio=2025),
        op("compras_cliente", "b", cliente=ref("m.cliente"), anio=2025),  # Empresa ABC, 2025 again
        op("ventas_anuales", anio=ref("b.anio")),
    )
    assert toy.log.count("compras Empresa ABC 2025") == 1
    assert (ops[2].repeat_of, ops[2].parameters) == ("a", {"cliente": "Empresa ABC", "anio": 2025})
    assert ops[2].result == ops[1].result
    assert ops[3].ok and ops[3].parameters == {"anio": 2025} and ops[3].repeat_of is None


def test_a_repeat_of_a_refused_operation_carries_its_error_without_running_again(
    toy: Toy, toy_registry: OperationRegistry, toy_erp: Erp
) -> None:
    again = op("compras_cliente", "b", cliente="Nadie", anio=2025)
    ops = run(toy_registry, toy_erp, UNKNOWN_CUSTOMER, again, op("ventas_anuales", anio=ref("b.anio")))
    assert toy.log == ["compras Nadie 2025"]
    assert (ops[1].error, ops[1].error_kind, ops[1].repeat_of) == (ops[0].error, "refused", "a")
    assert ops[2].error == "Not executed: it depends on b, which failed."
