"""PlannerAI: one model call per method, native structured output first, tolerant parsing as a fallback."""

from __future__ import annotations

import json
from datetime import date
from typing import Any

import pytest
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.runnables import Runnable, RunnableLambda
from pydantic import Field

from planner_mode.ai import PLAN_SCHEMA_CACHE_SIZE, PlannerAI, PlanSchemaStyle
from planner_mode.plan import MAX_NESTING_DEPTH, OperationOutcome, Plan, nesting_depth
from planner_mode.plan_schema import plan_json_schema
from shared.answer import Answer
from shared.errors import ModelOutputError, ProviderError
from shared.memory.context import ConversationContext
from shared.operations.registry import OperationRegistry, OperationSpec
from shared.security import DEMO_CALLER
from tests.fakes import CallInfo, FunctionChatModel
from tests.planner_mode.planner_fakes import scripted, text_model

CONTEXT = ConversationContext(hoy=date(2026, 11, 30))
PLAN = {"operaciones": [{"funcion": "ventas_anuales", "parametros": {"anio": 2025}}], "pregunta": "¿Cuánto?"}


def test_analyze_returns_the_plan_with_one_call(toy_registry: OperationRegistry) -> None:
    model = text_model(scripted(PLAN))
    plan = PlannerAI(model).analyze("¿Cuánto vendimos en 2025?", CONTEXT, toy_registry.catalog(DEMO_CALLER))
    assert plan == Plan.model_validate(PLAN)
    assert model.call_count == 1
    assert str(model.prompts[0][1].content).endswith("Nueva pregunta:\n¿Cuánto vendimos en 2025?")


def test_missing_pregunta_is_filled_with_the_message(toy_registry: OperationRegistry) -> None:
    model = text_model(scripted({"operaciones": []}))
    assert PlannerAI(model).analyze("Hola", CONTEXT, toy_registry.catalog(DEMO_CALLER)).pregunta == "Hola"


def test_json_wrapped_in_prose_and_fences_is_recovered(toy_registry: OperationRegistry) -> None:
    text = "Este es el plan:\n```json\n" + json.dumps(PLAN)[:-1] + ",}\n```\nListo."
    model = text_model(scripted(text))
    assert (
        PlannerAI(model).analyze("x", CONTEXT, toy_registry.catalog(DEMO_CALLER)).operaciones[0].funcion
        == "ventas_anuales"
    )


@pytest.mark.parametrize(
    "text", ["", "no sé", '{"operaciones": [{"funcion": "ventas_anuales"', '{"operaciones": 5}']
)
def test_unusable_output_raises_model_output_error_after_one_call(
    toy_registry: OperationRegistry, text: str
) -> None:
    model = text_model(lambda _messages, _info: text)
    with pytest.raises(ModelOutputError):
        PlannerAI(model).analyze("x", CONTEXT, toy_registry.catalog(DEMO_CALLER))
    assert model.call_count == 1


def test_any_provider_exception_becomes_provider_error(toy_registry: OperationRegistry) -> None:
    def boom(_messages: list[BaseMessage], _info: CallInfo) -> str:
        raise ConnectionError("connection refused")

    model = text_model(boom)
    with pytest.raises(ProviderError, match="ConnectionError: connection refused"):
        PlannerAI(model).analyze("x", CONTEXT, toy_registry.catalog(DEMO_CALLER))
    assert model.call_count == 1


def test_respond_uses_the_answer_model_and_sees_the_results() -> None:
    plan_model = text_model(lambda _m, _i: "{}")
    answer_model = text_model(
        lambda _m, _i: json.dumps({"respuesta": "Vendimos ₲850.000.000.", "estado": {"anio": 2025}})
    )
    ai = PlannerAI(plan_model, answer_model)
    results = [OperationOutcome(funcion="ventas_anuales", parametros={"anio": 2025}, resultado={"total": 1})]
    answer = ai.respond("¿Cuánto vendimos?", results, CONTEXT)
    assert answer == Answer(respuesta="Vendimos ₲850.000.000.", estado={"anio": 2025})
    assert (plan_model.call_count, answer_model.call_count) == (0, 1)
    assert '"resultado": {"total": 1}' in str(answer_model.prompts[0][1].content)


def test_blank_respuesta_is_a_model_output_error() -> None:
    model = text_model(lambda _m, _i: '{"respuesta": "  "}')
    with pytest.raises(ModelOutputError, match="empty"):
        PlannerAI(model).respond("x", [], CONTEXT)


class StructuredFake(FunctionChatModel):
    """Records each ``with_structured_output`` request; returns ``bound model | strict JSON parser``.

    The parser is ``json.loads`` (not the shared fake's lenient ``JsonOutputParser``), so fenced JSON fails to
    parse here and ``PlannerAI``'s fallback to the raw text is what gets exercised.
    """

    requested: list[dict[str, Any]] = Field(default_factory=list)

    def with_structured_output(
        self, schema: Any, *, include_raw: bool = False, **kwargs: Any
    ) -> Runnable[Any, Any]:
        self.requested.append({"schema": schema, "include_raw": include_raw, **kwargs})
        return RunnableLambda(self.invoke) | RunnableLambda(lambda raw: json.loads(raw.content))


def test_native_structured_output_is_requested_as_json_schema(toy_registry: OperationRegistry) -> None:
    """Call 2's schema is bound once; call 1's is the caller's catalog's, bound on the first call for it."""
    model = StructuredFake(function=scripted(PLAN))
    ai = PlannerAI(model)
    assert [(r["schema"], r["method"], r["include_raw"]) for r in model.requested] == [
        (Answer.model_json_schema(), "json_schema", False)
    ]
    catalog = toy_registry.catalog(DEMO_CALLER)
    assert ai.analyze("x", CONTEXT, catalog) == Plan.model_validate(PLAN)
    assert model.call_count == 1
    assert [(r["schema"], r["method"]) for r in model.requested[1:]] == [
        (plan_json_schema(catalog), "json_schema")
    ]


