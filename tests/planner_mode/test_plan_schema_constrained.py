"""Call 1's constrained schema (planner_mode/plan_schema.py): a caller's plan may name only the operations
they may run, each with its own parameters, and every provider integration receives the schema as it is.

The ``jsonschema`` package is not installed, so plans are checked with :func:`violations`, a validator of
exactly the JSON-schema subset ``plan_json_schema`` writes (its own behaviour is pinned first).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient
from pydantic import BaseModel, Field

from benchmarks.stand_ins.emulators import EmulatorKind, EmulatorServer, create_emulator
from benchmarks.stand_ins.offline import OfflineSalesModel
from planner_mode.ai import PlannerAI
from planner_mode.plan_schema import catalog_key, plan_json_schema
from planner_mode.server import create_app
from planner_mode.server.wire import AnalyzeRequest
from shared.erp.demo_catalog import DEMO_USERS
from shared.llm.factory import build_chat_model
from shared.operations import sales_registry
from shared.operations.registry import Operation, OperationSpec
from shared.security import Caller, OperationContext
from tests.fakes import RunRecorder
from tests.planner_mode.planner_fakes import CONTEXT, op, plan, plan_of, ref

REGISTRY = sales_registry()
CALLERS = {user.user_id: Caller(user_id=user.user_id, roles=frozenset({user.role})) for user in DEMO_USERS}
DEPENDENT = "¿Cuánto compró nuestro mejor cliente en 2025?"
DEPENDENT_PLAN = plan(
    op("mejor_cliente", "op1", anio=2025), op("compras_cliente", anio=2025, cliente=ref("op1.cliente"))
)


def catalog_of(user_id: str) -> list[OperationSpec]:
    return REGISTRY.catalog(CALLERS[user_id])


# -- a validator for the subset of JSON Schema the plan schema uses ------------------------------------------

_TYPES: dict[str, tuple[type, ...]] = {
    "object": (dict,),
    "array": (list,),
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "null": (type(None),),
}
_KNOWN = {
    "$ref", "$defs", "anyOf", "enum", "const", "type", "properties", "required", "additionalProperties",
    "items", "maxItems", "minItems", "minimum", "maximum", "minLength", "maxLength", "title", "description",
    "minProperties", "maxProperties",
}  # fmt: skip


def violations(instance: Any, schema: dict[str, Any], root: dict[str, Any] | None = None) -> list[str]:
    """Why ``instance`` does not follow ``schema`` (empty: it does); refuses keywords it does not know."""
    root = root if root is not None else schema
    unknown = set(schema) - _KNOWN
    assert not unknown, f"the test validator does not know {unknown}"
    if "$ref" in schema:
        target: Any = root
        for part in schema["$ref"].removeprefix("#/").split("/"):
            target = target[part]
        return violations(instance, target, root)
    if "anyOf" in schema:
        found = [violations(instance, option, root) for option in schema["anyOf"]]
        return [] if any(not problems for problems in found) else [f"no alternative fits {instance!r}"]
    if "const" in schema and instance != schema["const"]:
        return [f"{instance!r} is not {schema['const']!r}"]
    if "enum" in schema and instance not in schema["enum"]:
        return [f"{instance!r} is not one of {schema['enum']}"]
    kind = schema.get("type")
    if kind is not None:
        kinds = kind if isinstance(kind, list) else [kind]
        if not any(
            isinstance(instance, _TYPES[k]) and (k == "boolean" or not isinstance(instance, bool))
            for k in kinds
        ):
            return [f"{instance!r} is not of type {kind}"]
    problems: list[str] = []
    if isinstance(instance, dict):
        properties = schema.get("properties", {})
        problems += [f"missing {name!r}" for name in schema.get("required", []) if name not in instance]
        extra = schema.get("additionalProperties", True)
        for name, value in instance.items():
            if name in properties:
                problems += violations(value, properties[name], root)
            elif extra is False:
                problems.append(f"unexpected key {name!r}")
            elif isinstance(extra, dict):
                problems += violations(value, extra, root)
        if len(instance) < schema.get("minProperties", 0):
            problems.append(f"fewer than {schema['minProperties']} keys")
        if len(instance) > schema.get("maxProperties", len(instance)):
            problems.append(f"more than {schema['maxProperties']} keys")
    if isinstance(instance, list):
        if len(instance) > schema.get("maxItems", len(instance)):
            problems.append(f"more than {schema['maxItems']} items")
        if len(instance) < schema.get("minItems", 0):
            problems.append(f"fewer than {schema['minItems']} items")
        if "items" in schema:
            problems += [p for item in instance for p in violations(item, schema["items"], root)]
    if (
        isinstance(instance, int | float)
        and not isinstance(instance, bool)
        and not schema.get("minimum", instance) <= instance <= schema.get("maximum", instance)
    ):
        problems.append(f"{instance!r} is out of bounds")
    if isinstance(instance, str) and not (
        schema.get("minLength", 0) <= len(instance) <= schema.get("maxLength", len(instance))
    ):
        problems.append(f"{instance!r} has the wrong length")
    return problems


@pytest.mark.parametrize(
    ("instance", "schema", "valid"),
    [
        (1, {"type": "integer", "minimum": 1, "maximum": 3}, True),
        (4, {"type": "integer", "minimum": 1, "maximum": 3}, False),
        (True, {"type": "integer"}, False),
        ("a", {"enum": ["a", "b"]}, True),
        ("c", {"type": "string", "enum": ["a", "b"]}, False),
        ({"a": 1}, {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]}, True),
        ({}, {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]}, False),
        ({"a": 1, "b": 2}, {"properties": {"a": {}}, "additionalProperties": False}, False),
        ({"b": "x"}, {"type": "object", "additionalProperties": {"type": "string"}}, True),
        ({"b": 1}, {"type": "object", "additionalProperties": {"type": "string"}}, False),
        (
            5,
            {"anyOf": [{"type": "string"}, {"$ref": "#/$defs/n"}], "$defs": {"n": {"type": "integer"}}},
            True,
        ),
        (
            5.5,
            {"anyOf": [{"type": "string"}, {"$ref": "#/$defs/n"}], "$defs": {"n": {"type": "integer"}}},
            False,
        ),
        ([1, 2], {"type": "array", "items": {"type": "integer"}, "maxItems": 1}, False),
        ("", {"type": "string", "minLength": 1}, False),
    ],
)
def test_the_test_validator_follows_json_schema(instance: Any, schema: dict[str, Any], valid: bool) -> None:
    assert (violations(instance, schema) == []) is valid


# -- what a caller may plan ----------------------------------------------------------------------------------


def branch_names(schema: dict[str, Any]) -> list[str]:
    branches = schema["properties"]["operaciones"]["items"]["anyOf"]
    names: list[str] = []
    for branch in branches:
        enum = branch["properties"]["funcion"]["enum"]
        assert len(enum) == 1, "each branch is one operation"
        names.extend(enum)
    return names


@pytest.mark.parametrize(("user_id", "count"), [("gerente", 8), ("ana", 7), ("bruno", 7)])
def test_each_caller_is_offered_exactly_the_operations_they_may_run(user_id: str, count: int) -> None:
    names = branch_names(plan_json_schema(catalog_of(user_id)))
    assert names == REGISTRY.names(CALLERS[user_id])
    assert len(names) == count
    assert ("ventas_por_categoria" in names) is (user_id == "gerente")


@pytest.mark.parametrize(
    "candidate",
    [
        plan(op("ventas_anuales", anio=2025)),
        plan(op("compras_cliente", cliente="Empresa Norte", anio=2024), op("facturas_pendientes")),
        plan(op("ventas_mensuales", anio=2025, mes=3), op("top_productos", anio=2025, limite=10)),
        plan(op("buscar_cliente", texto="norte"), op("ventas_por_categoria", anio=2025)),
        DEPENDENT_PLAN,
        {"operaciones": [], "respuesta_directa": "¡Hola!"},
        {"respuesta_directa": "¡Hola!"},
    ],
)
def test_plans_of_catalog_operations_with_their_parameters_follow_the_schema(
    candidate: dict[str, Any],
) -> None:
    assert violations(candidate, plan_json_schema(catalog_of("gerente"))) == []


@pytest.mark.parametrize(
    ("candidate", "problem"),
    [
        (plan(op("borrar_cliente", cliente="x")), "unknown operation"),
        (plan(op("ventas_anuales", anio=1999)), "year out of the parameter's bounds"),
        (plan(op("top_productos", anio=2025, limite=51)), "limit out of bounds"),
        (plan(op("ventas_anuales", anio=2025, cliente="x")), "another operation's parameter"),
        (plan(op("compras_cliente", anio=2025)), "a required parameter missing"),
        (plan({"funcion": "ventas_anuales"}), "no parametros although anio is required"),
        (plan(op("ventas_anuales", anio="2025")), "a string for an integer"),
        (plan(op("ventas_anuales", anio={"$ref": 1})), "a reference that is not a path"),
        ({"operaciones": [], "respuesta": "x"}, "a key plans do not have"),
    ],
)
def test_plans_outside_the_catalog_or_its_parameters_do_not(candidate: dict[str, Any], problem: str) -> None:
    assert violations(candidate, plan_json_schema(catalog_of("gerente"))), problem


@pytest.mark.parametrize("user_id", ["ana", "bruno"])
def test_a_plan_naming_an_operation_the_caller_may_not_run_does_not_follow_their_schema(user_id: str) -> None:
    forbidden = plan(op("ventas_por_categoria", anio=2025))
    assert violations(forbidden, plan_json_schema(catalog_of("gerente"))) == []
    assert violations(forbidden, plan_json_schema(catalog_of(user_id))) != []


def test_an_empty_catalog_allows_only_a_direct_answer() -> None:
    schema = plan_json_schema([])
    assert violations({"operaciones": [], "respuesta_directa": "No puedo consultar datos."}, schema) == []
    assert violations(plan(op("ventas_anuales", anio=2025)), schema) != []


@pytest.mark.parametrize("style", ["union", "enum", "free"])
def test_every_plan_schema_puts_the_direct_answer_first_so_a_model_writes_it_first(style: str) -> None:
    """Grammars keep the schema's property order: a direct answer is the first thing call 1 writes and can
    stream to the user (``PlannerAI.astream_analyze``)."""
    schema = PlannerAI(OfflineSalesModel(), plan_schema=style).plan_json_schema(catalog_of("gerente"))  # type: ignore[arg-type]
    assert list(schema["properties"]) == ["respuesta_directa", "operaciones"]
    assert "required" not in schema  # small talk has no operations, a plan no direct answer


def test_the_offline_planner_writes_the_schemas_order_compactly_and_a_direct_answer_alone() -> None:
    replies = RunRecorder()
    ai = PlannerAI(OfflineSalesModel())
    catalog = catalog_of("gerente")
    plan_of(ai, "Hola", CONTEXT, catalog, config={"callbacks": [replies]})
    plan_of(ai, DEPENDENT, CONTEXT, catalog, config={"callbacks": [replies]})
    greeting, dependent = replies.replies
    assert greeting.startswith('{"respuesta_directa":"') and "operaciones" not in greeting
    assert dependent.startswith('{"operaciones":[{"id":"') and ": " not in dependent
    assert json.loads(dependent) == DEPENDENT_PLAN


def test_the_plain_variant_names_the_operations_without_their_parameters() -> None:
    schema = plan_json_schema(catalog_of("ana"), union=False)
    item = schema["properties"]["operaciones"]["items"]
    assert item["properties"]["funcion"]["enum"] == REGISTRY.names(CALLERS["ana"])
    assert violations(plan(op("ventas_anuales", anio=1999, cliente="x")), schema) == []
    assert violations(plan(op("ventas_por_categoria", anio=2025)), schema) != []


def nodes(node: Any) -> Iterator[dict[str, Any]]:
    """Every object inside a schema, the schema included."""
    if isinstance(node, dict):
        yield node
        for value in node.values():
            yield from nodes(value)
    elif isinstance(node, list):
        for value in node:
            yield from nodes(value)


def test_no_property_is_named_ref_and_every_reference_resolves() -> None:
    """llama.cpp's grammar converter (Ollama's too) reads any object holding a "$ref" key as a reference and
    fails when its value is not a string: the reference object is "an object of strings" instead."""
    schema = plan_json_schema(catalog_of("gerente"))
    names = {
        name
        for node in nodes(schema)
        if isinstance(node.get("properties"), dict)
        for name in node["properties"]
    }
    assert "$ref" not in names
    references = [node["$ref"] for node in nodes(schema) if "$ref" in node]
    assert references and all(ref.removeprefix("#/$defs/") in schema["$defs"] for ref in references)


def test_the_schema_is_a_pure_function_of_the_catalog() -> None:
    """The AI server parses the catalog from each request: equal specs, same schema, same cache key; and a
    caller who edits the schema they got does not change the next one."""
    catalog = catalog_of("ana")
    parsed = [OperationSpec.model_validate_json(spec.model_dump_json()) for spec in catalog]
    first = plan_json_schema(catalog)
    assert first == plan_json_schema(parsed)
    assert catalog_key(catalog) == catalog_key(parsed) != catalog_key(catalog_of("gerente"))
    first["$defs"]["anio"]["anyOf"][0]["minimum"] = 0
    assert plan_json_schema(catalog)["$defs"]["anio"]["anyOf"][0]["minimum"] == 2000


class Periodo(BaseModel):
    desde: int = Field(ge=1, le=12)
    hasta: int = Field(ge=1, le=12)


class Total(BaseModel):
    total: int


def test_nested_parameter_models_keep_their_definitions() -> None:
    """A parameter that is a model brings its ``$defs``: they move to the plan's, under the operation."""

    def ventas_periodo(
        ctx: OperationContext,
        periodo: Periodo = Field(description="Meses."),
        anio: int = Field(ge=2000, le=2100, description="Año."),
    ) -> Total:
        """Ventas de un período."""
        return Total(total=0)

    spec = Operation.from_function(ventas_periodo, requires=set()).spec
    schema = plan_json_schema([spec])
    assert "ventas_periodo.Periodo" in schema["$defs"]
    assert violations(plan(op("ventas_periodo", periodo={"desde": 1, "hasta": 3}, anio=2025)), schema) == []
    assert violations(plan(op("ventas_periodo", periodo={"desde": 0, "hasta": 3}, anio=2025)), schema) != []


