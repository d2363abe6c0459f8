"""PlannerAI's asynchronous and streamed calls: the same request and the same reading as the synchronous ones.

``astream_respond`` yields the ``respuesta`` text as the model writes it, then the strictly parsed answer; the
streamed call is reported to callbacks like any other (usage included), and fails like ``respond`` does.
``astream_analyze`` does the same for call 1's direct answer, only when it is the reply's first key.
"""

from __future__ import annotations

import json
from datetime import date
from typing import Any

import pytest
from langchain_core.language_models import BaseChatModel
from langchain_core.runnables import RunnableConfig

from benchmarks.stand_ins.faults import FaultConfig
from planner_mode.ai import DirectAnswerText, PlannerAI
from planner_mode.plan import Answer, OperationOutcome, Plan
from shared.errors import ModelOutputError, OutputLimitError, ProviderError, ProviderTimeoutError
from shared.llm import build_chat_model
from shared.llm.usage import UsageTracker
from shared.memory.context import ConversationContext
from shared.operations.registry import OperationRegistry, OperationSpec
from shared.security import DEMO_CALLER
from tests.planner_mode.planner_fakes import scripted, text_model

CONTEXT = ConversationContext(hoy=date(2026, 11, 30))
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
    items = [item async for item in ai.astream_respond(QUESTION, RESULTS, CONTEXT, config=config)]
    *deltas, answer = items
    assert all(isinstance(delta, str) and delta for delta in deltas)
    assert isinstance(answer, Answer)
    return [str(delta) for delta in deltas], answer


def offline(**options: Any) -> BaseChatModel:
    return build_chat_model("offline", **options)


async def test_the_answer_streams_in_deltas_then_arrives_parsed_as_respond_parses_it() -> None:
    deltas, answer = await stream_answer(PlannerAI(offline()))
    assert len(deltas) >= 2
    assert "".join(deltas) == answer.respuesta
    assert answer == PlannerAI(offline()).respond(QUESTION, RESULTS, CONTEXT)
    assert "₲850.000.000" in answer.respuesta and "Empresa ABC" in answer.respuesta


async def test_a_streamed_call_is_reported_to_callbacks_with_its_usage() -> None:
    tracker, reference = UsageTracker(), UsageTracker()
    # Two models: one model's second identical prompt would be served from its prefix cache.
    PlannerAI(offline(latency_profile="gpu-8b")).respond(
        QUESTION, RESULTS, CONTEXT, config={"callbacks": [reference]}
    )

    answers: list[Answer] = []
    async for item in PlannerAI(offline(latency_profile="gpu-8b")).astream_respond(
        QUESTION, RESULTS, CONTEXT, config={"callbacks": [tracker]}
    ):
        if isinstance(item, Answer):  # the model's run has ended by then: its usage is counted
            assert (tracker.calls, tracker.output_tokens) == (1, reference.output_tokens)
            answers.append(item)
    assert len(answers) == 1
    assert tracker.snapshot() == reference.snapshot().model_copy(update={"model_ms": tracker.model_ms})
    assert tracker.simulated_model_ms is not None and tracker.simulated_model_ms > 0


async def test_aanalyze_and_arespond_match_their_synchronous_twins(toy_registry: OperationRegistry) -> None:
    catalog = toy_registry.catalog(DEMO_CALLER)
    ai = PlannerAI(offline())
    assert await ai.aanalyze(QUESTION, CONTEXT, catalog) == ai.analyze(QUESTION, CONTEXT, catalog)
    assert await ai.arespond(QUESTION, RESULTS, CONTEXT) == ai.respond(QUESTION, RESULTS, CONTEXT)


async def test_async_calls_fail_like_the_synchronous_ones(toy_registry: OperationRegistry) -> None:
    catalog = toy_registry.catalog(DEMO_CALLER)
    with pytest.raises(ProviderTimeoutError):
        await PlannerAI(offline(faults=FaultConfig(mode="timeout"))).aanalyze(QUESTION, CONTEXT, catalog)
    with pytest.raises(ProviderError):
        await PlannerAI(offline(faults=FaultConfig(mode="provider_error"))).arespond(
            QUESTION, RESULTS, CONTEXT
        )
    with pytest.raises(ModelOutputError):
        await PlannerAI(text_model(scripted({}, lambda _r: '{"respuesta": "  "}'))).arespond(
            QUESTION, RESULTS, CONTEXT
        )


