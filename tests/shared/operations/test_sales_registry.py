"""The sales registry as both modes see it: catalog, validation errors, execution, LangChain tools."""
# The snapshots hold the exact description strings a model reads; ruff format cannot split them.
# ruff: noqa: E501

from __future__ import annotations

import json
from typing import Any

import pytest
from inline_snapshot import snapshot
from langchain_core.messages import ToolMessage
from langchain_core.utils.function_calling import convert_to_openai_tool

from shared.erp.database import Erp
from shared.errors import InvalidParametersError
from shared.operations.registry import OperationRegistry
from shared.security import DEMO_CALLER


def test_catalog_snapshot(registry: OperationRegistry) -> None:
    # One operation a line, as compact JSON: every description and schema a model reads.
    catalog = [json.dumps(spec.model_dump(), ensure_ascii=False) for spec in registry.catalog(DEMO_CALLER)]
    assert catalog == snapshot(
        [
            '{"name": "ventas_anuales", "description": "Total vendido (facturado) en un año, sin las facturas anuladas, y cantidad de facturas.", "parameters": {"additionalProperties": false, "properties": {"anio": {"description": "Año calendario de las ventas, con cuatro cifras.", "maximum": 2100, "minimum": 2000, "type": "integer"}}, "required": ["anio"], "type": "object"}}',
            '{"name": "mejor_cliente", "description": "Cliente con el mayor total de compras en un año, con ese total.", "parameters": {"additionalProperties": false, "properties": {"anio": {"description": "Año calendario de las ventas, con cuatro cifras.", "maximum": 2100, "minimum": 2000, "type": "integer"}}, "required": ["anio"], "type": "object"}}',
            '{"name": "compras_cliente", "description": "Total comprado por un cliente en un año y cantidad de facturas.", "parameters": {"additionalProperties": false, "properties": {"cliente": {"description": "Nombre del cliente; no distingue mayúsculas ni acentos y acepta una parte única del nombre.", "maxLength": 120, "minLength": 1, "type": "string"}, "anio": {"description": "Año calendario de las ventas, con cuatro cifras.", "maximum": 2100, "minimum": 2000, "type": "integer"}}, "required": ["cliente", "anio"], "type": "object"}}',
            '{"name": "ventas_mensuales", "description": "Ventas de un año mes por mes, o de un solo mes si se indica.", "parameters": {"additionalProperties": false, "properties": {"anio": {"description": "Año calendario de las ventas, con cuatro cifras.", "maximum": 2100, "minimum": 2000, "type": "integer"}, "mes": {"anyOf": [{"maximum": 12, "minimum": 1, "type": "integer"}, {"type": "null"}], "default": null, "description": "Número del mes: 1 enero, 2 febrero, 3 marzo, 4 abril, 5 mayo, 6 junio, 7 julio, 8 agosto, 9 septiembre, 10 octubre, 11 noviembre, 12 diciembre; si se omite, se devuelven los doce meses."}}, "required": ["anio"], "type": "object"}}',
            '{"name": "top_productos", "description": "Productos más vendidos de un año por monto, con unidades y categoría.", "parameters": {"additionalProperties": false, "properties": {"anio": {"description": "Año calendario de las ventas, con cuatro cifras.", "maximum": 2100, "minimum": 2000, "type": "integer"}, "limite": {"default": 5, "description": "Cantidad de productos a devolver (1 a 50).", "maximum": 50, "minimum": 1, "type": "integer"}}, "required": ["anio"], "type": "object"}}',
            '{"name": "ventas_por_categoria", "description": "Ventas de un año agrupadas por categoría de producto.", "parameters": {"additionalProperties": false, "properties": {"anio": {"description": "Año calendario de las ventas, con cuatro cifras.", "maximum": 2100, "minimum": 2000, "type": "integer"}}, "required": ["anio"], "type": "object"}}',
            '{"name": "facturas_pendientes", "description": "Facturas pendientes de cobro, de todos o de un cliente: cantidad, monto y las más antiguas.", "parameters": {"additionalProperties": false, "properties": {"cliente": {"anyOf": [{"maxLength": 120, "minLength": 1, "type": "string"}, {"type": "null"}], "default": null, "description": "Nombre del cliente (opcional); si se omite, se consideran todos los clientes."}}, "type": "object"}}',
            '{"name": "buscar_cliente", "description": "Busca clientes por parte del nombre o del RUC; devuelve nombre, RUC y ciudad.", "parameters": {"additionalProperties": false, "properties": {"texto": {"description": "Parte del nombre del cliente (sin mayúsculas ni acentos) o el comienzo de su RUC.", "maxLength": 120, "minLength": 1, "type": "string"}}, "required": ["texto"], "type": "object"}}',
        ]
    )


# -- execution on the seeded ERP -----------------------------------------------------------------------------
def test_the_article_question_has_the_article_answer(registry: OperationRegistry, erp: Erp) -> None:
    assert registry.execute(erp, "ventas_anuales", {"anio": 2025}, caller=DEMO_CALLER)["total"] == 850_000_000
    assert registry.execute(erp, "mejor_cliente", {"anio": 2025}, caller=DEMO_CALLER) == {
        "anio": 2025,
        "cliente": "Empresa ABC",
        "total": 120_000_000,
    }


def test_results_are_json_serialisable(registry: OperationRegistry, erp: Erp) -> None:
    params: dict[str, dict[str, Any]] = {
        "compras_cliente": {"cliente": "Ñandutí", "anio": 2024},
        "facturas_pendientes": {},
        "buscar_cliente": {"texto": "Supermercado"},
    }
    for name in registry.names():
        result = registry.execute(erp, name, params.get(name, {"anio": 2025}), caller=DEMO_CALLER)
        assert json.loads(json.dumps(result)) == result


