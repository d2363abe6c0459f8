"""Fault injection for reliability tests: the offline model misbehaves like real models and providers do.

A :class:`FaultConfig` picks one :data:`FaultMode` and how often it strikes. Decisions are deterministic:
the model numbers its calls, and call ``n`` is faulty when ``Random(f"{seed}:{n}").random() < rate``. The
same seed and the same sequence of calls therefore give the same faults on every run and every machine.

Modes and what they do to a reply:

- ``malformed_json``: JSON text (a plan, an answer, tool-call arguments) becomes syntactically invalid.
- ``truncated_json``: JSON text is cut in the middle, as when a model hits its output-token limit.
- ``unknown_function``: a plan names an operation that does not exist; a tool call uses a hallucinated name.
- ``wrong_types``: parameters have the wrong JSON type, e.g. ``"anio": "dos mil veinticinco"``.
- ``empty``: the reply has no content and no tool calls.
- ``provider_error``: the call raises :class:`OfflineProviderError` (a :class:`~shared.errors.ProviderError`).
"""

from __future__ import annotations

import random
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from shared.errors import ProviderError

FaultMode = Literal[
    "malformed_json", "truncated_json", "unknown_function", "wrong_types", "empty", "provider_error"
]
"""The closed set of fault modes."""

HALLUCINATED_FUNCTION = "consultar_ventas_totales"
"""The operation / tool name the ``unknown_function`` fault invents (it is in no catalog)."""


class OfflineProviderError(ProviderError):
    """The simulated provider failure raised by the ``provider_error`` fault mode."""


class FaultConfig(BaseModel):
    """Which fault to inject, how often (0–1) and with which seed."""

    model_config = ConfigDict(frozen=True)

    mode: FaultMode = Field(description="What goes wrong.")
    rate: float = Field(default=1.0, ge=0.0, le=1.0, description="Probability that a given call is faulty.")
    seed: int = Field(default=0, description="Seed of the deterministic per-call decision.")

    def strikes(self, call_index: int) -> bool:
        """Whether call number ``call_index`` (0-based, per model instance) is faulty."""
        if self.rate >= 1.0:
            return True
        if self.rate <= 0.0:
            return False
        return random.Random(f"{self.seed}:{call_index}").random() < self.rate


def malform_json(text: str) -> str:
    """Make JSON text invalid the way models do: a missing colon, a trailing comma, no closing brace."""
    stripped = text.rstrip()
    if stripped.endswith("}"):
        stripped = stripped[:-1].rstrip() + ","
    else:
        stripped += ",}"
    return stripped.replace('":', '"', 1)


def truncate_json(text: str) -> str:
    """Cut JSON text roughly in half (at least one character is always removed)."""
    if len(text) <= 1:
        return ""
    return text[: max(1, min(len(text) - 1, len(text) // 2))]


_UNITS = ["cero", "uno", "dos", "tres", "cuatro", "cinco", "seis", "siete", "ocho", "nueve", "diez",
          "once", "doce", "trece", "catorce", "quince", "dieciséis", "diecisiete", "dieciocho", "diecinueve",
          "veinte", "veintiuno", "veintidós", "veintitrés", "veinticuatro", "veinticinco", "veintiséis",
          "veintisiete", "veintiocho", "veintinueve"]  # fmt: skip
_TENS = {3: "treinta", 4: "cuarenta", 5: "cincuenta", 6: "sesenta", 7: "setenta", 8: "ochenta", 9: "noventa"}


def spanish_number(value: int) -> str:
    """Spell out ``0 <= value < 10000`` in Spanish: ``2025`` → ``"dos mil veinticinco"``."""
    if not 0 <= value < 10000:
        return str(value)
    thousands, rest = divmod(value, 1000)
    hundreds, below = divmod(rest, 100)
    words: list[str] = []
    if thousands:
        words.append("mil" if thousands == 1 else f"{_UNITS[thousands]} mil")
    if hundreds:
        names = {1: "ciento" if below else "cien", 5: "quinientos", 7: "setecientos", 9: "novecientos"}
        words.append(names.get(hundreds, f"{_UNITS[hundreds]}cientos"))
    if below or not words:
        if below < 30:
            words.append(_UNITS[below])
        else:
            tens, units = divmod(below, 10)
            words.append(_TENS[tens] + (f" y {_UNITS[units]}" if units else ""))
    return " ".join(words)


def wrong_types(params: dict[str, Any]) -> dict[str, Any]:
    """Give parameters the wrong JSON types: numbers spelled out, strings turned into lists."""
    broken: dict[str, Any] = {}
    for key, value in params.items():
        if isinstance(value, bool) or value is None:
            broken[key] = value
        elif isinstance(value, int):
            broken[key] = spanish_number(value)
        elif isinstance(value, str):
            broken[key] = [value]
        else:
            broken[key] = value
    if not broken:
        broken["anio"] = "este año"
    return broken
