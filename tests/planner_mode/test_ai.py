"""PlannerAI: one model call per method, native structured output first, tolerant parsing as a fallback.

Each call streams: ``answer`` yields the ``respuesta`` text as the model writes it, then the strictly parsed
answer; ``plan`` does the same for call 1's direct answer, only when it is the reply's first key. A streamed
call is reported to callbacks like any other (usage included).
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.output_parsers import JsonOutputParser
from langchain_core.runnables import Runnable, RunnableConfig, RunnableLambda
from pydantic import Field

from benchmarks.stand_ins import build_model
from benchmarks.stand_ins.faults import FaultConfig
from planner_mode.ai import PLAN_SCHEMA_CACHE_SIZE, PlannerAI
from planner_mode.plan import MAX_NESTING_DEPTH, Answer, OperationOutcome, Plan, nesting_depth
from planner_mode.plan_schema import PlanSchemaStyle, plan_json_schema
from planner_mode.streamed_text import DirectAnswerText
from shared.bounds import RAW_SHOWN_CHARS, reply_max_chars
from shared.errors import (
    ModelOutputError,
    OutputLimitError,
    ProviderError,
    ProviderTimeoutError,
    ReplyTooLongError,
)
from shared.llm.usage import UsageTracker
from shared.operations.registry import OperationSpec
from tests.fakes import CallInfo, FunctionChatModel, StreamingChatModel
from tests.planner_mode.planner_fakes import CONTEXT, answer_of, plan_of, scripted, text_model

PLAN = {"operaciones": [{"funcion": "ventas_anuales", "parametros": {"anio": 2025}}], "pregunta": "¿Cuánto?"}


def test_analyze_returns_the_plan_with_one_call(toy_catalog: list[OperationSpec]) -> None:
    model = text_model(scripted(PLAN))
    plan = plan_of(PlannerAI(model), "¿Cuánto vendimos en 2025?", CONTEXT, toy_catalog)
    assert plan == Plan.model_validate(PLAN)
    assert model.call_count == 1
    assert str(model.prompts[0][-1].content).endswith("Nueva pregunta:\n¿Cuánto vendimos en 2025?")


def test_missing_pregunta_is_filled_with_the_message(toy_catalog: list[OperationSpec]) -> None:
    model = text_model(scripted({"operaciones": []}))
    assert plan_of(PlannerAI(model), "Hola", CONTEXT, toy_catalog).question == "Hola"


def test_json_wrapped_in_prose_and_fences_is_recovered(toy_catalog: list[OperationSpec]) -> None:
    text = "Este es el plan:\n```json\n" + json.dumps(PLAN)[:-1] + ",}\n```\nListo."
    model = text_model(scripted(text))
    assert plan_of(PlannerAI(model), "x", CONTEXT, toy_catalog).operations[0].function == "ventas_anuales"


NESTED = '{"operaciones": [{"funcion": "ventas_anuales", "parametros": {"x": %s}}]}'
"""A plan whose parameters nest (``"[" * depth + "]" * depth``) too deeply to read."""


@pytest.mark.parametrize(
    "text",
    ["", "no sé", '{"operaciones": [{"funcion": "ventas_anuales"', '{"operaciones": 5}']
    + [NESTED % ("[" * depth + "]" * depth) for depth in (40, 300, 5_000)],
    ids=lambda text: text[:60],
)
def test_unusable_output_raises_model_output_error_after_one_call(
    toy_catalog: list[OperationSpec], text: str
) -> None:
    model = text_model(lambda _messages, _info: text)
    with pytest.raises(ModelOutputError):
        plan_of(PlannerAI(model), "x", CONTEXT, toy_catalog)
    assert model.call_count == 1


def test_any_provider_exception_becomes_provider_error(toy_catalog: list[OperationSpec]) -> None:
    def boom(_messages: list[BaseMessage], _info: CallInfo) -> str:
        raise ConnectionError("connection refused")

    model = text_model(boom)
    with pytest.raises(ProviderError, match="ConnectionError: connection refused"):
        plan_of(PlannerAI(model), "x", CONTEXT, toy_catalog)
    assert model.call_count == 1


def test_respond_uses_the_answer_model_and_sees_the_results() -> None:
    plan_model = text_model(lambda _m, _i: "{}")
    answer_model = text_model(
        lambda _m, _i: json.dumps({"respuesta": "Vendimos ₲850.000.000.", "estado": {"anio": 2025}})
    )
    ai = PlannerAI(plan_model, answer_model)
    results = [OperationOutcome(funcion="ventas_anuales", parametros={"anio": 2025}, resultado={"total": 1})]
    answer = answer_of(ai, "¿Cuánto vendimos?", results, CONTEXT)
    assert answer == Answer(respuesta="Vendimos ₲850.000.000.", estado={"anio": 2025})
    assert (plan_model.call_count, answer_model.call_count) == (0, 1)
    assert '"resultado": {"total": 1}' in str(answer_model.prompts[0][-1].content)


def test_blank_respuesta_is_a_model_output_error() -> None:
    model = text_model(lambda _m, _i: '{"respuesta": "  "}')
    with pytest.raises(ModelOutputError, match="empty"):
        answer_of(PlannerAI(model), "x", [], CONTEXT)


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


def test_native_structured_output_is_requested_as_json_schema(toy_catalog: list[OperationSpec]) -> None:
    """Call 2's schema is bound once; call 1's is the caller's catalog's, bound on the first call for it."""
    model = StructuredFake(function=scripted(PLAN))
    ai = PlannerAI(model)
    assert [(r["schema"], r["method"], r["include_raw"]) for r in model.requested] == [
        (Answer.model_json_schema(), "json_schema", False)
    ]
    assert plan_of(ai, "x", CONTEXT, toy_catalog) == Plan.model_validate(PLAN)
    assert model.call_count == 1
    assert [(r["schema"], r["method"]) for r in model.requested[1:]] == [
        (plan_json_schema(toy_catalog), "json_schema")
    ]


def test_call_one_is_bound_once_per_catalog(toy_catalog: list[OperationSpec]) -> None:
    """The same catalog (the same specs, or equal ones parsed from a request) reuses its bound runnable; a
    different catalog gets its own."""
    model = StructuredFake(function=scripted(PLAN))
    ai = PlannerAI(model)
    plan_of(ai, "x", CONTEXT, toy_catalog)
    plan_of(ai, "y", CONTEXT, toy_catalog)
    plan_of(ai, "z", CONTEXT, [OperationSpec.model_validate(spec.model_dump()) for spec in toy_catalog])
    assert len(model.requested) == 2  # the answer's, then this catalog's
    plan_of(ai, "x", CONTEXT, toy_catalog[:1])
    assert len(model.requested) == 3
    assert model.requested[2]["schema"] == plan_json_schema(toy_catalog[:1])


def test_the_bound_runnables_are_a_bounded_lru() -> None:
    """The least recently used catalog is dropped first: asked again, it is bound again."""
    model = StructuredFake(function=scripted(PLAN))
    ai = PlannerAI(model)
    catalogs = [
        [OperationSpec(name=f"op{i}", description="Una operación.", parameters={"type": "object"})]
        for i in range(PLAN_SCHEMA_CACHE_SIZE + 1)
    ]
    for catalog in catalogs:
        plan_of(ai, "x", CONTEXT, catalog)
    assert len(model.requested) == 1 + len(catalogs)
    plan_of(ai, "x", CONTEXT, catalogs[-1])  # recent: kept
    assert len(model.requested) == 1 + len(catalogs)
    plan_of(ai, "x", CONTEXT, catalogs[0])  # the oldest: dropped when the last one came in
    assert len(model.requested) == 2 + len(catalogs)
    assert model.requested[-1]["schema"] == plan_json_schema(catalogs[0])


@pytest.mark.parametrize(
    ("style", "names"),
    [("enum", ["ventas_anuales", "mejor_cliente", "compras_cliente"]), ("free", None)],
)
def test_the_plain_schemas_can_be_chosen(
    toy_catalog: list[OperationSpec], style: PlanSchemaStyle, names: list[str] | None
) -> None:
    model = StructuredFake(function=scripted(PLAN))
    ai = PlannerAI(model, plan_schema=style)
    assert plan_of(ai, "x", CONTEXT, toy_catalog) == Plan.model_validate(PLAN)
    sent = model.requested[-1]["schema"]
    item = sent["properties"]["operaciones"]["items"]
    if names is None:
        assert sent == Plan.model_json_schema()
    else:
        assert item["properties"]["funcion"] == {"type": "string", "enum": names}
    assert sent == ai.plan_json_schema(toy_catalog)


def test_without_a_plan_schema_call_one_asks_for_no_structured_output_and_reads_the_text(
    toy_catalog: list[OperationSpec],
) -> None:
    """``plan_schema="none"`` (to measure what the constraint is worth): call 1 binds no schema, its text is
    read by the same parser; call 2 still asks for the answer's schema."""
    model = StructuredFake(function=scripted("```json\n" + json.dumps(PLAN) + "\n```"))
    ai = PlannerAI(model, plan_schema="none")
    assert plan_of(ai, "x", CONTEXT, toy_catalog) == Plan.model_validate(PLAN)
    assert [request["schema"] for request in model.requested] == [Answer.model_json_schema()]


