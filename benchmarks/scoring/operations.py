"""BFCL-style operation matching: same calls, same parameters after normalisation, any order.

Parameters are normalised before comparing: when a registry is given, both sides are validated against the
operation's parameter model (so defaults are filled in and ``"2025"`` becomes ``2025``); then numbers compare
as numbers (``2025 == 2025.0 == "2025"``) and strings compare case- and accent-insensitively, ignoring
spaces and the punctuation ``,./-_*^'"`` as BFCL's ``standardize_string`` does (``"Comercial Guaraní S.A."``
equals ``"comercial guarani SA"``). With the ERP's names (:class:`~benchmarks.scoring.entities.ErpNames`), a
string that names exactly one customer stands for that customer's full name first, so ``"hotel parana"``
equals ``"Hotel Paraná S.A."`` as the ERP resolves both to one customer (and as the answer check reads them).

Calls form a multiset, except that repeating a call is no mistake (both modes run an identical operation once
per turn and report the repeat): an extra call or a missing one fails the match, and each distinct executed
call counts as many times as it is expected, or once when it is not expected.
"""

from __future__ import annotations

import contextlib
import json
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pydantic import ValidationError

from benchmarks.scoring.entities import ErpNames
from shared.operations.registry import OperationRegistry
from shared.text import fold

_NUMERIC = re.compile(r"-?\d+(?:\.\d+)?")
_BFCL_IGNORED = re.compile(r"[\s,./\-_*^'\"]")


def normalize_value(value: Any) -> Any:
    """A comparable form of a parameter value (numbers unified, strings folded, containers recursed)."""
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, int | float):
        return int(value) if float(value).is_integer() else float(value)
    if isinstance(value, str):
        text = value.strip()
        if _NUMERIC.fullmatch(text):
            return normalize_value(float(text))
        return _standardize(text)
    if isinstance(value, Mapping):
        return {str(k): normalize_value(v) for k, v in sorted(value.items()) if v is not None}
    if isinstance(value, list | tuple):
        return [normalize_value(v) for v in value]
    return _standardize(str(value))


def _standardize(text: str) -> str:
    """BFCL's string standardisation, accent-folded: no spaces, no ``,./-_*^'"``, lower case."""
    return _BFCL_IGNORED.sub("", fold(text))


def normalize_params(
    name: str, params: Mapping[str, Any] | None, registry: OperationRegistry | None = None
) -> dict[str, Any]:
    """Parameters as compared: validated (defaults filled) when possible, then normalised."""
    raw: dict[str, Any] = dict(params or {})
    if registry is not None and name in registry:
        with contextlib.suppress(ValidationError):  # only to fill defaults and coerce types, for anyone
            raw = registry.get(name).params_model.model_validate(raw).model_dump(mode="json")
    normalized = normalize_value(raw)
    assert isinstance(normalized, dict)
    return normalized


def _by_identity(value: Any, names: ErpNames) -> Any:
    """``value`` with every string that names exactly one customer replaced by that customer's name."""
    if isinstance(value, str):
        return names.canonical_customer(value) or value
    if isinstance(value, Mapping):
        return {key: _by_identity(item, names) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_by_identity(item, names) for item in value]
    return value


def canonical_call(
    name: str,
    params: Mapping[str, Any] | None,
    registry: OperationRegistry | None = None,
    *,
    names: ErpNames | None = None,
) -> str:
    """One call as a canonical string: ``name {json params}``; with ``names``, customers by identity."""
    if names is not None:
        params = _by_identity(dict(params or {}), names)
    payload = json.dumps(normalize_params(name, params, registry), sort_keys=True, ensure_ascii=False)
    return f"{name}({payload})"


@dataclass(frozen=True)
class OperationMatch:
    """The outcome of comparing expected calls with executed ones."""

    ok: bool
    missing: list[str] = field(default_factory=list)
    """Expected calls that were not executed."""
    extra: list[str] = field(default_factory=list)
    """Executed calls that were not expected."""

    def describe(self) -> str:
        """A one-line explanation for reports."""
        if self.ok:
            return "operations match"
        parts = []
        if self.missing:
            parts.append(f"missing {', '.join(self.missing)}")
        if self.extra:
            parts.append(f"unexpected {', '.join(self.extra)}")
        return "; ".join(parts)


def _call_text(name: str, params: Mapping[str, Any] | None) -> str:
    """A call as written, for reports: ``name({json params})``."""
    payload = json.dumps(dict(params or {}), sort_keys=True, ensure_ascii=False, default=str)
    return f"{name}({payload})"


def _surplus(calls: Sequence[tuple[str, str]], surplus: Counter[str]) -> list[str]:
    """The written form of the calls left over in ``surplus`` (canonical key → count)."""
    left = Counter(surplus)
    shown = []
    for key, text in calls:
        if left[key] > 0:
            shown.append(text)
            left[key] -= 1
    return sorted(shown)


def match_operations(
    expected: Sequence[Mapping[str, Any]],
    actual: Sequence[Mapping[str, Any]],
    registry: OperationRegistry | None = None,
    *,
    names: ErpNames | None = None,
) -> OperationMatch:
    """Compare calls given as ``{"funcion": …, "parametros": {…}}`` mappings.

    Calls are compared in their canonical form (with ``names``, a customer by identity); an executed call
    repeated counts no more than it is expected (once when unexpected). ``missing`` and ``extra`` show the
    calls as they were written.
    """

    def keyed(calls: Sequence[Mapping[str, Any]]) -> list[tuple[str, str]]:
        return [
            (
                canonical_call(str(c["funcion"]), c.get("parametros"), registry, names=names),
                _call_text(str(c["funcion"]), c.get("parametros")),
            )
            for c in calls
        ]

    want, got = keyed(expected), keyed(actual)
    want_count = Counter(k for k, _ in want)
    got_count = Counter(
        {key: min(count, max(want_count[key], 1)) for key, count in Counter(k for k, _ in got).items()}
    )
    missing = _surplus(want, want_count - got_count)
    extra = _surplus(got, got_count - want_count)
    return OperationMatch(ok=not missing and not extra, missing=missing, extra=extra)
