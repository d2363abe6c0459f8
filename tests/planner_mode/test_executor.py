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
from tests.planner_mode.planner_fakes import Toy


async def aexecute(validated: ValidatedPlan, registry: OperationRegistry, erp: Erp, **options: Any) -> Any:
    """Every outcome of ``astream_plan``, in plan order."""
    done = dict([item async for item in astream_plan(validated, registry, erp, **options)])
    return [done[index] for index in range(len(validated.plan.operations))]


def execute(validated: ValidatedPlan, registry: OperationRegistry, erp: Erp, **options: Any) -> Any:
    """:func:`aexecute` run to completion on a fresh event loop."""
    return asyncio.run(aexecute(validated, registry, erp, **options))


def validated_plan(registry: OperationRegistry, *operations: dict[str, Any]) -> ValidatedPlan:
    validated = validate_plan(
        Plan.model_validate({"operaciones": list(operations)}), registry, caller=DEMO_CALLER
    )
    assert validated.ok, validated.issues
    return validated


def run(registry: OperationRegistry, erp: Erp, *operations: dict[str, Any]) -> list[ExecutedOperation]:
    """Validate ``operations`` and execute them."""
    return execute(validated_plan(registry, *operations), registry, erp, caller=DEMO_CALLER)


YEARS = (
    {"id": "v", "funcion": "ventas_anuales", "parametros": {"anio": 2025}},
    {"id": "m", "funcion": "mejor_cliente", "parametros": {"anio": 2025}},
)


def test_independent_operations_run_concurrently(
    toy: Toy, toy_registry: OperationRegistry, toy_erp: Erp
) -> None:
    # Each handler waits at a two-party barrier: run one after the other, the first would time out.
    toy.barrier = threading.Barrier(2, timeout=10)
    ops = run(
        toy_registry,
        toy_erp,
        {"funcion": "ventas_anuales", "parametros": {"anio": 2025}},
        {"funcion": "mejor_cliente", "parametros": {"anio": 2025}},
    )
    assert [op.error for op in ops] == [None, None]
    assert ops[0].result == {"anio": 2025, "total": 850_000_000}
    assert ops[1].result["cliente"] == "Empresa ABC"


def test_dependent_operation_gets_the_resolved_reference(
    toy: Toy, toy_registry: OperationRegistry, toy_erp: Erp
) -> None:
    ops = run(
        toy_registry,
        toy_erp,
        {
            "id": "op2",
            "funcion": "compras_cliente",
            "parametros": {"cliente": {"$ref": "op1.cliente"}, "anio": 2025},
        },
        {"id": "op1", "funcion": "mejor_cliente", "parametros": {"anio": 2025}},
    )
    assert toy.log == ["mejor 2025", "compras Empresa ABC 2025"]
    assert [op.function for op in ops] == ["compras_cliente", "mejor_cliente"]  # plan order is kept
    assert ops[0].parameters == {"cliente": "Empresa ABC", "anio": 2025}
    assert ops[0].result == {"cliente": "Empresa ABC", "anio": 2025, "total": 120_000_000}
    assert ops[0].id == "op2"
    assert all(op.duration_ms >= 0 for op in ops)


def test_domain_errors_become_outcomes_and_dependants_are_skipped(
    toy: Toy, toy_registry: OperationRegistry, toy_erp: Erp
) -> None:
    ops = run(
        toy_registry,
        toy_erp,
        {"id": "a", "funcion": "compras_cliente", "parametros": {"cliente": "Nadie", "anio": 2025}},
        {"funcion": "compras_cliente", "parametros": {"cliente": {"$ref": "a.cliente"}, "anio": 2024}},
        {"funcion": "ventas_anuales", "parametros": {"anio": 2025}},
    )
    assert ops[0].error is not None and "Nadie" in ops[0].error
    assert ops[1].error == "Not executed: it depends on a, which failed."
    assert ops[2].ok
    assert toy.log.count("compras Empresa ABC 2024") == 0


def test_a_reference_missing_from_the_actual_result_is_an_error(
    toy_registry: OperationRegistry, toy_erp: Erp
) -> None:
    # Validation refuses references the result model cannot hold; this one slips past it (as a reference
    # into a list that turns out shorter would), so the executor must still refuse it at run time.
    plan = Plan.model_validate(
        {
            "operaciones": [
                {"id": "op1", "funcion": "mejor_cliente", "parametros": {"anio": 2025}},
                {
                    "funcion": "compras_cliente",
                    "parametros": {"cliente": {"$ref": "op1.cliente.0"}, "anio": 2025},
                },
            ]
        }
    )
    validated = ValidatedPlan(plan=plan, waves=[[0], [1]], dependencies={0: set(), 1: {0}})
    ops = execute(validated, toy_registry, toy_erp, caller=DEMO_CALLER)
    assert ops[0].ok
    assert ops[1].error is not None and "op1.cliente.0" in ops[1].error
    assert ops[1].error_kind == "invalid"


