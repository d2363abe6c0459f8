"""Run a validated plan against the ERP: independent operations concurrently, dependent ones in order.

Operations of one wave (see :class:`~planner_mode.validation.ValidatedPlan`) run in a small thread pool; a
wave starts when the previous one has finished, so every ``$ref`` is resolved from results that exist. An
operation whose dependency failed is not run and reports why. Nothing here raises for an operation's failure:
each outcome carries its result or its error.
"""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from planner_mode.validation import UnresolvedReferenceError, ValidatedPlan, resolve_refs
from shared.erp.database import Erp
from shared.errors import DomainError, OperationError, OperationInternalError
from shared.operations.registry import OperationRegistry, internal_error
from shared.security import Caller
from shared.turn import ExecutedOperation, OperationErrorKind

__all__ = ["execute_plan"]


def _run_one(
    registry: OperationRegistry,
    erp: Erp,
    caller: Caller,
    funcion: str,
    op_id: str | None,
    params: dict[str, Any],
) -> ExecutedOperation:
    started = time.perf_counter()
    result: Any = None
    error: str | None = None
    kind: OperationErrorKind | None = None
    try:
        result = registry.execute(erp, funcion, params, caller=caller)
    except OperationError as exc:
        error, kind = str(exc), _error_kind(exc)
    except Exception as exc:  # an ERP bug must not abort the turn; its text must not reach the model
        error, kind = str(internal_error(funcion, exc)), "internal"
    duration_ms = (time.perf_counter() - started) * 1000
    return ExecutedOperation(
        funcion=funcion,
        parametros=params,
        id=op_id,
        result=result,
        error=error,
        error_kind=kind,
        duration_ms=duration_ms,
    )


def _error_kind(error: OperationError) -> OperationErrorKind:
    if isinstance(error, OperationInternalError):
        return "internal"
    if isinstance(error, DomainError):
        return "refused"
    return "invalid"  # unknown or forbidden operation, invalid parameters


def execute_plan(
    validated: ValidatedPlan,
    registry: OperationRegistry,
    erp: Erp,
    *,
    caller: Caller,
    max_workers: int = 4,
) -> list[ExecutedOperation]:
    """Execute a valid plan as ``caller`` (whose permissions and data scope the ERP applies); return one
    :class:`ExecutedOperation` per planned operation, in plan order."""
    if not validated.ok:
        raise ValueError("execute_plan() needs a valid plan; check ValidatedPlan.ok first")
    operations = validated.plan.operaciones
    done: dict[int, ExecutedOperation] = {}
    results_by_id: dict[str, Any] = {}
    workers = max(1, min(max_workers, max((len(w) for w in validated.waves), default=1)))
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="planner-op") as pool:
        for wave in validated.waves:
            runnable: list[tuple[int, dict[str, Any]]] = []
            for index in wave:
                op = operations[index]
                failed = [
                    operations[d] for d in sorted(validated.dependencies.get(index, ())) if not done[d].ok
                ]
                if failed:
                    names = ", ".join(f.id or f.funcion for f in failed)
                    done[index] = ExecutedOperation(
                        funcion=op.funcion,
                        parametros=op.parametros,
                        id=op.id,
                        error=f"Not executed: it depends on {names}, which failed.",
                        error_kind="refused",
                    )
                    continue
                try:
                    params = resolve_refs(op.parametros, results_by_id)
                except UnresolvedReferenceError as exc:
                    done[index] = ExecutedOperation(
                        funcion=op.funcion,
                        parametros=op.parametros,
                        id=op.id,
                        error=str(exc),
                        error_kind="invalid",
                    )
                    continue
                runnable.append((index, params))
            if len(runnable) == 1:
                index, params = runnable[0]
                done[index] = _run_one(
                    registry, erp, caller, operations[index].funcion, operations[index].id, params
                )
            else:
                futures = {
                    index: pool.submit(
                        _run_one,
                        registry,
                        erp,
                        caller,
                        operations[index].funcion,
                        operations[index].id,
                        params,
                    )
                    for index, params in runnable
                }
                for index, future in futures.items():
                    done[index] = future.result()
            for index, _ in runnable:
                op_id = operations[index].id
                if op_id is not None and done[index].ok:
                    results_by_id[op_id] = done[index].result
    return [done[index] for index in range(len(operations))]