# -- what the offline planner writes under it ----------------------------------------------------------------

QUESTIONS = [
    "¿Cuánto vendimos en 2025?",
    DEPENDENT,
    "¿Cuánto vendimos en marzo de 2025 y cuáles fueron los productos más vendidos?",
    "¿Qué facturas tiene pendientes Empresa ABC?",
    "Hola, ¿qué tal?",
    "¿Cuánto vendimos por categoría en 2025?",
]


@pytest.mark.parametrize("user_id", ["gerente", "ana"])
@pytest.mark.parametrize("question", QUESTIONS)
def test_the_offline_planner_writes_plans_that_follow_the_schema(user_id: str, question: str) -> None:
    replies = RunRecorder()
    catalog = catalog_of(user_id)
    plan_of(PlannerAI(OfflineSalesModel()), question, CONTEXT, catalog, config={"callbacks": [replies]})
    written = json.loads(replies.replies[-1])
    assert violations(written, plan_json_schema(catalog)) == []
    # A direct answer leaves out "operaciones", as the prompt's example shows it alone.
    planned = written.get("operaciones", [])
    assert {o["funcion"] for o in planned} <= set(REGISTRY.names(CALLERS[user_id]))


def test_the_offline_planner_keeps_its_plans_under_the_schema() -> None:
    """The same plans as with the unconstrained schema: a dependent question still uses a ``$ref``."""
    catalog = catalog_of("gerente")
    for question in QUESTIONS:
        constrained = plan_of(PlannerAI(OfflineSalesModel()), question, CONTEXT, catalog)
        free = plan_of(PlannerAI(OfflineSalesModel(), plan_schema="free"), question, CONTEXT, catalog)
        assert constrained == free, question
    dependent = plan_of(PlannerAI(OfflineSalesModel()), DEPENDENT, CONTEXT, catalog)
    assert dependent.model_dump(exclude_none=True, exclude={"question"}) == DEPENDENT_PLAN