# -- errors --------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("name", "params", "field"),
    [
        ("ventas_anuales", {}, "anio"),
        ("ventas_anuales", {"anio": 1999}, "anio"),
        ("ventas_anuales", {"anio": 2101}, "anio"),
        ("ventas_mensuales", {"anio": 2025, "mes": 13}, "mes"),
        ("ventas_mensuales", {"anio": 2025, "mes": 0}, "mes"),
        ("top_productos", {"anio": 2025, "limite": 0}, "limite"),
        ("top_productos", {"anio": 2025, "limite": 51}, "limite"),
        ("compras_cliente", {"anio": 2025, "cliente": ""}, "cliente"),
        ("ventas_anuales", {"anio": 2025, "cliente": "Empresa ABC"}, "cliente"),
        ("ventas_anuales", {"anio": "dos mil veinticinco"}, "anio"),
        ("ventas_anuales", {"anio": 2025.5}, "anio"),
        ("compras_cliente", {"cliente": 123, "anio": 2025}, "cliente"),
        ("top_productos", {"anio": 2025, "limite": [5]}, "limite"),
    ],
)
def test_invalid_parameters_and_wrong_types_say_which_field_is_wrong(
    registry: OperationRegistry, name: str, params: dict[str, Any], field: str
) -> None:
    with pytest.raises(InvalidParametersError) as info:
        registry.validate(name, params, caller=DEMO_CALLER)
    assert info.value.operation == name
    assert [e["loc"] for e in info.value.errors] == [(field,)]
    assert field in str(info.value)


def test_parameters_that_are_not_an_object_are_invalid(registry: OperationRegistry, erp: Erp) -> None:
    with pytest.raises(InvalidParametersError, match="expected an object, got list"):
        registry.execute(erp, "ventas_anuales", [2025], caller=DEMO_CALLER)  # type: ignore[arg-type]


# -- LangChain tools -----------------------------------------------------------------------------------------
def test_langchain_tools_mirror_the_catalog(registry: OperationRegistry, erp: Erp) -> None:
    tools = registry.langchain_tools(erp, caller=DEMO_CALLER)
    assert [t.name for t in tools] == registry.names()
    for tool, operation in zip(tools, registry, strict=True):
        assert tool.description == operation.description
        assert tool.args_schema is operation.params_model


def test_tool_schema_sent_to_a_model(registry: OperationRegistry, erp: Erp) -> None:
    tools = {t.name: t for t in registry.langchain_tools(erp, caller=DEMO_CALLER)}
    schema = convert_to_openai_tool(tools["top_productos"])
    assert json.dumps(schema, ensure_ascii=False) == snapshot(
        '{"type": "function", "function": {"name": "top_productos", "description": "Productos más vendidos de un año por monto, con unidades y categoría.", "parameters": {"properties": {"anio": {"description": "Año calendario de las ventas, con cuatro cifras.", "maximum": 2100, "minimum": 2000, "type": "integer"}, "limite": {"default": 5, "description": "Cantidad de productos a devolver (1 a 50).", "maximum": 50, "minimum": 1, "type": "integer"}}, "required": ["anio"], "type": "object"}}}'
    )


def test_invoking_a_tool_returns_json_text_with_the_figures_as_the_erp_writes_them(
    registry: OperationRegistry, erp: Erp
) -> None:
    tool = next(t for t in registry.langchain_tools(erp, caller=DEMO_CALLER) if t.name == "mejor_cliente")
    output = tool.invoke({"anio": 2025})
    assert isinstance(output, str)
    assert json.loads(output) == {"anio": 2025, "cliente": "Empresa ABC", "total": "120.000.000"}


def test_a_tool_call_carries_the_result_itself_as_its_artifact(registry: OperationRegistry, erp: Erp) -> None:
    tool = next(t for t in registry.langchain_tools(erp, caller=DEMO_CALLER) if t.name == "mejor_cliente")
    message = tool.invoke({"type": "tool_call", "id": "c1", "name": "mejor_cliente", "args": {"anio": 2025}})
    assert isinstance(message, ToolMessage)
    assert json.loads(str(message.content))["total"] == "120.000.000"  # what the model reads
    # what is recorded and checked
    assert message.artifact == {"anio": 2025, "cliente": "Empresa ABC", "total": 120_000_000}


def test_a_tool_call_with_a_missing_customer_yields_an_error_message_not_an_exception(
    registry: OperationRegistry, erp: Erp
) -> None:
    tool = next(t for t in registry.langchain_tools(erp, caller=DEMO_CALLER) if t.name == "compras_cliente")
    message = tool.invoke(
        {
            "type": "tool_call",
            "id": "call-1",
            "name": "compras_cliente",
            "args": {"cliente": "Empresa ABD", "anio": 2025},
        }
    )
    assert isinstance(message, ToolMessage)
    assert message.status == "error"
    assert "Ningún cliente al que usted tenga acceso coincide con 'Empresa ABD'" in str(message.content)
    assert "Empresa ABC" in str(message.content)


def test_a_tool_call_with_invalid_arguments_yields_an_error_message(
    registry: OperationRegistry, erp: Erp
) -> None:
    tool = next(t for t in registry.langchain_tools(erp, caller=DEMO_CALLER) if t.name == "ventas_anuales")
    output = tool.invoke({"anio": 1990})
    # The model is told which field was wrong, not LangChain's generic "Tool input validation error".
    assert isinstance(output, str)
    assert output.startswith("Parámetros inválidos para 'ventas_anuales': anio:")
