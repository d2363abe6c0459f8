"""Plan validation before anything runs: operations, parameters, ``$ref`` references, cycles, size.

A reference is an object with the key ``"$ref"`` anywhere inside ``parametros``; its value is a dotted path
whose first segment is another operation's ``id`` and whose other segments are keys or list indices into
that operation's result: ``{"$ref": "op1.productos.0.sku"}``. :func:`validate_plan` returns every problem at
once, plus the execution order as *waves* of mutually independent operations.

A path is checked against the JSON schema of the referenced operation's *result model* before anything runs
(every key a field, a list needs an index, a single value has no fields); below an open part (``Any``,
``dict[str, Any]``, ``extra="allow"``, no result model) it is checked against the actual result when the
reference is resolved.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel

from planner_mode.plan import MAX_PLAN_OPERATIONS, Plan
from shared.errors import InvalidParametersError, OperationForbiddenError, UnknownOperationError
from shared.operations.registry import OperationRegistry
from shared.security import Caller

__all__ = [
    "PlanIssue",
    "UnresolvedReferenceError",
    "ValidatedPlan",
    "find_refs",
    "resolve_refs",
    "validate_plan",
]

REF_KEY = "$ref"
_LIST_INDEX = re.compile(r"-?[0-9]+")
"""A path segment indexing a list (negative counts from the end); ``str.isdigit`` would accept "²"."""


@dataclass(frozen=True)
class PlanIssue:
    """One reason a plan is rejected."""

    message: str
    """Human-readable explanation, naming the operation and parameter concerned."""
    index: int | None = None
    """Index of the offending operation in ``plan.operations``; ``None`` for a whole-plan problem."""


@dataclass(frozen=True)
class ValidatedPlan:
    """The outcome of :func:`validate_plan`."""

    plan: Plan
    issues: list[PlanIssue] = field(default_factory=list)
    """Every problem found; empty when the plan may run."""
    waves: list[list[int]] = field(default_factory=list)
    """Operation indexes grouped in waves; a wave depends only on earlier waves. Empty when invalid."""
    dependencies: dict[int, set[int]] = field(default_factory=dict)
    """For each operation index, the indexes of the operations it references."""

    @property
    def ok(self) -> bool:
        """True when the plan has no issues."""
        return not self.issues


class UnresolvedReferenceError(LookupError):
    """A ``$ref`` path does not exist in the referenced operation's actual result."""


def _is_ref(value: Any) -> bool:
    return isinstance(value, dict) and REF_KEY in value


def find_refs(value: Any) -> list[Any]:
    """Every ``$ref`` value (normally a string) inside ``value``, depth first."""
    if _is_ref(value):
        return [value[REF_KEY]]
    if isinstance(value, dict):
        return [ref for item in value.values() for ref in find_refs(item)]
    if isinstance(value, list):
        return [ref for item in value for ref in find_refs(item)]
    return []


def _follow(data: Any, path: list[str], ref: str) -> Any:
    current = data
    for segment in path:
        if isinstance(current, Mapping) and segment in current:
            current = current[segment]
        elif (
            isinstance(current, list)
            and _LIST_INDEX.fullmatch(segment)
            and -len(current) <= int(segment) < len(current)
        ):
            current = current[int(segment)]
        else:
            raise UnresolvedReferenceError(f"$ref {ref!r}: {segment!r} not found in the referenced result")
    return current


def resolve_refs(value: Any, results: Mapping[str, Any]) -> Any:
    """Replace every ``{"$ref": "id.path"}`` in ``value`` by the referenced part of ``results[id]``."""
    if _is_ref(value):
        ref = value[REF_KEY]
        op_id, *path = str(ref).split(".")
        if op_id not in results:
            raise UnresolvedReferenceError(f"$ref {ref!r}: operation {op_id!r} has no result")
        return _follow(results[op_id], path, str(ref))
    if isinstance(value, dict):
        return {key: resolve_refs(item, results) for key, item in value.items()}
    if isinstance(value, list):
        return [resolve_refs(item, results) for item in value]
    return value


# -- $ref paths against result schemas -----------------------------------------------------------------------

_SCALAR_TYPES = ("string", "integer", "number", "boolean", "null")
_MAX_SCHEMA_HOPS = 64
"""How many ``$ref``/``anyOf`` hops resolving one schema node may take (a guard against cyclic schemas)."""


_SCHEMAS: dict[object, dict[str, Any] | None] = {}
"""Result schemas by model: building one costs milliseconds, and every plan with a ``$ref`` needs one."""