def test_structured_parse_failure_falls_back_to_the_raw_text_without_a_second_call(
    toy_catalog: list[OperationSpec],
) -> None:
    model = StructuredFake(function=scripted("```json\n" + json.dumps(PLAN) + "\n```"))
    assert plan_of(PlannerAI(model), "x", CONTEXT, toy_catalog).operations[0].parameters == {"anio": 2025}
    assert model.call_count == 1


def test_function_calling_structured_output_is_read_from_tool_call_args(
    toy_catalog: list[OperationSpec],
) -> None:
    class ToolCallingFake(StructuredFake):
        def with_structured_output(self, schema: Any, **kwargs: Any) -> Runnable[Any, Any]:
            def run(_messages: Any) -> AIMessage:
                return AIMessage(content="", tool_calls=[{"name": "Plan", "args": PLAN, "id": "1"}])

            def parse(_raw: AIMessage) -> dict[str, Any]:
                raise ValueError("a JSON-content parser cannot read tool calls")

            return RunnableLambda(run) | RunnableLambda(parse)

    plan = plan_of(
        PlannerAI(ToolCallingFake(function=lambda _m, _i: "")),
        "x",
        CONTEXT,
        toy_catalog,
    )
    assert plan == Plan.model_validate(PLAN)


def test_a_state_nested_too_deeply_is_clipped_before_the_erp_stores_it() -> None:
    estado: Any = 1
    for _ in range(300):  # past pydantic's serialisation depth: the turn record could not even be written out
        estado = [estado]
    model = text_model(lambda _m, _i: json.dumps({"respuesta": "ok", "estado": {"x": estado}}))
    answer = answer_of(PlannerAI(model), "x", [], CONTEXT)
    assert answer.text == "ok" and nesting_depth(answer.state) <= MAX_NESTING_DEPTH
    assert len(json.dumps(answer.state)) < 1000
    assert model.call_count == 1