# -- what each provider integration sends --------------------------------------------------------------------


@pytest.fixture(scope="module")
def emulators() -> Iterator[dict[EmulatorKind, EmulatorServer]]:
    """Ollama, OpenAI-compatible and Gemini emulators backed by the offline model, on loopback."""
    with (
        create_emulator("ollama") as ollama,
        create_emulator("openai") as openai,
        create_emulator("gemini") as gemini,
    ):
        yield {"ollama": ollama, "openai": openai, "gemini": gemini}


def provider_model(kind: EmulatorKind, server: EmulatorServer) -> Any:
    url = f"{server.base_url}/v1" if kind == "openai" else server.base_url
    return build_chat_model(kind, base_url=url, api_key="k")


def sent_schema(kind: EmulatorKind, body: dict[str, Any]) -> dict[str, Any]:
    """The plan schema as the request body carries it, checking the provider's wrapping on the way."""
    if kind == "ollama":
        return dict(body["format"])
    if kind == "openai":
        response_format = body["response_format"]
        assert response_format["type"] == "json_schema"
        wrapped = response_format["json_schema"]
        assert wrapped["strict"] is False  # not OpenAI's strict mode: every property would be required
        return {"title": wrapped["name"], "description": wrapped["description"], **wrapped["schema"]}
    config = body["generationConfig"]
    assert config["responseMimeType"] == "application/json"
    return dict(config["responseJsonSchema"])


