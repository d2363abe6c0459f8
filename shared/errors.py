"""The exception tree shared by every package of erp-ai-harness.

::

    ErpAiError                         base of everything this project raises on purpose
    ├── OperationError                 an operation request the ERP refuses (from a model or a caller)
    │   ├── UnknownOperationError      no operation has that name            (.name, .available)
    │   ├── InvalidParametersError     parameters fail the operation's model (.operation, .errors)
    │   └── DomainError                valid request, but the data says no   (.operation)
    │       └── CustomerNotFoundError  no customer matches                   (.query, .suggestions)
    ├── ModelOutputError               the model produced something unusable (.raw)
    ├── ProviderError                  the model provider failed (network, HTTP error, timeout)
    └── ConfigurationError             the developer/user must change a setting or install a package

The split follows pydantic-ai's three families: "the model should do better" (``ModelOutputError``,
``OperationError`` when the request came from a model), "you used the API wrongly"
(``ConfigurationError``), and "the run failed" (``ProviderError``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any


class ErpAiError(Exception):
    """Base class of every error this project raises on purpose."""


class OperationError(ErpAiError):
    """An operation request that the ERP refuses to execute."""


class UnknownOperationError(OperationError):
    """The requested operation does not exist in the registry."""

    def __init__(self, name: str, available: Sequence[str]) -> None:
        self.name = name
        self.available = list(available)
        super().__init__(
            f"Unknown operation {name!r}. Valid operations: {', '.join(self.available) or '(none)'}."
        )


class InvalidParametersError(OperationError):
    """The parameters do not satisfy the operation's parameter model."""

    def __init__(self, operation: str, errors: Sequence[dict[str, Any]] | str) -> None:
        self.operation = operation
        if isinstance(errors, str):
            self.errors: list[dict[str, Any]] = [{"loc": (), "msg": errors}]
        else:
            self.errors = [dict(e) for e in errors]
        details = "; ".join(
            f"{'.'.join(str(p) for p in e.get('loc', ())) or 'parametros'}: {e.get('msg', '')}"
            for e in self.errors
        )
        super().__init__(f"Invalid parameters for {operation!r}: {details}.")


class DomainError(OperationError):
    """The request is well formed, but the ERP's data or rules reject it."""

    def __init__(self, operation: str, message: str) -> None:
        self.operation = operation
        super().__init__(message)


class CustomerNotFoundError(DomainError):
    """No customer matches the given name; ``suggestions`` holds the closest names."""

    def __init__(self, operation: str, query: str, suggestions: Sequence[str]) -> None:
        self.query = query
        self.suggestions = list(suggestions)
        hint = f" Closest customers: {', '.join(self.suggestions)}." if self.suggestions else ""
        super().__init__(operation, f"No customer matches {query!r}.{hint}")


class ModelOutputError(ErpAiError):
    """The model's output could not be parsed or validated."""

    def __init__(self, message: str, raw: str | None = None) -> None:
        self.raw = raw
        super().__init__(message)


class ProviderError(ErpAiError):
    """The model provider failed: connection refused, HTTP error, timeout, or an SDK exception."""


class ConfigurationError(ErpAiError):
    """A setting is missing or wrong, or an optional package is not installed; the message says what to do."""