# -- streamed ----------------------------------------------------------------------------------------------

QUESTION = "¿Cuánto vendimos en 2025 y cuál fue nuestro mejor cliente?"
RESULTS = [
    OperationOutcome(
        funcion="ventas_anuales", parametros={"anio": 2025}, resultado={"anio": 2025, "total": 850_000_000}
    ),
    OperationOutcome(
        funcion="mejor_cliente",
        parametros={"anio": 2025},
        resultado={"anio": 2025, "cliente": "Empresa ABC", "total": 120_000_000},
    ),
]


async def stream_answer(ai: PlannerAI, config: RunnableConfig | None = None) -> tuple[list[str], Answer]:
    """The deltas of ``astream_respond`` and its last item, which must be the one and only ``Answer``."""
    items = [item async for item in ai.answer(QUESTION, RESULTS, CONTEXT, [], config=config)]
    *deltas, answer = items
    assert all(isinstance(delta, str) and delta for delta in deltas)
    assert isinstance(answer, Answer)
    return [str(delta) for delta in deltas], answer


def offline(**options: Any) -> BaseChatModel:
    return build_model("offline", **options)


async def test_the_answer_streams_in_deltas_then_arrives_parsed_as_respond_parses_it() -> None:
    deltas, answer = await stream_answer(PlannerAI(offline()))
    assert len(deltas) >= 2
    assert "".join(deltas) == answer.text
    assert answer == answer_of(PlannerAI(offline()), QUESTION, RESULTS, CONTEXT)
    assert "₲850.000.000" in answer.text and "Empresa ABC" in answer.text


