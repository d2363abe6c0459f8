"""The exception tree shared by every package of erp-ai-harness.

::

    ErpAiError                         base of everything this project raises on purpose
    ├── OperationError                 an operation request the ERP refuses (from a model or a caller)
    │   ├── UnknownOperationError      no operation has that name            (.name, .available)
    │   ├── InvalidParametersError     parameters fail the operation's model (.operation, .errors)
    │   └── DomainError                valid request, but the data says no   (.operation)
    │   │   └── CustomerNotFoundError  no customer matches                   (.query, .suggestions)
    │   │       └── CustomerOutOfScopeError not the caller's, said as not found (.customer)
    │   ├── OperationForbiddenError    the caller may not run it             (.operation, .missing)
    │   └── OperationInternalError     the operation broke unexpectedly      (.operation, .reference)
    ├── ModelOutputError               the model produced something unusable (.raw)
    │   └── OutputLimitError           the output was cut at the max_tokens cap (.max_tokens)
    │       └── ReplyTooLongError      the reply ran past what its cap can hold (.max_chars)
    ├── ProviderError                  the model provider failed (network, HTTP error, SDK error)
    │   └── ProviderTimeoutError       the provider did not answer within the timeout (.timeout)
    ├── InputError                     the caller's input is refused before any model call
    │   └── ConversationAccessDenied   the conversation belongs to another user (.conversation_id)
    ├── TurnLimitError                 a per-turn bound stopped the turn (operations asked for)
    ├── StorageError                   the ERP's database or memory store cannot be read or written
    └── ConfigurationError             the developer/user must change a setting or install a package

Families as in pydantic-ai: "the model should do better" (``ModelOutputError``, ``OperationError``), "you used
the API wrongly" (``ConfigurationError``, ``InputError``), "the run failed" (``ProviderError``,
``StorageError``). :class:`OperationError` messages reach the model and the user, so they are Spanish, from
:data:`OPERATION_ERROR_TEXTS`; the other families speak English.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

OPERATION_ERROR_TEXTS: dict[str, str] = {
    "unknown_operation": "La operación {name!r} no existe. Operaciones válidas: {available}.",
    "invalid_parameters": "Parámetros inválidos para {operation!r}: {details}.",
    "customer_not_found": "Ningún cliente al que usted tenga acceso coincide con {query!r}.{hint}",
    "customer_suggestions": " Clientes más parecidos: {names}.",
    "forbidden": "No tiene permiso para la operación {operation!r}; no se ejecutó.",
    "no_sales": "No hay ventas en {anio}, así que no hay mejor cliente.",
    "unknown_caller": "El usuario {user!r} no figura entre los usuarios del ERP, así que no tiene clientes "
    "asignados; no se ejecutó.",
}
"""The texts of the ERP's operation errors, in the assistant's language (Spanish), by error."""

_PARAMETER_PROBLEMS: dict[str, str] = {
    "missing": "falta este parámetro",
    "extra_forbidden": "parámetro desconocido",
    "int_parsing": "debe ser un número entero",
    "int_type": "debe ser un número entero",
    "int_from_float": "debe ser un número entero",
    "float_parsing": "debe ser un número",
    "float_type": "debe ser un número",
    "string_type": "debe ser un texto",
    "bool_type": "debe ser verdadero o falso",
    "bool_parsing": "debe ser verdadero o falso",
    "greater_than_equal": "debe ser mayor o igual que {ge}",
    "greater_than": "debe ser mayor que {gt}",
    "less_than_equal": "debe ser menor o igual que {le}",
    "less_than": "debe ser menor que {lt}",
    "string_too_short": "debe tener al menos {min_length} caracteres",
    "string_too_long": "debe tener como mucho {max_length} caracteres",
    "literal_error": "debe ser uno de: {expected}",
    "enum": "debe ser uno de: {expected}",
    "date_from_datetime_parsing": "debe ser una fecha AAAA-MM-DD",
    "date_parsing": "debe ser una fecha AAAA-MM-DD",
}
"""pydantic's error types in the catalog's language; an error type not listed keeps pydantic's message."""


