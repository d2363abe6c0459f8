"""Facts: expressions over the operation registry, evaluated against the ERP database at scoring time.

A fact reads like ``mejor_cliente(anio=2025).cliente`` or
``top_productos(anio=2025, limite=3).productos[0].producto``: one operation call with keyword arguments,
then attribute and index steps into its result. An argument is a literal or another fact, so a dependent
question is checked without typing a name in:
``compras_cliente(cliente=mejor_cliente(anio=2024).cliente, anio=2026).total``. Expressions are parsed with
:mod:`ast` and only that shape is accepted: nothing is ever ``eval``-ed.
"""

from __future__ import annotations

import ast
import copy
import json
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from shared.erp.database import Erp
from shared.operations.registry import OperationRegistry
from shared.security import DEMO_CALLER, Caller

FACT_KEY = "$fact"
"""A mapping ``{"$fact": "expr"}`` inside expected parameters or state stands for the fact's value."""


class FactSyntaxError(ValueError):
    """The text is not a fact expression of the accepted shape."""


class FactEvaluationError(LookupError):
    """A well-formed fact could not be evaluated (unknown operation, bad parameters, missing key)."""


@dataclass(frozen=True)
class FactExpr:
    """A parsed fact: one call, then a path into its result."""

    source: str
    operation: str
    params: tuple[tuple[str, Any], ...]
    """Keyword arguments: literal values, or nested :class:`FactExpr` evaluated first."""
    path: tuple[str | int, ...]

    def operations(self) -> Iterator[str]:
        """The operations this fact calls, nested ones included."""
        yield self.operation
        for _, value in self.params:
            if isinstance(value, FactExpr):
                yield from value.operations()


def _literal(node: ast.expr, source: str) -> Any:
    try:
        return ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        raise FactSyntaxError(
            f"{source!r}: only literal values are allowed, not {ast.unparse(node)!r}"
        ) from None


def _argument(node: ast.expr, source: str) -> Any:
    """A keyword argument: a nested fact when it is one, else a literal."""
    if isinstance(node, ast.Call | ast.Attribute | ast.Subscript):
        return _parse_node(node, ast.unparse(node))
    return _literal(node, source)


def parse_fact(source: str) -> FactExpr:
    """Parse ``operation(k=v, …).key[0].key`` into a :class:`FactExpr`, or raise :class:`FactSyntaxError`."""
    try:
        node = ast.parse(source.strip(), mode="eval").body
    except (SyntaxError, ValueError) as exc:  # ValueError: a NUL byte in the text
        raise FactSyntaxError(f"{source!r}: not a valid expression ({exc})") from None
    except (MemoryError, RecursionError):
        raise FactSyntaxError(f"{source!r}: too deeply nested") from None
    return _parse_node(node, source)


def _parse_node(node: ast.expr, source: str) -> FactExpr:
    path: list[str | int] = []
    while not isinstance(node, ast.Call):
        if isinstance(node, ast.Attribute):
            path.insert(0, node.attr)
            node = node.value
        elif isinstance(node, ast.Subscript):
            key = _literal(node.slice, source)
            if not isinstance(key, int | str) or isinstance(key, bool):
                raise FactSyntaxError(f"{source!r}: an index must be an integer or a string")
            path.insert(0, key)
            node = node.value
        else:
            raise FactSyntaxError(f"{source!r}: expected operation(...) followed by .key or [index] steps")
    if not isinstance(node.func, ast.Name):
        raise FactSyntaxError(f"{source!r}: the call must name an operation directly")
    if node.args:
        raise FactSyntaxError(f"{source!r}: pass parameters by name, e.g. mejor_cliente(anio=2025)")
    params: list[tuple[str, Any]] = []
    for keyword in node.keywords:
        if keyword.arg is None:
            raise FactSyntaxError(f"{source!r}: ** arguments are not allowed")
        params.append((keyword.arg, _argument(keyword.value, source)))
    return FactExpr(source=source, operation=node.func.id, params=tuple(params), path=tuple(path))


class FactEvaluator:
    """Evaluates facts against one ERP as one caller, caching each distinct operation call (thread-safe).

    Facts mean what the ERP shows *that caller*: bruno's ``ventas_anuales(anio=2025).total`` is the total of
    his own customers. :meth:`as_caller` gives the evaluator of another caller, sharing the cache.
    """

    def __init__(self, registry: OperationRegistry, erp: Erp, caller: Caller = DEMO_CALLER) -> None:
        self._registry = registry
        self._erp = erp
        self.caller = caller
        self._cache: dict[str, dict[str, Any]] = {}
        self._lock = threading.Lock()

    def as_caller(self, caller: Caller) -> FactEvaluator:
        if caller == self.caller:
            return self
        other = copy.copy(self)
        other.caller = caller
        return other

    def call(self, operation: str, params: dict[str, Any]) -> dict[str, Any]:
        who = f"{self.caller.user_id}|{','.join(sorted(self.caller.roles))}"
        key = f"{who}:{operation}:{json.dumps(params, sort_keys=True, default=str)}"
        with self._lock:
            if key in self._cache:
                return self._cache[key]
        try:
            result = self._registry.execute(self._erp, operation, params, caller=self.caller)
        except Exception as exc:
            raise FactEvaluationError(f"{operation}({params}) failed: {exc}") from exc
        with self._lock:
            self._cache[key] = result
        return result

    def calls(self, fact: str | FactExpr) -> list[tuple[str, dict[str, Any]]]:
        """Every operation call evaluating ``fact`` makes, nested ones first, with their parameters."""
        expr = parse_fact(fact) if isinstance(fact, str) else fact
        made: list[tuple[str, dict[str, Any]]] = []
        for _, arg in expr.params:
            if isinstance(arg, FactExpr):
                made.extend(self.calls(arg))
        params = {name: self.evaluate(arg) if isinstance(arg, FactExpr) else arg for name, arg in expr.params}
        made.append((expr.operation, params))
        return made

    def evaluate(self, fact: str | FactExpr) -> Any:
        """The value a fact denotes in the ERP database."""
        expr = parse_fact(fact) if isinstance(fact, str) else fact
        params = {name: self.evaluate(arg) if isinstance(arg, FactExpr) else arg for name, arg in expr.params}
        value: Any = self.call(expr.operation, params)
        for step in expr.path:
            try:
                if isinstance(value, str):  # a string's characters are not facts
                    raise TypeError
                value = value[step]
            except (KeyError, IndexError, TypeError):
                raise FactEvaluationError(f"{expr.source!r}: no {step!r} in {value!r}") from None
        return value
