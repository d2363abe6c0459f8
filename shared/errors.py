"""The exception tree shared by every package of erp-ai-harness.

::

    ErpAiError                         base of everything this project raises on purpose
    ├── OperationError                 an operation request the ERP refuses (from a model or a caller)
    │   ├── UnknownOperationError      no operation has that name            (.name, .available)
    │   ├── InvalidParametersError     parameters fail the operation's model (.operation, .errors)
    │   └── DomainError                valid request, but the data says no   (.operation)
    │   │   ├── CustomerNotFoundError  no customer matches                   (.query, .suggestions)
    │   │   └── CustomerOutOfScopeError the customer is not the caller's     (.customer)
    │   ├── OperationForbiddenError    the caller may not run it             (.operation, .missing)
    │   └── OperationInternalError     the operation broke unexpectedly      (.operation, .reference)
    ├── ModelOutputError               the model produced something unusable (.raw)
    │   └── OutputLimitError           the output was cut at the max_tokens cap (.max_tokens)
    ├── ProviderError                  the model provider failed (network, HTTP error, SDK error)
    │   └── ProviderTimeoutError       the provider did not answer within the timeout (.timeout)
    ├── InputError                     the caller's input is refused before any model call
    │   └── ConversationAccessDenied   the conversation belongs to another user (.conversation_id)
    ├── StorageError                   the ERP's database or memory store cannot be read or written
    └── ConfigurationError             the developer/user must change a setting or install a package

The split follows pydantic-ai's three families: "the model should do better" (``ModelOutputError``,
``OperationError`` when the request came from a model), "you used the API wrongly"
(``ConfigurationError``, ``InputError``), and "the run failed" (``ProviderError``, ``StorageError``).
How each becomes a turn's failure kind is :mod:`shared.failures`.
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


class CustomerOutOfScopeError(DomainError):
    """The customer exists but is outside the caller's data scope (not one of their customers)."""

    def __init__(self, operation: str, customer: str) -> None:
        self.customer = customer
        super().__init__(
            operation, f"No tiene acceso a los datos del cliente {customer!r}: no es uno de sus clientes."
        )


class OperationForbiddenError(OperationError):
    """The caller's permissions do not allow this operation; it was not executed."""

    def __init__(self, operation: str, missing: Sequence[str]) -> None:
        self.operation = operation
        self.missing = sorted(missing)
        # The permission names stay in ``missing`` (for logs): this text reaches the model and the AI server.
        super().__init__(f"No tiene permiso para la operación {operation!r}; no se ejecutó.")


INTERNAL_ERROR_PREFIX = "error interno (ref "
"""How every :class:`OperationInternalError` message starts, also once it is only text (a tool result)."""


class OperationInternalError(OperationError):
    """An operation failed for an unexpected reason (a bug, a corrupt page, a lost connection).

    The message the model and the user see is only ``error interno (ref XXXX)``: internal exception text (SQL
    statements, parameters) never reaches a prompt or an answer. The full exception is logged under
    ``reference``.
    """

    def __init__(self, operation: str, reference: str) -> None:
        self.operation = operation
        self.reference = reference
        super().__init__(f"{INTERNAL_ERROR_PREFIX}{reference})")


class ModelOutputError(ErpAiError):
    """The model's output could not be parsed or validated."""

    def __init__(self, message: str, raw: str | None = None) -> None:
        self.raw = raw
        super().__init__(message)


class OutputLimitError(ModelOutputError):
    """The model hit its output cap (``finish_reason=length``, ``done_reason=length``, ``MAX_TOKENS``)."""

    def __init__(self, max_tokens: int | None, raw: str | None = None) -> None:
        self.max_tokens = max_tokens
        limit = f"{max_tokens} tokens" if max_tokens is not None else "the output-token limit"
        super().__init__(f"The model's answer was cut at {limit} (max_tokens) before it was complete.", raw)


class ProviderError(ErpAiError):
    """The model provider failed: connection refused, HTTP error, or an SDK exception."""


class ProviderTimeoutError(ProviderError):
    """The provider did not answer within the request timeout."""

    def __init__(self, message: str, timeout: float | None = None) -> None:
        self.timeout = timeout
        super().__init__(message)


class InputError(ErpAiError):
    """The caller's input (conversation id, question) is refused before any model call; says what is wrong."""


class ConversationAccessDenied(InputError):
    """The conversation belongs to another user: refused before its context is read or a model is called."""

    def __init__(self, conversation_id: str) -> None:
        self.conversation_id = conversation_id
        super().__init__(
            f"The conversation {conversation_id!r} belongs to another user; start a new conversation."
        )


class StorageError(ErpAiError):
    """The ERP's database or the memory store cannot be opened, read or written; says what to check."""


class ConfigurationError(ErpAiError):
    """A setting is missing or wrong, or an optional package is not installed; the message says what to do."""