def _result_schema(result_model: object) -> dict[str, Any] | None:
    """The JSON schema of a result as the registry returns it (``model_dump(mode="json")``), or ``None``."""
    if result_model not in _SCHEMAS:
        schema = None
        if (
            isinstance(result_model, type)
            and issubclass(result_model, BaseModel)
            and result_model is not BaseModel
        ):
            try:
                schema = result_model.model_json_schema(by_alias=False, mode="serialization")
            except Exception:  # a model pydantic cannot describe: nothing to check the path against
                schema = None
        _SCHEMAS[result_model] = schema
    return _SCHEMAS[result_model]


def _alternatives(node: Any, root: dict[str, Any]) -> list[dict[str, Any]]:
    """``node`` with ``$ref`` followed and ``anyOf``/``oneOf``/single ``allOf`` flattened."""
    found: list[dict[str, Any]] = []
    pending = [node]
    hops = 0
    while pending and hops < _MAX_SCHEMA_HOPS:
        hops += 1
        item = pending.pop(0)
        if not isinstance(item, dict):
            found.append({})  # ``true`` or something unexpected: anything goes
            continue
        ref = item.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/$defs/"):
            pending.append(root.get("$defs", {}).get(ref.removeprefix("#/$defs/"), {}))
            continue
        options = item.get("anyOf") or item.get("oneOf")
        if isinstance(options, list):
            pending.extend(options)
            continue
        all_of = item.get("allOf")
        if isinstance(all_of, list) and len(all_of) == 1:
            pending.append(all_of[0])
            continue
        found.append(item)
    return found


def _types(node: dict[str, Any]) -> list[str]:
    kind = node.get("type")
    if isinstance(kind, str):
        return [kind]
    if isinstance(kind, list):
        return [k for k in kind if isinstance(k, str)]
    if "properties" in node or "additionalProperties" in node:
        return ["object"]
    if "items" in node or "prefixItems" in node:
        return ["array"]
    if "enum" in node or "const" in node:
        return ["string"]
    return []


def _path_problem(schema: dict[str, Any], operation: str, ref: str, path: list[str]) -> str | None:
    """Why ``path`` cannot exist in a result of ``schema``, or ``None`` when it can (or cannot be told)."""
    nodes = _alternatives(schema, schema)
    for depth, segment in enumerate(path):
        here = ".".join(path[:depth])
        following: list[Any] = []
        fields: list[str] = []
        lists = False
        scalars: list[str] = []
        for node in nodes:
            kinds = _types(node)
            if not kinds:
                return None  # an open schema (``Any``): nothing below it can be checked
            if "object" in kinds:
                properties = node.get("properties")
                extra = node.get("additionalProperties")
                if isinstance(properties, dict) and segment in properties:
                    following.append(properties[segment])
                elif extra not in (None, False) or not isinstance(properties, dict):
                    following.append(extra if isinstance(extra, dict) else {})
                elif isinstance(properties, dict):
                    fields.extend(name for name in properties if name not in fields)
            if "array" in kinds:
                if _LIST_INDEX.fullmatch(segment):
                    prefix = node.get("prefixItems")
                    index = int(segment)
                    if isinstance(prefix, list) and -len(prefix) <= index < len(prefix):
                        following.append(prefix[index])
                    else:
                        following.append(node.get("items", {}))
                else:
                    lists = True
            scalars.extend(kind for kind in kinds if kind in _SCALAR_TYPES and kind not in scalars)
        if not following:
            target = repr(here) if here else "the result"
            if fields:
                where = "fields" if not here else f"fields of {here}"
                return (
                    f"{operation} results have no field {'.'.join(path[: depth + 1])!r} "
                    f"({where}: {', '.join(fields)})"
                )
            if lists:
                example = ".".join([ref.split(".", 1)[0], *path[:depth], "0", *path[depth:]])
                return f"in {operation} results, {target} is a list: use an index, as in {example!r}"
            kinds_text = " or ".join(scalars) or "value"
            return f"in {operation} results, {target} is a single value ({kinds_text}) with no fields"
        nodes = [alternative for node in following for alternative in _alternatives(node, schema)]
    return None


def _label(index: int, funcion: str, op_id: str | None) -> str:
    return f"operation {index + 1} ({funcion}{', id ' + op_id if op_id else ''})"


