"""Declaring an operation as one typed function: ``@registry.operation(requires=...)``."""

from __future__ import annotations

from typing import Annotated, Any

import pytest
from pydantic import BaseModel, Field

from shared.erp.database import Erp
from shared.errors import InvalidParametersError
from shared.operations.registry import OperationRegistry
from shared.security import DEMO_CALLER, OperationContext

Anio = Annotated[int, Field(ge=2000, le=2100, description="Año calendario.")]


class Total(BaseModel):
    anio: int
    total: int


class Found(BaseModel):
    cliente: str
    limite: int
    mes: int | None


def test_the_signature_docstring_and_return_annotation_make_the_operation() -> None:
    registry = OperationRegistry()

    @registry.operation(requires={"ventas:leer"})
    def ventas_anuales(ctx: OperationContext, anio: Anio) -> Total:
        """Total vendido en un año."""
        return Total(anio=anio, total=1)

    operation = registry.get("ventas_anuales")
    assert operation.description == "Total vendido en un año."
    assert operation.result_model is Total
    assert operation.requires == frozenset({"ventas:leer"})
    assert operation.params_model.__name__ == "VentasAnualesParams"
    assert operation.parameters_schema() == {
        "additionalProperties": False,
        "properties": {
            "anio": {"description": "Año calendario.", "maximum": 2100, "minimum": 2000, "type": "integer"}
        },
        "required": ["anio"],
        "type": "object",
    }
    with pytest.raises(InvalidParametersError) as info:  # the parameters model refuses unknown keys
        registry.validate("ventas_anuales", {"anio": 2025, "cliente": "Empresa ABC"}, caller=DEMO_CALLER)
    assert [e["loc"] for e in info.value.errors] == [("cliente",)]


def test_defaults_optional_values_and_field_defaults_become_optional_parameters() -> None:
    registry = OperationRegistry()

    @registry.operation(requires=set())
    def buscar(
        ctx: OperationContext,
        cliente: Annotated[str, Field(min_length=1, description="Nombre.")],
        limite: Annotated[int, Field(ge=1, le=50, description="Cuántos.")] = 5,
        mes: int | None = Field(default=None, ge=1, le=12, description="Mes."),
    ) -> Found:
        """Busca."""
        return Found(cliente=cliente, limite=limite, mes=mes)

    schema = registry.get("buscar").parameters_schema()
    assert schema["required"] == ["cliente"]
    assert schema["properties"]["limite"]["default"] == 5
    assert schema["properties"]["mes"] == {
        "anyOf": [{"maximum": 12, "minimum": 1, "type": "integer"}, {"type": "null"}],
        "default": None,
        "description": "Mes.",
    }


def test_the_handler_receives_the_context_and_the_validated_parameters_as_arguments(erp: Erp) -> None:
    registry = OperationRegistry()
    seen: list[tuple[OperationContext, int, int]] = []

    @registry.operation(requires={"ventas:leer"})
    def top(
        ctx: OperationContext,
        anio: Anio,
        limite: Annotated[int, Field(ge=1, le=50, description="Cuántos.")] = 5,
    ) -> Total:
        """Top."""
        seen.append((ctx, anio, limite))
        return Total(anio=anio, total=limite)

    assert registry.execute(erp, "top", {"anio": "2025"}, caller=DEMO_CALLER) == {"anio": 2025, "total": 5}
    [(ctx, anio, limite)] = seen
    assert (anio, limite) == (2025, 5)
    assert ctx.caller == DEMO_CALLER
    assert ctx.today == erp.today
    assert ctx.sees_all_customers


def _searching() -> OperationRegistry:
    """A registry with ``buscar(cliente, limite=5, vendedor=None)``: one required, two optional parameters."""
    registry = OperationRegistry()

    @registry.operation(requires=set())
    def buscar(
        ctx: OperationContext,
        cliente: Annotated[str, Field(min_length=1, description="Nombre.")],
        limite: Annotated[int, Field(ge=1, le=50, description="Cuántos.")] = 5,
        vendedor: str | None = Field(default=None, min_length=1, description="Vendedor."),
    ) -> Found:
        """Busca."""
        return Found(cliente=cliente, limite=limite, mes=None)

    return registry