def test_unexpected_handler_exceptions_do_not_escape(
    toy: Toy, toy_registry: OperationRegistry, toy_erp: Erp
) -> None:
    def broken(*_args: Any) -> Any:
        raise RuntimeError("disk on fire")

    toy_registry.get("ventas_anuales").__dict__["handler"] = broken  # frozen dataclass: patch for this test
    [op] = run(toy_registry, toy_erp, {"funcion": "ventas_anuales", "parametros": {"anio": 2025}})
    assert op.error is not None and op.error.startswith("error interno (ref ")
    assert "disk on fire" not in op.error and op.error_kind == "internal"  # the text stays in the log


def test_an_invalid_plan_cannot_be_executed(toy_registry: OperationRegistry, toy_erp: Erp) -> None:
    validated = validate_plan(
        Plan.model_validate({"operaciones": [{"funcion": "nope"}]}), toy_registry, caller=DEMO_CALLER
    )
    with pytest.raises(ValueError, match="valid plan"):
        execute(validated, toy_registry, toy_erp, caller=DEMO_CALLER)


# -- on the event loop ------------------------------------------------------------------------------------


async def test_each_outcome_is_yielded_as_soon_as_its_operation_finishes(
    toy: Toy, toy_registry: OperationRegistry, toy_erp: Erp
) -> None:
    # ventas_anuales cannot finish before mejor_cliente's outcome has reached the consumer.
    release = threading.Event()
    original = toy.ventas

    def ventas(*args: Any) -> Any:
        assert release.wait(timeout=10), "ventas_anuales was not released"
        return original(*args)

    toy_registry.get("ventas_anuales").__dict__["handler"] = ventas
    seen: list[tuple[int, str]] = []
    async for index, outcome in astream_plan(
        validated_plan(toy_registry, *YEARS), toy_registry, toy_erp, caller=DEMO_CALLER
    ):
        seen.append((index, outcome.function))
        release.set()
    assert seen == [(1, "mejor_cliente"), (0, "ventas_anuales")]


async def test_handlers_run_in_threads_so_the_event_loop_keeps_running(
    toy: Toy, toy_registry: OperationRegistry, toy_erp: Erp
) -> None:
    # The handler blocks until a coroutine on the loop runs: on the loop's own thread it would never return.
    loop_ran = threading.Event()
    original = toy.ventas

    def ventas(*args: Any) -> Any:
        assert loop_ran.wait(timeout=10), "the event loop was blocked"
        return original(*args)

    toy_registry.get("ventas_anuales").__dict__["handler"] = ventas

    async def meanwhile() -> None:
        await asyncio.sleep(0)
        loop_ran.set()

    validated = validated_plan(toy_registry, YEARS[0])
    ops, _ = await asyncio.gather(aexecute(validated, toy_registry, toy_erp, caller=DEMO_CALLER), meanwhile())
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

    toy_registry.get("ventas_anuales").__dict__["handler"] = ventas
    years = [{"funcion": "ventas_anuales", "parametros": {"anio": year}} for year in (2023, 2024, 2025)]
    ops = await aexecute(
        validated_plan(toy_registry, *years),
        toy_registry,
        toy_erp,
        caller=DEMO_CALLER,
        max_workers=max_workers,
    )
    assert [op.result["anio"] for op in ops] == [2023, 2024, 2025]
    assert peak == expected


async def test_operations_settled_without_running_are_yielded_too(
    toy_registry: OperationRegistry, toy_erp: Erp
) -> None:
    validated = validated_plan(
        toy_registry,
        {"id": "a", "funcion": "compras_cliente", "parametros": {"cliente": "Nadie", "anio": 2025}},
        {"funcion": "compras_cliente", "parametros": {"cliente": {"$ref": "a.cliente"}, "anio": 2024}},
    )
    seen = [item async for item in astream_plan(validated, toy_registry, toy_erp, caller=DEMO_CALLER)]
    assert [(index, outcome.error_kind) for index, outcome in seen] == [(0, "refused"), (1, "refused")]
    assert seen[1][1].error == "Not executed: it depends on a, which failed."