def test_call_one_is_bound_once_per_catalog(toy_registry: OperationRegistry) -> None:
    """The same catalog (the same specs, or equal ones parsed from a request) reuses its bound runnable; a
    different catalog gets its own."""
    model = StructuredFake(function=scripted(PLAN))
    ai = PlannerAI(model)
    catalog = toy_registry.catalog(DEMO_CALLER)
    ai.analyze("x", CONTEXT, catalog)
    ai.analyze("y", CONTEXT, catalog)
    ai.analyze("z", CONTEXT, [OperationSpec.model_validate(spec.model_dump()) for spec in catalog])
    assert len(model.requested) == 2  # the answer's, then this catalog's
    ai.analyze("x", CONTEXT, catalog[:1])
    assert len(model.requested) == 3
    assert model.requested[2]["schema"] == plan_json_schema(catalog[:1])


def test_the_bound_runnables_are_a_bounded_lru() -> None:
    """The least recently used catalog is dropped first: asked again, it is bound again."""
    model = StructuredFake(function=scripted(PLAN))
    ai = PlannerAI(model)
    catalogs = [
        [OperationSpec(name=f"op{i}", description="Una operación.", parameters={"type": "object"})]
        for i in range(PLAN_SCHEMA_CACHE_SIZE + 1)
    ]
    for catalog in catalogs:
        ai.analyze("x", CONTEXT, catalog)
    assert len(model.requested) == 1 + len(catalogs)
    ai.analyze("x", CONTEXT, catalogs[-1])  # recent: kept
    assert len(model.requested) == 1 + len(catalogs)
    ai.analyze("x", CONTEXT, catalogs[0])  # the oldest: dropped when the last one came in
    assert len(model.requested) == 2 + len(catalogs)
    assert model.requested[-1]["schema"] == plan_json_schema(catalogs[0])


@pytest.mark.parametrize(
    ("style", "names"),
    [("enum", ["ventas_anuales", "mejor_cliente", "compras_cliente"]), ("free", None)],
)
def test_the_plain_schemas_can_be_chosen(
    toy_registry: OperationRegistry, style: PlanSchemaStyle, names: list[str] | None
) -> None:
    model = StructuredFake(function=scripted(PLAN))
    ai = PlannerAI(model, plan_schema=style)
    catalog = toy_registry.catalog(DEMO_CALLER)
    assert ai.analyze("x", CONTEXT, catalog) == Plan.model_validate(PLAN)
    sent = model.requested[-1]["schema"]
    item = sent["properties"]["operaciones"]["items"]
    if names is None:
        assert sent == Plan.model_json_schema()
    else:
        assert item["properties"]["funcion"] == {"type": "string", "enum": names}
    assert sent == ai.plan_json_schema(catalog)


def test_structured_parse_failure_falls_back_to_the_raw_text_without_a_second_call(
    toy_registry: OperationRegistry,
) -> None:
    model = StructuredFake(function=scripted("```json\n" + json.dumps(PLAN) + "\n```"))
    assert PlannerAI(model).analyze("x", CONTEXT, toy_registry.catalog(DEMO_CALLER)).operaciones[
        0
    ].parametros == {"anio": 2025}
    assert model.call_count == 1


def test_function_calling_structured_output_is_read_from_tool_call_args(
    toy_registry: OperationRegistry,
) -> None:
    class ToolCallingFake(StructuredFake):
        def with_structured_output(self, schema: Any, **kwargs: Any) -> Runnable[Any, Any]:
            def run(_messages: Any) -> AIMessage:
                return AIMessage(content="", tool_calls=[{"name": "Plan", "args": PLAN, "id": "1"}])

            def parse(_raw: AIMessage) -> dict[str, Any]:
                raise ValueError("a JSON-content parser cannot read tool calls")

            return RunnableLambda(run) | RunnableLambda(parse)

    plan = PlannerAI(ToolCallingFake(function=lambda _m, _i: "")).analyze(
        "x", CONTEXT, toy_registry.catalog(DEMO_CALLER)
    )
    assert plan == Plan.model_validate(PLAN)


def test_a_state_nested_too_deeply_is_clipped_before_the_erp_stores_it() -> None:
    estado: Any = 1
    for _ in range(300):  # past pydantic's serialisation depth: the turn record could not even be written out
        estado = [estado]
    model = text_model(lambda _m, _i: json.dumps({"respuesta": "ok", "estado": {"x": estado}}))
    answer = PlannerAI(model).respond("x", [], CONTEXT)
    assert answer.respuesta == "ok" and nesting_depth(answer.estado) <= MAX_NESTING_DEPTH
    assert len(json.dumps(answer.estado)) < 1000
    assert model.call_count == 1


@pytest.mark.parametrize("depth", [40, 300, 5_000])
def test_parameters_nested_too_deeply_make_the_plan_unreadable(
    toy_registry: OperationRegistry, depth: int
) -> None:
    text = '{"operaciones": [{"funcion": "ventas_anuales", "parametros": {"x": ' + "[" * depth + "]" * depth
    model = text_model(scripted(text + "}}]}"))
    with pytest.raises(ModelOutputError):
        PlannerAI(model).analyze("x", CONTEXT, toy_registry.catalog(DEMO_CALLER))
    assert model.call_count == 1