async def test_a_reply_cut_at_the_cap_raises_after_the_deltas_already_streamed() -> None:
    seen: list[str] = []
    with pytest.raises(OutputLimitError) as raised:
        async for item in PlannerAI(offline(max_tokens=12)).astream_respond(QUESTION, RESULTS, CONTEXT):
            assert isinstance(item, str), "a cut reply never becomes an answer"
            seen.append(item)
    assert seen and raised.value.max_tokens == 12


async def test_a_connection_dropped_midway_raises_a_provider_error_after_the_deltas() -> None:
    seen: list[str] = []
    tracker = UsageTracker()
    with pytest.raises(ProviderError):
        async for item in PlannerAI(offline(faults=FaultConfig(mode="stream_break"))).astream_respond(
            QUESTION, RESULTS, CONTEXT, config={"callbacks": [tracker]}
        ):
            assert isinstance(item, str)
            seen.append(item)
    assert seen and tracker.calls == 1 and tracker.output_tokens > 0  # the broken call still counts


async def test_an_answer_the_stream_could_not_decode_arrives_as_one_last_delta() -> None:
    # An unclosed <think> hides everything from the stream; the strict parser still finds the answer there.
    reply = '<think>{"respuesta": "Vendimos ₲850.000.000."}'
    deltas, answer = await stream_answer(PlannerAI(text_model(lambda _m, _i: reply)))
    assert deltas == ["Vendimos ₲850.000.000."] == [answer.respuesta]


async def test_when_the_parser_picks_another_object_the_streamed_text_is_not_completed() -> None:
    # The stream shows the first object's text; the strict parser refuses it (memoria is no list) and takes
    # the next one. No delta can turn one text into the other: the final answer supersedes what was shown.
    reply = json.dumps({"respuesta": "Borrador", "memoria": "x"}) + json.dumps({"respuesta": "Final"})
    deltas, answer = await stream_answer(PlannerAI(text_model(lambda _m, _i: reply)))
    assert deltas == ["Borrador"] and answer.respuesta == "Final"


async def test_a_model_that_cannot_stream_gives_its_whole_answer_as_one_delta() -> None:
    reply = json.dumps({"respuesta": "Vendimos ₲850.000.000.", "memoria": [], "estado": {}})
    deltas, answer = await stream_answer(PlannerAI(text_model(lambda _m, _i: reply)))
    assert deltas == [answer.respuesta] == ["Vendimos ₲850.000.000."]


# -- call 1 streamed: a direct answer as the model writes it ------------------------------------------------


async def stream_plan(ai: PlannerAI, message: str, catalog: list[OperationSpec]) -> tuple[list[str], Plan]:
    """The deltas of ``astream_analyze`` and its last item, which must be the one and only ``Plan``."""
    items = [item async for item in ai.astream_analyze(message, CONTEXT, catalog)]
    *deltas, plan = items
    assert all(isinstance(delta, str) and delta for delta in deltas)
    assert isinstance(plan, Plan)
    return [str(delta) for delta in deltas], plan


async def test_a_direct_answer_streams_in_deltas_then_the_plan_arrives_parsed_as_analyze_parses_it(
    toy_registry: OperationRegistry,
) -> None:
    catalog = toy_registry.catalog(DEMO_CALLER)
    deltas, plan = await stream_plan(PlannerAI(offline()), "Hola", catalog)
    assert len(deltas) >= 2 and "".join(deltas) == plan.respuesta_directa
    assert plan == PlannerAI(offline()).analyze("Hola", CONTEXT, catalog)


async def test_a_plan_with_operations_streams_no_text(toy_registry: OperationRegistry) -> None:
    catalog = toy_registry.catalog(DEMO_CALLER)
    deltas, plan = await stream_plan(PlannerAI(offline()), QUESTION, catalog)
    assert deltas == [] and [op.funcion for op in plan.operaciones] == ["ventas_anuales", "mejor_cliente"]


async def test_a_direct_answer_whose_connection_drops_raises_after_its_deltas(
    toy_registry: OperationRegistry,
) -> None:
    seen: list[str] = []
    ai = PlannerAI(offline(faults=FaultConfig(mode="stream_break")))
    with pytest.raises(ProviderError):
        async for item in ai.astream_analyze("Hola", CONTEXT, toy_registry.catalog(DEMO_CALLER)):
            assert isinstance(item, str)
            seen.append(item)
    assert seen


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
