"""One registry of ERP operations, used by both modes.

An :class:`Operation` is declared once: a stable Spanish snake_case name, a description, a pydantic model for
its parameters (every field documented), a pydantic model for its result, and a handler that runs it against
an ERP session. The registry renders the catalog for prompts, exports LangChain tools, and executes by name
with a plain dict of parameters, raising the typed errors of :mod:`shared.errors`.

Expected refusals (unknown operation, invalid parameters, ``DomainError`` such as a customer not found) keep
their clear message. Anything else a handler or the database raises is unexpected: it becomes
:class:`~shared.errors.OperationInternalError`, whose whole text is ``error interno (ref XXXX)``, so SQL
statements and parameters never reach a model's prompt or a user's answer; the full exception is logged at
ERROR on the ``shared.operations`` logger under that reference.
"""

from __future__ import annotations

import json
import logging
import secrets
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from pydantic import BaseModel, ValidationError

from shared.errors import (
    ErpAiError,
    InvalidParametersError,
    OperationError,
    OperationInternalError,
    UnknownOperationError,
)

if TYPE_CHECKING:
    from langchain_core.tools import StructuredTool
    from sqlalchemy.orm import Session

    from shared.erp.database import Erp

logger = logging.getLogger("shared.operations")

P = TypeVar("P", bound=BaseModel)
R = TypeVar("R", bound=BaseModel)


@dataclass(frozen=True)
class Operation(Generic[P, R]):
    """A business operation the ERP can execute on a model's request."""

    name: str
    description: str
    params_model: type[P]
    result_model: type[R]
    handler: Callable[[Session, P], R]

    def __post_init__(self) -> None:
        undocumented = [
            field for field, info in self.params_model.model_fields.items() if not info.description
        ]
        if undocumented:
            raise TypeError(f"Operation {self.name!r}: parameters without a description: {undocumented}")

    def parameters_schema(self) -> dict[str, Any]:
        """JSON schema of the parameters, without pydantic's title noise."""
        schema = self.params_model.model_json_schema()
        schema.pop("title", None)
        for prop in schema.get("properties", {}).values():
            prop.pop("title", None)
        return schema


class OperationSpec(BaseModel):
    """How an operation is presented to a model: name, description, parameters JSON schema."""

    name: str
    description: str
    parameters: dict[str, Any]


class OperationRegistry:
    """A name-indexed set of operations."""

    def __init__(self, operations: list[Operation[Any, Any]] | None = None) -> None:
        self._operations: dict[str, Operation[Any, Any]] = {}
        for operation in operations or []:
            self.register(operation)

    def register(self, operation: Operation[Any, Any]) -> None:
        if operation.name in self._operations:
            raise ValueError(f"Operation {operation.name!r} is already registered")
        self._operations[operation.name] = operation

    def __contains__(self, name: object) -> bool:
        return name in self._operations

    def __iter__(self) -> Iterator[Operation[Any, Any]]:
        return iter(self._operations.values())

    def __len__(self) -> int:
        return len(self._operations)

    def names(self) -> list[str]:
        return list(self._operations)

    def get(self, name: str) -> Operation[Any, Any]:
        try:
            return self._operations[name]
        except KeyError:
            raise UnknownOperationError(name, self.names()) from None

    def catalog(self) -> list[OperationSpec]:
        """The catalog a planner prompt shows: one spec per operation, in registration order."""
        return [
            OperationSpec(name=op.name, description=op.description, parameters=op.parameters_schema())
            for op in self
        ]

    def validate(self, name: str, params: dict[str, Any] | None) -> BaseModel:
        """Return the validated parameter model, or raise Unknown/InvalidParametersError."""
        return _validate(self.get(name), params)

    def execute(self, erp: Erp, name: str, params: dict[str, Any] | None) -> dict[str, Any]:
        """Validate and run ``name`` against ``erp``; return its result as a JSON-ready dict.

        Raises:
            UnknownOperationError, InvalidParametersError, DomainError: the expected refusals, unchanged
                (as is any other error of :mod:`shared.errors`, such as a ``StorageError``).
            OperationInternalError: anything else went wrong (a bug, a corrupt page, a lost connection); the
                full exception is logged on ``shared.operations`` under the error's ``reference``.
        """
        try:
            operation = self.get(name)
            validated = _validate(operation, params)
            with erp.session() as session:
                result = operation.handler(session, validated)
            return dict(result.model_dump(mode="json"))
        except ErpAiError:
            raise  # raised on purpose, with a clear message (an OperationError, or e.g. a StorageError)
        except Exception as exc:
            raise internal_error(name, exc, params) from exc

    def langchain_tools(self, erp: Erp) -> list[StructuredTool]:
        """Export every operation as a LangChain ``StructuredTool`` bound to ``erp``.

        Tools return the result as JSON text. Operation errors (including ``OperationInternalError``, whose
        text is only ``error interno (ref XXXX)``) are raised as ``ToolException`` so the agent sends them
        back to the model as tool error messages.
        """
        from langchain_core.tools import StructuredTool, ToolException

        def make(operation: Operation[Any, Any]) -> StructuredTool:
            def run(**kwargs: Any) -> str:
                try:
                    result = self.execute(erp, operation.name, kwargs)
                except OperationError as exc:
                    raise ToolException(str(exc)) from exc
                return json.dumps(result, ensure_ascii=False)

            def explain_invalid_args(error: ValidationError) -> str:
                # LangChain's default says only "Tool input validation error"; the model needs the field.
                return str(
                    InvalidParametersError(
                        operation.name,
                        [{"loc": e["loc"], "msg": e["msg"]} for e in error.errors()],
                    )
                )

            return StructuredTool.from_function(
                func=run,
                name=operation.name,
                description=operation.description,
                args_schema=operation.params_model,
                handle_tool_error=True,
                handle_validation_error=explain_invalid_args,
            )

        return [make(op) for op in self]


def internal_error(operation: str, error: BaseException, params: Any = None) -> OperationInternalError:
    """Log ``error`` (with its traceback) under a new short reference; return the error the model may see.

    The returned :class:`~shared.errors.OperationInternalError` reads only ``error interno (ref XXXX)``
    (``XXXX`` = 8 random hex digits); the log record on ``shared.operations`` (level ERROR) carries the
    reference, the operation, its parameters (``params``, truncated) and the full exception. ``execute`` uses
    it for anything unexpected; callers that catch an unexpected exception around an operation (a tool
    wrapper, a plan executor) use it too, so the same failure reads the same everywhere.
    """
    reference = secrets.token_hex(4)
    logger.error(
        "Operation %r failed unexpectedly (ref %s); parameters: %.500r",
        operation,
        reference,
        params,
        exc_info=error,
    )
    return OperationInternalError(operation, reference)


def _validate(operation: Operation[Any, Any], params: dict[str, Any] | None) -> BaseModel:
    if params is not None and not isinstance(params, dict):
        raise InvalidParametersError(operation.name, f"expected an object, got {type(params).__name__}")
    try:
        validated: BaseModel = operation.params_model.model_validate(params or {})
    except ValidationError as exc:
        raise InvalidParametersError(
            operation.name,
            [{"loc": e["loc"], "msg": e["msg"], "type": e["type"]} for e in exc.errors()],
        ) from None
    return validated
