"""The conversation state a turn stores: what the ERP derives itself, plus what only the model knows.

From the operations of the turn that succeeded, in plan order, the ERP derives ``anio``, ``cliente_actual``,
``producto_actual`` (also from a result that lists exactly one item) and ``ultimas_operaciones`` (call
notation, what a follow-up question repeats), so the model need not spend output tokens on facts. Those keys
win over the model's ``estado``; ``ultimas_operaciones`` is the ERP's alone; the model's other keys are kept;
the old ``ultima_operacion`` key is deleted.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any, Final

from shared.bounds import clip_text
from shared.turn import ExecutedOperation

OPERATIONS_KEY: Final = "ultimas_operaciones"
LEGACY_OPERATION_KEY: Final = "ultima_operacion"
"""What earlier versions asked the model to write; superseded by :data:`OPERATIONS_KEY`."""
_FIELDS: Final[Mapping[str, str]] = {
    "anio": "anio",
    "cliente": "cliente_actual",
    "producto": "producto_actual",
}
"""Parameter / result field → the state key it fills."""
_NAMED_LISTS: Final[Mapping[str, str]] = {"clientes": "cliente", "productos": "producto"}
"""A result list whose single item's ``nombre`` is the field on the right."""
ERP_STATE_KEYS: Final = (*_FIELDS.values(), OPERATIONS_KEY)
"""Every key :func:`derived_state` may write."""

MAX_OPERATIONS: Final = 4
"""Operations kept in ``ultimas_operaciones`` (the last ones of the turn)."""
MAX_OPERATIONS_CHARS: Final = 300
"""Characters of ``ultimas_operaciones``."""
MAX_NAME_CHARS: Final = 120
"""Characters of a derived text value (a customer or product name)."""


def turn_state(
    previous: Mapping[str, Any], operations: Sequence[ExecutedOperation], model_state: Mapping[str, Any]
) -> dict[str, Any]:
    """The state update to store for this turn (merged key by key into the stored state by the store)."""
    derived = derived_state(operations)
    update = {key: value for key, value in model_state.items() if key != OPERATIONS_KEY}
    update.update(derived)
    if OPERATIONS_KEY in derived and LEGACY_OPERATION_KEY in previous:
        update[LEGACY_OPERATION_KEY] = None
    return update


def derived_state(operations: Sequence[ExecutedOperation]) -> dict[str, Any]:
    """The state keys the ERP knows from this turn's successful operations (``{}`` when none succeeded)."""
    succeeded = [op for op in operations if op.ok and op.repeat_of is None]  # a repeat adds nothing
    state: dict[str, Any] = {}
    for op in succeeded:
        state.update(_named(op.parameters))
        if isinstance(op.result, Mapping):
            state.update(_named(op.result))
            state.update(_single_item(op.result))
    if succeeded:
        state[OPERATIONS_KEY] = _operations_text(succeeded)
    return state


def operation_call(funcion: str, parametros: Mapping[str, Any]) -> str:
    """One operation in call notation: ``compras_cliente(cliente="X", anio=2025)`` (values as JSON)."""
    arguments = ", ".join(
        f"{name}={json.dumps(value, ensure_ascii=False, default=str)}" for name, value in parametros.items()
    )
    return f"{funcion}({arguments})"


def _named(data: Mapping[str, Any]) -> dict[str, Any]:
    """The state keys ``data``'s own fields fill (``anio`` an integer, names non-blank text)."""
    found: dict[str, Any] = {}
    for field, key in _FIELDS.items():
        value = data.get(field)
        if field == "anio":
            if isinstance(value, int) and not isinstance(value, bool):
                found[key] = value
        elif isinstance(value, str) and value.strip():
            found[key] = clip_text(value.strip(), MAX_NAME_CHARS)
    return found


def _single_item(result: Mapping[str, Any]) -> dict[str, Any]:
    """What a result listing exactly one item names: the item's fields, or its ``nombre``."""
    found: dict[str, Any] = {}
    for name, value in result.items():
        if not (isinstance(value, list) and len(value) == 1 and isinstance(value[0], Mapping)):
            continue
        item = value[0]
        field = _NAMED_LISTS.get(name)
        if field is not None and isinstance(item.get("nombre"), str):
            found.update(_named({field: item["nombre"]}))
        found.update(_named(item))
    return found


def _operations_text(operations: Sequence[ExecutedOperation]) -> str:
    """The last operations in call notation, joined by ``"; "``, within the bounds (oldest dropped first)."""
    calls = [operation_call(op.function, op.parameters) for op in operations[-MAX_OPERATIONS:]]
    while len(calls) > 1 and len("; ".join(calls)) > MAX_OPERATIONS_CHARS:
        calls.pop(0)
    return clip_text("; ".join(calls), MAX_OPERATIONS_CHARS)