async def test_a_streamed_call_is_reported_to_callbacks_with_its_usage() -> None:
    tracker, reference = UsageTracker(), UsageTracker()
    # Two models: one model's second identical prompt would be served from its prefix cache.
    answer_of(
        PlannerAI(offline(latency_profile="gpu-8b")),
        QUESTION,
        RESULTS,
        CONTEXT,
        config={"callbacks": [reference]},
    )

    answers: list[Answer] = []
    async for item in PlannerAI(offline(latency_profile="gpu-8b")).answer(
        QUESTION, RESULTS, CONTEXT, [], config={"callbacks": [tracker]}
    ):
        if isinstance(item, Answer):  # the model's run has ended by then: its usage is counted
            assert (tracker.calls, tracker.output_tokens) == (1, reference.output_tokens)
            answers.append(item)
    assert len(answers) == 1
    untimed = {"model_ms": True, "calls": {"__all__": {"ms", "first_token_ms"}}}
    assert tracker.snapshot().model_dump(exclude=untimed) == reference.snapshot().model_dump(exclude=untimed)
    [call] = tracker.snapshot().calls
    assert call.first_token_ms is not None  # streamed: its first token was stamped


def test_provider_failures_keep_their_kind(toy_catalog: list[OperationSpec]) -> None:
    with pytest.raises(ProviderTimeoutError):
        plan_of(PlannerAI(offline(faults=FaultConfig(mode="timeout"))), QUESTION, CONTEXT, toy_catalog)
    with pytest.raises(ProviderError):
        answer_of(PlannerAI(offline(faults=FaultConfig(mode="provider_error"))), QUESTION, RESULTS, CONTEXT)


class OpenAIShapedFake(StreamingChatModel):
    """Structured output built as langchain-openai builds it for ``method="json_schema"``: the bound model,
    a refusal check, then LangChain's lenient ``JsonOutputParser`` (three steps, not two)."""

    def with_structured_output(self, schema: Any, **kwargs: Any) -> Runnable[Any, Any]:
        return self.bind() | RunnableLambda(lambda reply: reply) | JsonOutputParser()


async def test_an_answer_streams_as_written_when_the_provider_adds_steps_after_the_model() -> None:
    reply = json.dumps({"respuesta": "En 2025 vendimos ₲850.000.000 en total."}, ensure_ascii=False)
    deltas, answer = await stream_answer(PlannerAI(OpenAIShapedFake(function=lambda _m, _i: reply, piece=6)))
    assert len(deltas) >= 3, "the answer arrives in pieces, not as one delta at the end"
    assert "".join(deltas) == answer.text == "En 2025 vendimos ₲850.000.000 en total."


async def test_a_reply_cut_at_the_cap_is_refused_when_the_provider_adds_steps_after_the_model() -> None:
    """LangChain's JSON parser would close the cut JSON and return a shorter answer: the stop reason wins."""
    cut = AIMessage(content='{"respuesta": "En 2025 vendimos', response_metadata={"finish_reason": "length"})
    with pytest.raises(OutputLimitError):
        await stream_answer(PlannerAI(OpenAIShapedFake(function=lambda _m, _i: cut, piece=6)))


