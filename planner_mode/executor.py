"""Run a validated plan against the ERP: independent operations concurrently, dependent ones in order.

The operations of one wave (:class:`~planner_mode.validation.ValidatedPlan`) run at the same time, each
handler in a thread; a wave starts when the previous one has finished, so every ``$ref`` resolves from results
that exist. An operation whose dependency failed is not run and says why. An operation's failure never
raises: each outcome carries its result or its error.

An operation identical to one the plan already ran (same name, same parameters once ``$ref`` s are resolved
and the operation's model has validated them) runs once: the repeat carries the earlier outcome, result or
error, with ``repeat_of`` naming the earlier operation (a plan asks for all its operations at once, so an
identical one is the same request, with nothing to retry).
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncGenerator
from typing import Any

from planner_mode.plan import PlannedOperation
from planner_mode.validation import UnresolvedReferenceError, ValidatedPlan, resolve_refs
from shared.erp.database import Erp
from shared.errors import DomainError, OperationError, OperationInternalError
from shared.operations.registry import OperationRegistry, internal_error
from shared.security import Caller
from shared.turn import ExecutedOperation, OperationErrorKind

__all__ = ["astream_plan"]


def _run_one(
    registry: OperationRegistry, erp: Erp, caller: Caller, op: PlannedOperation, params: dict[str, Any]
) -> ExecutedOperation:
    started = time.perf_counter()
    result: Any = None
    error: str | None = None
    kind: OperationErrorKind | None = None
    try:
        result = registry.execute(erp, op.function, params, caller=caller)
    except OperationError as exc:
        error, kind = str(exc), _error_kind(exc)
    except Exception as exc:  # an ERP bug must not abort the turn; its text must not reach the model
        error, kind = str(internal_error(op.function, exc)), "internal"
    duration_ms = (time.perf_counter() - started) * 1000
    return ExecutedOperation(
        function=op.function,
        parameters=params,
        id=op.id,
        result=result,
        error=error,
        error_kind=kind,
        duration_ms=duration_ms,
    )


def _identity(
    registry: OperationRegistry, caller: Caller, function: str, params: dict[str, Any]
) -> str | None:
    """The canonical form of a call: its name and its parameters as the operation's model validates them;
    ``None`` when they do not validate (such an operation runs, and fails, on its own)."""
    try:
        validated = registry.validate(function, params, caller=caller)
    except OperationError:
        return None
    return json.dumps([function, validated.model_dump(mode="json")], sort_keys=True, ensure_ascii=False)


def _error_kind(error: OperationError) -> OperationErrorKind:
    if isinstance(error, OperationInternalError):
        return "internal"
    if isinstance(error, DomainError):
        return "refused"
    return "invalid"  # unknown or forbidden operation, invalid parameters


async def astream_plan(
    validated: ValidatedPlan,
    registry: OperationRegistry,
    erp: Erp,
    *,
    caller: Caller,
    max_workers: int = 4,
) -> AsyncGenerator[tuple[int, ExecutedOperation], None]:
    """Execute a valid plan as ``caller`` (whose permissions and data scope the ERP applies) without blocking
    the event loop, yielding each operation's ``(plan index, outcome)`` as soon as it is known (one per
    planned operation). ``ValueError`` for a plan that is not valid (check ``ValidatedPlan.ok`` first).

    Operations of a wave run concurrently, each handler in a thread, at most ``max_workers`` at a time; an
    operation identical to an earlier one is not run again (its outcome says ``repeat_of``) and is yielded
    as soon as the outcome it repeats is known. Closing the iterator early stops starting operations (those
    already in a thread finish there).
    """
    if not validated.ok:
        raise ValueError("executing a plan needs a valid plan; check ValidatedPlan.ok first")
    operations = validated.plan.operations
    done: dict[int, ExecutedOperation] = {}
    results_by_id: dict[str, Any] = {}
    ran: dict[str, int] = {}  # canonical call (_identity) → index of the operation that runs it
    slots = asyncio.Semaphore(max_workers)

    async def run_one(index: int, params: dict[str, Any]) -> tuple[int, ExecutedOperation]:
        async with slots:
            return index, await asyncio.to_thread(_run_one, registry, erp, caller, operations[index], params)

    def settle(index: int, outcome: ExecutedOperation) -> tuple[int, ExecutedOperation]:
        done[index] = outcome
        op_id = operations[index].id
        if op_id is not None and outcome.ok:  # resolvable by later waves
            results_by_id[op_id] = outcome.result
        return index, outcome

    def repeat(index: int, params: dict[str, Any], earlier: int) -> tuple[int, ExecutedOperation]:
        first, op = done[earlier], operations[index]
        return settle(
            index,
            ExecutedOperation(
                function=op.function,
                parameters=params,
                id=op.id,
                result=first.result,
                error=first.error,
                error_kind=first.error_kind,
                repeat_of=operations[earlier].id or f"#{earlier}",
            ),
        )

    for wave in validated.waves:
        runnable: list[tuple[int, dict[str, Any]]] = []
        repeats: dict[int, list[tuple[int, dict[str, Any]]]] = {}  # runs in this wave → its repeats in it
        for index in wave:  # settled without running: a failed dependency, an unresolved ``$ref``, a repeat
            op = operations[index]
            failed = [operations[d] for d in sorted(validated.dependencies.get(index, ())) if not done[d].ok]
            if failed:
                names = ", ".join(f.id or f.function for f in failed)
                error, kind = f"Not executed: it depends on {names}, which failed.", "refused"
            else:
                try:
                    params = resolve_refs(op.parameters, results_by_id)
                except UnresolvedReferenceError as exc:
                    error, kind = str(exc), "invalid"
                else:
                    key = _identity(registry, caller, op.function, params)
                    earlier = ran.get(key) if key is not None else None
                    if earlier is None:
                        if key is not None:
                            ran[key] = index
                        runnable.append((index, params))
                    elif earlier in done:  # ran in an earlier wave
                        yield repeat(index, params, earlier)
                    else:
                        repeats.setdefault(earlier, []).append((index, params))
                    continue
            yield settle(
                index,
                ExecutedOperation(
                    function=op.function, parameters=op.parameters, id=op.id, error=error, error_kind=kind
                ),
            )
        tasks = [asyncio.ensure_future(run_one(index, params)) for index, params in runnable]
        try:
            for finished in asyncio.as_completed(tasks):
                index, outcome = await finished
                yield settle(index, outcome)
                for same, params in repeats.get(index, ()):
                    yield repeat(same, params, index)
        finally:
            for task in tasks:
                task.cancel()