@pytest.mark.parametrize("placeholder", ["N/A", " n/a ", "", "null", "Todos", "ninguno", "-", {}, [], None])
def test_an_optional_parameter_given_a_placeholder_takes_its_default(placeholder: Any) -> None:
    validated = _searching().validate(
        "buscar", {"cliente": "Sur", "limite": placeholder, "vendedor": placeholder}, caller=DEMO_CALLER
    )
    assert validated.model_dump() == {"cliente": "Sur", "limite": 5, "vendedor": None}


def test_a_required_parameter_given_a_placeholder_is_still_refused() -> None:
    registry = _searching()
    for placeholder in ("", {}, None):
        with pytest.raises(InvalidParametersError):
            registry.validate("buscar", {"cliente": placeholder}, caller=DEMO_CALLER)
    # a real value that merely contains a placeholder word is kept
    assert registry.validate("buscar", {"cliente": "Sur", "vendedor": "Todos los Santos"}, caller=DEMO_CALLER)


def test_a_name_and_description_can_be_given_explicitly() -> None:
    registry = OperationRegistry()

    @registry.operation(requires=set(), name="ventas_del_anio", description="Ventas de un año.")
    def _ventas(ctx: OperationContext, anio: Anio) -> Total:
        """Developer notes, not for the model."""
        return Total(anio=anio, total=0)

    assert registry.names() == ["ventas_del_anio"]
    assert registry.get("ventas_del_anio").description == "Ventas de un año."


# -- refused at definition time ------------------------------------------------------------------------------
def _undocumented(ctx: OperationContext, anio: int) -> Total:
    """Ventas."""
    return Total(anio=anio, total=0)


def _field_without_description(ctx: OperationContext, anio: Annotated[int, Field(ge=2000)]) -> Total:
    """Ventas."""
    return Total(anio=anio, total=0)


def _no_return_model(ctx: OperationContext, anio: Anio):  # type: ignore[no-untyped-def]
    """Ventas."""


def _returns_a_dict(ctx: OperationContext, anio: Anio) -> dict[str, int]:
    """Ventas."""
    return {}


def _no_docstring(ctx: OperationContext, anio: Anio) -> Total:
    return Total(anio=anio, total=0)


def _no_context() -> Total:
    """Ventas."""
    return Total(anio=2025, total=0)


def _variadic(ctx: OperationContext, **anio: int) -> Total:
    """Ventas."""
    return Total(anio=2025, total=0)


@pytest.mark.parametrize(
    ("function", "message"),
    [
        (_undocumented, r"'ventas'.*parameters without a description: \['anio'\]"),
        (_field_without_description, r"'ventas'.*parameters without a description: \['anio'\]"),
        (_no_return_model, r"'ventas'.*return annotation.*pydantic model"),
        (_returns_a_dict, r"'ventas'.*pydantic model"),
        (_no_docstring, r"'ventas'.*docstring"),
        (_no_context, r"'ventas'.*OperationContext"),
        (_variadic, r"'ventas'.*\*\*anio"),
    ],
    ids=lambda value: value.__name__.strip("_") if callable(value) else "",
)
def test_a_function_that_cannot_be_an_operation_is_refused_at_definition(function: Any, message: str) -> None:
    with pytest.raises(TypeError, match=message):
        OperationRegistry().operation(requires=set(), name="ventas")(function)


def test_the_decorator_returns_the_function_unchanged_and_refuses_a_duplicate_name() -> None:
    registry = OperationRegistry()

    def ventas(ctx: OperationContext, anio: Anio) -> Total:
        """Ventas."""
        return Total(anio=anio, total=0)

    assert registry.operation(requires=set())(ventas) is ventas
    with pytest.raises(ValueError, match="already registered"):
        registry.operation(requires=set())(ventas)