def parameter_problem(error: Mapping[str, Any]) -> str:
    """One parameter error (pydantic's ``type``, ``msg`` and ``ctx``) in the catalog's language."""
    template = _PARAMETER_PROBLEMS.get(str(error.get("type", "")))
    if template is None:
        return str(error.get("msg", ""))
    try:
        return template.format(**dict(error.get("ctx") or {}))
    except (KeyError, IndexError, ValueError):
        return str(error.get("msg", ""))


class ErpAiError(Exception):
    """Base class of every error this project raises on purpose."""


class OperationError(ErpAiError):
    """An operation request that the ERP refuses to execute."""


class UnknownOperationError(OperationError):
    """The requested operation does not exist in the registry."""

    def __init__(self, name: str, available: Sequence[str]) -> None:
        self.name = name
        self.available = list(available)
        available_text = ", ".join(self.available) or "(ninguna)"
        super().__init__(
            OPERATION_ERROR_TEXTS["unknown_operation"].format(name=name, available=available_text)
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
            f"{'.'.join(str(p) for p in e.get('loc', ())) or 'parametros'}: {parameter_problem(e)}"
            for e in self.errors
        )
        super().__init__(
            OPERATION_ERROR_TEXTS["invalid_parameters"].format(operation=operation, details=details)
        )


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
        names = ", ".join(self.suggestions)
        hint = OPERATION_ERROR_TEXTS["customer_suggestions"].format(names=names) if self.suggestions else ""
        super().__init__(
            operation, OPERATION_ERROR_TEXTS["customer_not_found"].format(query=query, hint=hint)
        )


class CustomerOutOfScopeError(CustomerNotFoundError):
    """The customer exists but is outside the caller's data scope (not one of their customers)."""

    def __init__(self, operation: str, customer: str, suggestions: Sequence[str] = ()) -> None:
        self.customer = customer
        super().__init__(operation, customer, suggestions)


class UnknownCallerError(DomainError):
    """The caller sees only their own customers, and the ERP has no user of that id: refused rather than
    answered as zero sales (the CLI refuses such a user before the turn; a library caller meets it here)."""

    def __init__(self, operation: str, user_id: str) -> None:
        self.user_id = user_id
        super().__init__(operation, OPERATION_ERROR_TEXTS["unknown_caller"].format(user=user_id))


class OperationForbiddenError(OperationError):
    """The caller's permissions do not allow this operation; it was not executed."""

    def __init__(self, operation: str, missing: Sequence[str]) -> None:
        self.operation = operation
        self.missing = sorted(missing)
        # The permission names stay in ``missing`` (for logs): this text reaches the model and the AI server.
        super().__init__(OPERATION_ERROR_TEXTS["forbidden"].format(operation=operation))


INTERNAL_ERROR_PREFIX = "error interno (ref "
"""How every :class:`OperationInternalError` message starts, also once it is only text (a tool result)."""


class OperationInternalError(OperationError):
    """An operation failed for an unexpected reason (a bug, a corrupt page, a lost connection)."""

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

    def __init__(self, max_tokens: int | None, raw: str | None = None, *, message: str | None = None) -> None:
        self.max_tokens = max_tokens
        limit = f"{max_tokens} tokens" if max_tokens is not None else "the output-token limit"
        super().__init__(
            message or f"The model's answer was cut at {limit} (max_tokens) before it was complete.", raw
        )


class ReplyTooLongError(OutputLimitError):
    """The reply ran past the characters its output cap can hold (:func:`shared.bounds.reply_max_chars`): the
    server did not hold the model to ``max_tokens``, and reading stopped there."""

    def __init__(self, max_tokens: int | None, max_chars: int, raw: str | None = None) -> None:
        self.max_chars = max_chars
        cap = (
            f"an output cap of {max_tokens} tokens"
            if max_tokens is not None
            else "a reply without an output cap"
        )
        message = (
            f"The model's reply passed {max_chars:,} characters, more than {cap} can hold; the server "
            "did not hold it to max_tokens, so reading stopped there."
        )
        super().__init__(max_tokens, raw, message=message)


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


class TurnLimitError(ErpAiError):
    """A per-turn bound stopped the turn before it could go on (e.g. the model asked for more operations than
    a turn may run); nothing of the step that passed it ran."""


class StorageError(ErpAiError):
    """The ERP's database or the memory store cannot be opened, read or written; says what to check."""


class ConfigurationError(ErpAiError):
    """A setting is missing or wrong, or an optional package is not installed; the message says what to do."""
