"""One registry of ERP operations, used by both modes, and what each caller may run.

An operation is usually declared as a typed function: its parameters model comes from the signature (each
parameter documented, unknown keys refused), its description from the docstring, its result model from the
return annotation. Every method takes the caller explicitly; forbidden operations are neither offered nor
run. Unexpected failures become :class:`~shared.errors.OperationInternalError` (``error interno (ref XXXX)``),
logged in full on ``shared.operations``, so SQL never reaches a prompt.
"""

from __future__ import annotations

import inspect
import json
import logging
import re
import secrets
import typing
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from pydantic import BaseModel, ConfigDict, ValidationError, create_model, model_validator

from shared.errors import (
    ErpAiError,
    InvalidParametersError,
    OperationError,
    OperationForbiddenError,
    OperationInternalError,
    UnknownOperationError,
)
from shared.result_text import for_model
from shared.security import DEMO_POLICY, Caller, OperationContext, RolePolicy

if TYPE_CHECKING:
    from langchain_core.tools import StructuredTool

    from shared.erp.database import Erp

logger = logging.getLogger("shared.operations")

P = TypeVar("P", bound=BaseModel)
R = TypeVar("R", bound=BaseModel)
F = TypeVar("F", bound=Callable[..., BaseModel])


def _drop_docstring(schema: dict[str, Any]) -> None:
    """Keep class docstrings (written for developers) out of the JSON schema the model reads."""
    schema.pop("description", None)


PLACEHOLDERS = frozenset({"", "-", "*", "n/a", "na", "null", "none", "ninguno", "ninguna", "todos", "todas"})
"""Texts a model writes in an optional parameter it means to leave out (compared stripped and lower-cased)."""


def is_placeholder(value: Any) -> bool:
    """Whether ``value`` says "no value": ``None``, ``{}``, ``[]`` or a :data:`PLACEHOLDERS` text."""
    if value is None or value == {} or value == []:
        return True
    return isinstance(value, str) and value.strip().casefold() in PLACEHOLDERS


