"""The ERP's own plain-text rendering of an operation's result, for a reader rather than a program.

Numbers of five digits or more get Spanish thousands separators, keys read as words, lists show their first
rows and how many more there are. Nothing is computed or rounded.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from shared.turn import ExecutedOperation

MAX_ROWS = 10
"""Rows of a list shown before "y N más"."""


_WORDS = {"anio": "año"}
"""Field and parameter names as a reader spells them (the rest read with their underscores as spaces)."""


def heading(operation: str, params: dict[str, Any]) -> str:
    """``Ventas anuales, año 2025``: what an operation answered, in plain words (no call syntax, which a
    user must never read)."""
    words = operation.replace("_", " ")
    details = ", ".join(f"{_key(key)} {_value(value)}" for key, value in params.items())
    return words[:1].upper() + words[1:] + (f", {details}" if details else "")


def with_results(head: str, operations: Sequence[ExecutedOperation], *, none_ran: str = "") -> str:
    """``head``, then the ERP's rendering of the results of the operations that ran (each once: a repeat is
    the same result); ``head`` and ``none_ran`` when none did."""
    ran = [op for op in operations if op.ok and op.repeat_of is None]
    if not ran:
        return f"{head} {none_ran}".rstrip()
    lines = [f"{head} Esto es lo que devolvió el ERP:"]
    for op in ran:
        lines.append(f"- {heading(op.function, op.parameters)}:")
        lines += result_lines(op.result, indent="  ")
    return "\n".join(lines)


def result_lines(result: Any, *, indent: str = "  ") -> list[str]:
    """The lines that show ``result``: ``clave: valor`` per scalar field, then each list's rows."""
    if not isinstance(result, dict):
        return [f"{indent}{_value(result)}"]
    lines = [f"{indent}{_key(key)}: {_value(value)}" for key, value in result.items() if _is_scalar(value)]
    for key, value in result.items():
        if isinstance(value, list):
            lines.append(f"{indent}{_key(key)}:" if value else f"{indent}{_key(key)}: ninguno")
            lines += [f"{indent}  - {_row(row)}" for row in value[:MAX_ROWS]]
            if len(value) > MAX_ROWS:
                lines.append(f"{indent}  … y {len(value) - MAX_ROWS} más")
        elif isinstance(value, dict):
            lines.append(f"{indent}{_key(key)}: {_row(value)}")
    return lines


def for_model(value: Any) -> Any:
    """``value`` as a model reads it: the same JSON shape, with every whole number of five digits or more
    written with Spanish thousands separators (``850000000`` → ``"850.000.000"``), so that an answer copies
    the figure instead of regrouping its digits. Years, months and small counts stay numbers."""
    if isinstance(value, dict):
        return {key: for_model(item) for key, item in value.items()}
    if isinstance(value, list):
        return [for_model(item) for item in value]
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) >= 10_000:
        return _value(value)
    return value


def _row(row: Any) -> str:
    if isinstance(row, dict):
        return " · ".join(f"{_key(key)} {_value(value)}" for key, value in row.items() if _is_scalar(value))
    return _value(row)


def _is_scalar(value: Any) -> bool:
    return value is None or isinstance(value, str | int | float | bool)


def _key(key: Any) -> str:
    return _WORDS.get(str(key), str(key).replace("_", " "))


def _value(value: Any) -> str:
    if value is None:
        return "–"
    if isinstance(value, bool):
        return "sí" if value else "no"
    if isinstance(value, int):
        return _grouped(f"{value:,}", value)
    if isinstance(value, float):
        whole, _, decimals = f"{value:,.2f}".partition(".")
        decimals = decimals.rstrip("0")
        return _grouped(whole, value) + ("," + decimals if decimals else "")
    return str(value)


def _grouped(with_commas: str, value: float) -> str:
    """Spanish grouping: a dot every three digits from five digits on (``2025`` and ``1616`` stay whole)."""
    return with_commas.replace(",", ".") if abs(value) >= 10_000 else with_commas.replace(",", "")