def too_long(words: int) -> str:
    """An answer of ``words`` words: more than its cap can hold when ``words`` passes the bound's words."""
    return json.dumps({"respuesta": "palabra " * words})


WORDS_IN_BOUND = reply_max_chars(None) // len("palabra ")
"""Words of a reply that fill what a reply without an output cap may hold."""


async def test_a_reply_past_what_its_cap_can_hold_stops_being_read_there() -> None:
    """The stream would break at twice the bound: the call ends at the bound, before reading that far."""
    model = StreamingChatModel(lambda _m, _i: too_long(3 * WORDS_IN_BOUND), break_after=2 * WORDS_IN_BOUND)
    with pytest.raises(ReplyTooLongError) as raised:
        await stream_answer(PlannerAI(model))
    assert raised.value.max_chars == reply_max_chars(None)
    assert raised.value.raw is not None and len(raw := raised.value.raw) < 2 * RAW_SHOWN_CHARS, len(raw)


@pytest.mark.parametrize("stream", [True, False], ids=["streamed", "whole"])
def test_a_reply_past_what_its_cap_can_hold_is_refused_before_it_is_parsed(stream: bool) -> None:
    ai = PlannerAI(StreamingChatModel(lambda _m, _i: too_long(WORDS_IN_BOUND + 1)))
    with pytest.raises(ReplyTooLongError, match="did not hold it to max_tokens"):
        answer_of(ai, QUESTION, RESULTS, CONTEXT, stream=stream)


def test_a_reply_within_what_its_cap_can_hold_is_read() -> None:
    ai = PlannerAI(StreamingChatModel(lambda _m, _i: too_long(WORDS_IN_BOUND - 10)))
    assert answer_of(ai, QUESTION, RESULTS, CONTEXT).text.startswith("palabra palabra")


async def test_a_reply_cut_at_the_cap_raises_after_the_deltas_already_streamed() -> None:
    seen: list[str] = []
    with pytest.raises(OutputLimitError) as raised:
        async for item in PlannerAI(offline(max_tokens=12)).answer(QUESTION, RESULTS, CONTEXT, []):
            assert isinstance(item, str), "a cut reply never becomes an answer"
            seen.append(item)
    assert seen and raised.value.max_tokens == 12


@pytest.mark.parametrize("call", ["answer", "plan"], ids=["answer", "direct-answer"])
async def test_a_connection_dropped_midway_raises_a_provider_error_after_the_deltas(
    toy_catalog: list[OperationSpec], call: str
) -> None:
    seen: list[str] = []
    tracker = UsageTracker()
    ai = PlannerAI(offline(faults=FaultConfig(mode="stream_break")))
    config: RunnableConfig = {"callbacks": [tracker]}
    if call == "answer":
        stream = ai.answer(QUESTION, RESULTS, CONTEXT, [], config=config)
    else:
        stream = ai.plan("Hola", CONTEXT, toy_catalog, config=config)
    with pytest.raises(ProviderError):
        async for item in stream:
            assert isinstance(item, str)
            seen.append(item)
    assert seen and tracker.calls == 1 and tracker.output_tokens > 0  # the broken call still counts


async def test_an_answer_the_stream_could_not_decode_arrives_as_one_last_delta() -> None:
    # An unclosed <think> hides everything from the stream; the strict parser still finds the answer there.
    reply = '<think>{"respuesta": "Vendimos ₲850.000.000."}'
    deltas, answer = await stream_answer(PlannerAI(text_model(lambda _m, _i: reply)))
    assert deltas == ["Vendimos ₲850.000.000."] == [answer.text]


async def test_when_the_parser_picks_another_object_the_streamed_text_is_not_completed() -> None:
    # The stream shows the first object's text; the strict parser refuses it (memoria is no list) and takes
    # the next one. No delta can turn one text into the other: the final answer supersedes what was shown.
    reply = json.dumps({"respuesta": "Borrador", "memoria": "x"}) + json.dumps({"respuesta": "Final"})
    deltas, answer = await stream_answer(PlannerAI(text_model(lambda _m, _i: reply)))
    assert deltas == ["Borrador"] and answer.text == "Final"