@pytest.mark.parametrize("kind", ["ollama", "openai", "gemini"])
def test_each_provider_receives_the_callers_schema_verbatim_and_the_plan_comes_back(
    emulators: dict[EmulatorKind, EmulatorServer], kind: EmulatorKind
) -> None:
    server = emulators[kind]
    server.clear_requests()
    catalog = catalog_of("ana")
    planned = plan_of(PlannerAI(provider_model(kind, server)), DEPENDENT, CONTEXT, catalog)
    (body,) = [request.body for request in server.requests if request.body]
    assert sent_schema(kind, body) == plan_json_schema(catalog)
    assert planned.model_dump(exclude_none=True, exclude={"question"}) == DEPENDENT_PLAN


def test_the_ai_server_builds_the_schema_from_the_catalog_in_the_request(
    emulators: dict[EmulatorKind, EmulatorServer],
) -> None:
    server = emulators["ollama"]
    server.clear_requests()
    # One event loop for both requests (ChatOllama's async client belongs to the loop it first ran on).
    with TestClient(create_app(provider_model("ollama", server), token="")) as client:
        for user_id in ("gerente", "ana"):
            request = AnalyzeRequest(message=DEPENDENT, context=CONTEXT, catalog=catalog_of(user_id))
            response = client.post(
                "/ai/analyze",
                content=request.model_dump_json(),
                headers={"Content-Type": "application/json"},
            )
            assert response.status_code == 200, response.text
            assert server.requests[-1].body["format"] == plan_json_schema(catalog_of(user_id))


def test_a_reference_must_hold_its_key_and_a_plan_at_most_the_validation_limit() -> None:
    from planner_mode.plan import MAX_PLAN_OPERATIONS

    schema = plan_json_schema(catalog_of("gerente"))
    too_many = plan(*[op("ventas_anuales", anio=2025)] * (MAX_PLAN_OPERATIONS + 1))

    assert violations(plan(op("compras_cliente", cliente={}, anio=2025)), schema)
    assert not violations(DEPENDENT_PLAN, schema)
    assert any("more than" in problem for problem in violations(too_many, schema))