class OperationParams(BaseModel):
    """Base of the parameter models the decorator builds: unknown keys are an error, not silently ignored.

    An optional parameter given a placeholder (``"N/A"``, ``"todos"``, ``{}``, ``null``:
    :func:`is_placeholder`) is left out, as the model meant: it takes its default instead of failing or
    matching nothing.
    """

    model_config = ConfigDict(extra="forbid", json_schema_extra=_drop_docstring)

    @model_validator(mode="before")
    @classmethod
    def _placeholders_mean_absent(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        return {
            key: value
            for key, value in data.items()
            if not (
                key in cls.model_fields and not cls.model_fields[key].is_required() and is_placeholder(value)
            )
        }


@dataclass(frozen=True)
class Operation(Generic[P, R]):
    """A business operation the ERP can execute on a model's request."""

    name: str
    """Stable Spanish snake_case name: what the model writes to request it."""
    description: str
    """What the operation does, for the model (catalog line, tool description)."""
    params_model: type[P]
    """Its parameters; every field has a description."""
    result_model: type[R]
    """Its result."""
    handler: Callable[[OperationContext, P], R]
    """Runs it: ``handler(ctx, params)``."""
    requires: frozenset[str] = field(default_factory=frozenset)
    """Permissions a caller needs to run it (all of them); empty: anyone may."""

    def __post_init__(self) -> None:
        if isinstance(self.requires, str):
            raise TypeError(
                f"Operation {self.name!r}: requires must be a set of permissions, e.g. {{{self.requires!r}}}"
            )
        object.__setattr__(self, "requires", frozenset(self.requires))
        undocumented = [
            field for field, info in self.params_model.model_fields.items() if not info.description
        ]
        if undocumented:
            raise TypeError(
                f"Operation {self.name!r}: parameters without a description: {undocumented} (the model reads "
                "them: declare each as Annotated[T, Field(description=...)])"
            )

    @classmethod
    def from_function(
        cls,
        function: Callable[..., BaseModel],
        *,
        requires: Iterable[str],
        name: str | None = None,
        description: str | None = None,
    ) -> Operation[Any, Any]:
        """The operation a typed function declares (what :meth:`OperationRegistry.operation` registers)."""
        op_name = name or function.__name__

        def refused(problem: str) -> TypeError:
            where = f"{function.__module__}.{function.__qualname__}"
            return TypeError(f"Operation {op_name!r} ({where}): {problem}")

        try:
            hints = typing.get_type_hints(function, include_extras=True)
        except Exception as exc:  # a forward reference that does not resolve (a type defined in a function)
            raise refused(
                f"cannot resolve its type annotations ({exc}); define them at module level"
            ) from exc
        result_model = hints.get("return")
        if not (isinstance(result_model, type) and issubclass(result_model, BaseModel)):
            raise refused(
                "its return annotation must be a pydantic model (the operation's result), "
                f"not {result_model!r}"
            )
        parameters = list(inspect.signature(function).parameters.values())
        first = parameters[0] if parameters else None
        if (
            first is None
            or first.kind not in (first.POSITIONAL_ONLY, first.POSITIONAL_OR_KEYWORD)
            or hints.get(first.name, OperationContext) is not OperationContext
        ):
            raise refused("its first parameter must be the context: `ctx: OperationContext`")
        fields: dict[str, Any] = {}
        for parameter in parameters[1:]:
            if parameter.kind is parameter.VAR_POSITIONAL:
                raise refused(f"*{parameter.name} cannot be an operation parameter; name each parameter")
            if parameter.kind is parameter.VAR_KEYWORD:
                raise refused(f"**{parameter.name} cannot be an operation parameter; name each parameter")
            if parameter.kind is parameter.POSITIONAL_ONLY:
                raise refused(f"parameter {parameter.name!r} cannot be positional-only")
            if parameter.name not in hints:
                raise refused(f"parameter {parameter.name!r} has no type annotation")
            default = ... if parameter.default is parameter.empty else parameter.default
            fields[parameter.name] = (hints[parameter.name], default)
        text = description if description is not None else inspect.getdoc(function)
        if not text:
            raise refused("it needs a docstring (the description the model reads), or description=...")
        params_model = create_model(
            _model_name(op_name), __base__=OperationParams, __module__=function.__module__, **fields
        )

        def handler(ctx: OperationContext, params: BaseModel) -> BaseModel:
            return function(ctx, **dict(params))

        handler.__qualname__ = handler.__name__ = function.__name__
        requirements = _permissions(requires, refused)
        return Operation[Any, Any](op_name, text, params_model, result_model, handler, requirements)

    def parameters_schema(self) -> dict[str, Any]:
        """JSON schema of the parameters, without pydantic's title noise."""
        schema = self.params_model.model_json_schema()
        schema.pop("title", None)
        for prop in schema.get("properties", {}).values():
            prop.pop("title", None)
        return schema

    @cached_property
    def spec(self) -> OperationSpec:
        """How the catalog presents it (built once: a JSON schema costs about half a millisecond)."""
        return OperationSpec(
            name=self.name, description=self.description, parameters=self.parameters_schema()
        )


def _model_name(operation: str) -> str:
    """``ventas_anuales`` → ``VentasAnualesParams``."""
    return "".join(part[:1].upper() + part[1:] for part in re.split(r"[^0-9A-Za-z]+", operation)) + "Params"


def _permissions(requires: Iterable[str], refused: Callable[[str], TypeError]) -> frozenset[str]:
    if isinstance(requires, str):
        raise refused(f"requires must be a set of permissions, e.g. requires={{{requires!r}}}")
    return frozenset(requires)


class OperationSpec(BaseModel):
    """How an operation is presented to a model: name, description, parameters JSON schema."""

    name: str
    description: str
    parameters: dict[str, Any]


class OperationRegistry:
    """A name-indexed set of operations, and the policy that says who may run which."""

    def __init__(
        self, operations: Iterable[Operation[Any, Any]] | None = None, *, policy: RolePolicy = DEMO_POLICY
    ) -> None:
        self._operations: dict[str, Operation[Any, Any]] = {}
        self._policy = policy
        for operation in operations or []:
            self.register(operation)

    # -- declaring -------------------------------------------------------------------------------------------
    def register(self, operation: Operation[Any, Any]) -> None:
        if operation.name in self._operations:
            raise ValueError(f"Operation {operation.name!r} is already registered")
        self._operations[operation.name] = operation

    def operation(
        self, *, requires: Iterable[str], name: str | None = None, description: str | None = None
    ) -> Callable[[F], F]:
        """Decorator: register the typed function as an operation (:meth:`Operation.from_function`)."""

        def register(function: F) -> F:
            self.register(
                Operation.from_function(function, requires=requires, name=name, description=description)
            )
            return function

        return register

    # -- the set ---------------------------------------------------------------------------------------------
    @property
    def policy(self) -> RolePolicy:
        """The roles → permissions mapping this registry enforces."""
        return self._policy

    def __contains__(self, name: object) -> bool:
        return name in self._operations

    def __iter__(self) -> Iterator[Operation[Any, Any]]:
        """Every operation, in registration order, whatever a caller may run."""
        return iter(self._operations.values())

    def __len__(self) -> int:
        return len(self._operations)

    def names(self, caller: Caller | None = None) -> list[str]:
        """Operation names in registration order: those ``caller`` may run, or all of them (``None``)."""
        if caller is None:
            return list(self._operations)
        return [op.name for op in self._allowed(caller)]

    def get(self, name: str) -> Operation[Any, Any]:
        """The operation called ``name``, whatever a caller may run (permission is :meth:`validate`'s job)."""
        try:
            return self._operations[name]
        except KeyError:
            raise UnknownOperationError(name, self.names()) from None

    def permits(self, caller: Caller, name: str) -> bool:
        """Whether ``name`` is an operation ``caller`` may run."""
        operation = self._operations.get(name)
        return operation is not None and operation.requires <= self._policy.permissions(caller)

    def catalog(self, caller: Caller) -> list[OperationSpec]:
        """The catalog a planner prompt shows ``caller``: one spec per operation they may run, in order."""
        return [op.spec for op in self._allowed(caller)]

    def denied(self, caller: Caller) -> list[str]:
        """The operations ``caller`` may not run, as ``'"name": description'`` (a name and what it does, never
        data), so that a model can say a permission is missing; the name is quoted, as no offer."""
        granted = self._policy.permissions(caller)
        return [f'"{op.name}": {op.description}' for op in self if not op.requires <= granted]

    # -- running ---------------------------------------------------------------------------------------------
    def validate(self, name: str, params: dict[str, Any] | None, *, caller: Caller) -> BaseModel:
        """Return the validated parameter model of ``name`` for ``caller``."""
        return _validate(self._permitted(name, self._policy.permissions(caller), caller), params)

    def execute(
        self, erp: Erp, name: str, params: dict[str, Any] | None, *, caller: Caller
    ) -> dict[str, Any]:
        """Validate and run ``name`` against ``erp`` as ``caller``; return its result as a JSON-ready dict."""
        try:
            granted = self._policy.permissions(caller)
            operation = self._permitted(name, granted, caller)
            validated = _validate(operation, params)
            with erp.session() as session:
                ctx = OperationContext(
                    caller=caller, permissions=granted, today=erp.today, backend=session, operation=name
                )
                result = operation.handler(ctx, validated)
            return dict(result.model_dump(mode="json"))
        except ErpAiError:
            raise  # raised on purpose, with a clear message (an OperationError, or e.g. a StorageError)
        except Exception as exc:
            raise internal_error(name, exc, params) from exc

    def langchain_tools(self, erp: Erp, *, caller: Caller) -> list[StructuredTool]:
        """The operations ``caller`` may run, as LangChain ``StructuredTool`` s bound to ``erp`` and them."""
        return [self._tool(erp, op, caller) for op in self._allowed(caller)]

    # -- internals -------------------------------------------------------------------------------------------
    def _allowed(self, caller: Caller) -> list[Operation[Any, Any]]:
        granted = self._policy.permissions(caller)
        return [op for op in self if op.requires <= granted]

    def _permitted(self, name: str, granted: frozenset[str], caller: Caller) -> Operation[Any, Any]:
        operation = self._operations.get(name) if isinstance(name, str) else None
        if operation is None:
            raise UnknownOperationError(name, self.names(caller))
        missing = operation.requires - granted
        if missing:
            raise OperationForbiddenError(name, sorted(missing))
        return operation

    def _tool(self, erp: Erp, operation: Operation[Any, Any], caller: Caller) -> StructuredTool:
        from langchain_core.tools import StructuredTool, ToolException

        def run(**kwargs: Any) -> tuple[str, dict[str, Any]]:
            # The model reads the ERP's rendering of the figures; the result itself is the artifact.
            try:
                result = self.execute(erp, operation.name, kwargs, caller=caller)
            except OperationError as exc:
                raise ToolException(str(exc)) from exc
            return json.dumps(for_model(result), ensure_ascii=False), result

        def explain_invalid_args(error: ValidationError) -> str:
            # LangChain's default says only "Tool input validation error"; the model needs the field.
            return str(
                InvalidParametersError(
                    operation.name, [{"loc": e["loc"], "msg": e["msg"]} for e in error.errors()]
                )
            )

        return StructuredTool.from_function(
            func=run,
            name=operation.name,
            description=operation.description,
            args_schema=operation.params_model,
            response_format="content_and_artifact",
            handle_tool_error=True,
            handle_validation_error=explain_invalid_args,
        )


def internal_error(operation: str, error: BaseException, params: Any = None) -> OperationInternalError:
    """Log ``error`` (with its traceback) under a new short reference; return the error the model may see."""
    # 8 hex digits starting with a letter: no reader takes it for a number (``8219e736`` reads as 8219·10⁷³⁶)
    reference = secrets.choice("abcdef") + secrets.token_hex(4)[1:]
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
            operation.name, [{"loc": e["loc"], "msg": e["msg"], "type": e["type"]} for e in exc.errors()]
        ) from None
    return validated