def _check_parameters(
    registry: OperationRegistry, funcion: str, params: dict[str, Any], label: str, caller: Caller
) -> list[str]:
    """Check the caller may run ``funcion``, then validate the parameters that hold no reference
    (referenced ones are checked once resolved)."""
    referenced = {key for key, value in params.items() if find_refs(value)}
    concrete = {key: value for key, value in params.items() if key not in referenced}
    try:
        registry.validate(funcion, concrete, caller=caller)
    except OperationForbiddenError as exc:
        return [f"{label}: {exc}"]
    except InvalidParametersError as exc:
        messages = [
            f"{'.'.join(str(p) for p in err.get('loc', ())) or 'parametros'}: {err.get('msg', '')}"
            for err in exc.errors
            if not (err.get("loc") and str(err["loc"][0]) in referenced)
        ]
        if messages:
            return [f"{label}: invalid parameters: {'; '.join(messages)}"]
    return []


def _waves(count: int, dependencies: dict[int, set[int]]) -> tuple[list[list[int]], set[int]]:
    """Kahn's algorithm by levels; returns the waves and the indexes left over (those in a cycle)."""
    remaining = set(range(count))
    done: set[int] = set()
    waves: list[list[int]] = []
    while remaining:
        ready = sorted(i for i in remaining if dependencies.get(i, set()) <= done)
        if not ready:
            break
        waves.append(ready)
        done.update(ready)
        remaining.difference_update(ready)
    return waves, remaining


def validate_plan(
    plan: Plan,
    registry: OperationRegistry,
    *,
    caller: Caller,
    max_operations: int = MAX_PLAN_OPERATIONS,
) -> ValidatedPlan:
    """Check ``plan`` against ``registry`` without executing anything.

    Rejected: more than ``max_operations`` operations, duplicate ids, unknown operations, parameters that
    fail the operation's model, malformed or dangling ``$ref`` (unknown id, or a path the referenced
    operation's result model does not have: see the module docstring), self references and reference cycles.
    """
    operations = plan.operations
    if len(operations) > max_operations:
        return ValidatedPlan(
            plan=plan,
            issues=[
                PlanIssue(
                    f"The plan has {len(operations)} operations; at most {max_operations} are allowed "
                    "per question."
                )
            ],
        )
    issues: list[PlanIssue] = []
    ids: dict[str, int] = {}
    for index, op in enumerate(operations):
        if op.id is None:
            continue
        if op.id in ids:
            issues.append(PlanIssue(f"{_label(index, op.function, op.id)}: duplicate id {op.id!r}", index))
        else:
            ids[op.id] = index

    dependencies: dict[int, set[int]] = {}
    for index, op in enumerate(operations):
        label = _label(index, op.function, op.id)
        known = op.function in registry
        if not known:
            valid = registry.names(caller)
            issues.append(PlanIssue(f"{label}: {UnknownOperationError(op.function, valid)}", index))
        else:
            issues.extend(
                PlanIssue(msg, index)
                for msg in _check_parameters(registry, op.function, op.parameters, label, caller)
            )
        deps: set[int] = set()
        for ref in find_refs(op.parameters):
            if not isinstance(ref, str) or not ref.strip():
                issues.append(PlanIssue(f'{label}: malformed $ref {ref!r}; expected "id.campo"', index))
                continue
            target_id, *path = ref.split(".")
            target = ids.get(target_id)
            if target is None:
                issues.append(
                    PlanIssue(f"{label}: dangling $ref {ref!r}: no operation has id {target_id!r}", index)
                )
                continue
            if target == index:
                issues.append(PlanIssue(f"{label}: $ref {ref!r} refers to the operation itself", index))
                continue
            target_op = operations[target].function
            if path and target_op in registry:
                schema = _result_schema(registry.get(target_op).result_model)
                problem = _path_problem(schema, target_op, ref, path) if schema is not None else None
                if problem is not None:
                    issues.append(PlanIssue(f"{label}: dangling $ref {ref!r}: {problem}", index))
                    continue
            deps.add(target)
        dependencies[index] = deps

    waves, cyclic = _waves(len(operations), dependencies)
    if cyclic:
        names = ", ".join(_label(i, operations[i].function, operations[i].id) for i in sorted(cyclic))
        issues.append(PlanIssue(f"Reference cycle (or dependency on one) among: {names}"))
    if issues:
        return ValidatedPlan(plan=plan, issues=issues, dependencies=dependencies)
    return ValidatedPlan(plan=plan, waves=waves, dependencies=dependencies)