async def test_a_model_that_cannot_stream_gives_its_whole_answer_as_one_delta() -> None:
    reply = json.dumps({"respuesta": "Vendimos ₲850.000.000.", "memoria": [], "estado": {}})
    deltas, answer = await stream_answer(PlannerAI(text_model(lambda _m, _i: reply)))
    assert deltas == [answer.text] == ["Vendimos ₲850.000.000."]


# -- call 1 streamed: a direct answer as the model writes it ------------------------------------------------


async def stream_plan(ai: PlannerAI, message: str, catalog: list[OperationSpec]) -> tuple[list[str], Plan]:
    """The deltas of ``astream_analyze`` and its last item, which must be the one and only ``Plan``."""
    items = [item async for item in ai.plan(message, CONTEXT, catalog)]
    *deltas, plan = items
    assert all(isinstance(delta, str) and delta for delta in deltas)
    assert isinstance(plan, Plan)
    return [str(delta) for delta in deltas], plan


async def test_a_direct_answer_streams_in_deltas_then_the_plan_arrives_parsed_as_analyze_parses_it(
    toy_catalog: list[OperationSpec],
) -> None:
    deltas, plan = await stream_plan(PlannerAI(offline()), "Hola", toy_catalog)
    assert len(deltas) >= 2 and "".join(deltas) == plan.direct_answer
    assert plan == plan_of(PlannerAI(offline()), "Hola", CONTEXT, toy_catalog)


async def test_a_plan_with_operations_streams_no_text(toy_catalog: list[OperationSpec]) -> None:
    deltas, plan = await stream_plan(PlannerAI(offline()), QUESTION, toy_catalog)
    assert deltas == [] and [op.function for op in plan.operations] == ["ventas_anuales", "mejor_cliente"]


def every_split(reply: str) -> set[str]:
    """What :class:`DirectAnswerText` shows of ``reply`` fed in two pieces, for every cut."""
    shown: set[str] = set()
    for cut in range(len(reply) + 1):
        decoder = DirectAnswerText()
        text = decoder.feed(reply[:cut]) + decoder.feed(reply[cut:])
        assert text == decoder.text
        shown.add(text)
    return shown


@pytest.mark.parametrize(
    "reply, shown",
    [
        ('{"respuesta_directa":"¡Hola!"}', "¡Hola!"),
        ('{ "respuesta_directa" : "  ¡Hola!  ¿Qué tal? \\n" }', "¡Hola!  ¿Qué tal?"),
        ('<think>{"operaciones": []}</think>{"respuesta_directa":"¡Hola!"}', "¡Hola!"),
        ('```json\n{"respuesta_directa":"¡Hola!"}\n```', "¡Hola!"),
        ('{"operaciones":[],"respuesta_directa":"¡Hola!"}', ""),
        ('{"operaciones":[{"funcion":"x"}],"respuesta_directa":"No."}', ""),
        ('{"pregunta":"Hola","respuesta_directa":"¡Hola!"}', ""),
    ],
    ids=[
        "first-key",
        "spaces",
        "after-reasoning",
        "code-fence",
        "after-operations",
        "after-a-plan",
        "after-x",
    ],
)
def test_only_a_direct_answer_written_first_is_shown_whatever_the_chunks(reply: str, shown: str) -> None:
    assert every_split(reply) == {shown}


async def test_a_call_not_streamed_is_one_invoke_with_the_same_result(
    toy_catalog: list[OperationSpec],
) -> None:
    ai = PlannerAI(offline())
    planned = [item async for item in ai.plan(QUESTION, CONTEXT, toy_catalog, stream=False)]
    assert planned == [plan_of(ai, QUESTION, CONTEXT, toy_catalog)]
    *deltas, answer = [item async for item in ai.answer(QUESTION, RESULTS, CONTEXT, [], stream=False)]
    assert (
        isinstance(answer, Answer)
        and deltas == [answer.text]
        and answer == answer_of(ai, QUESTION, RESULTS, CONTEXT)
    )
