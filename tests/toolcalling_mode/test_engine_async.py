"""ToolCallingEngine's async API: aask and astream run the same turn as ask; events, failures, threads,
callbacks and logging."""

from __future__ import annotations

import asyncio
import contextvars
import json
import logging
import threading
from contextlib import aclosing
from typing import Any, Literal
from uuid import UUID

import pytest
from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.messages import AIMessage, BaseMessage

from benchmarks.stand_ins.faults import FaultConfig
from benchmarks.stand_ins.offline import OfflineSalesModel
from shared.errors import ConversationAccessDenied, OutputLimitError
from shared.events import AnswerDelta, OperationDone, TurnDone
from shared.failures import user_message
from shared.operations.registry import Operation, OperationRegistry
from shared.security import DEMO_CALLER, Caller
from tests.fakes import CallInfo
from tests.toolcalling_mode.toolcalling_fakes import (
    YEAR_TOTALS,
    StreamingFunctionModel,
    YearParams,
    YearTotal,
    ask_tools,
    call,
    run_turn,
    toy_registry,
)
from toolcalling_mode import ToolCallingEngine, ToolCallingLimits

QUESTION = "¿Cuánto vendimos en 2025 y cuál fue nuestro mejor cliente?"


def sales_and_best_customer(messages: list[BaseMessage], info: CallInfo) -> AIMessage | str:
    """Two tools in parallel (fixed call ids: runs compare equal), then an answer from their results."""
    if not info.tool_results:
        return ask_tools(
            {"name": "ventas_anuales", "args": {"anio": 2025}, "id": "sales", "type": "tool_call"},
            {"name": "mejor_cliente", "args": {"anio": 2025}, "id": "best", "type": "tool_call"},
        )
    results = [json.loads(str(m.content)) for m in info.tool_results]
    return f"En 2025 vendimos {results[0]['total']}; ganó {results[1]['cliente']}"


def streaming_engine(toy_erp: Any, memory_store: Any, **options: Any) -> ToolCallingEngine:
    model = StreamingFunctionModel(sales_and_best_customer, break_after=options.pop("break_after", None))
    return ToolCallingEngine(toy_registry(), toy_erp, memory_store, model, **options)


async def events_of(
    engine: ToolCallingEngine, conversation_id: str, question: str, caller: Caller = DEMO_CALLER, **kw: Any
) -> list[Any]:
    return [event async for event in engine.astream(conversation_id, question, caller, **kw)]


# -- events ------------------------------------------------------------------------------------------------


async def test_astream_yields_operations_then_the_answer_in_deltas_then_the_result(
    toy_erp: Any, memory_store: Any
) -> None:
    engine = streaming_engine(toy_erp, memory_store)

    events = await events_of(engine, "c1", QUESTION)

    kinds = [type(event) for event in events]
    assert kinds == [OperationDone, OperationDone, *[AnswerDelta] * (len(events) - 3), TurnDone]
    result = events[-1].result
    # Parallel tool calls finish in any order: the events follow completion, the result the calls' order.
    assert sorted((event.operation for event in events[:2]), key=lambda op: str(op.id)) == sorted(
        result.operations, key=lambda op: str(op.id)
    )
    deltas = [event.text for event in events if isinstance(event, AnswerDelta)]
    assert len(deltas) >= 2
    assert "".join(deltas) == result.answer
    assert result.recorded and memory_store.history("c1")[-1].content == result.answer
    assert result.first_answer_ms is not None and 0 < result.first_answer_ms <= result.total_ms


async def test_replayed_history_yields_no_operation_events(toy_erp: Any, memory_store: Any) -> None:
    engine = streaming_engine(toy_erp, memory_store, policy="full_history")
    await events_of(engine, "c1", QUESTION)

    events = await events_of(engine, "c1", QUESTION)  # the first turn's tool results are replayed

    operations = [event.operation for event in events if isinstance(event, OperationDone)]
    assert operations == events[-1].result.operations and len(operations) == 2


async def test_text_written_before_tool_calls_is_streamed_and_the_result_supersedes_it(
    toy_erp: Any, memory_store: Any
) -> None:
    def with_preamble(messages: list[BaseMessage], info: CallInfo) -> AIMessage | str:
        if not info.tool_results:
            return ask_tools(call("ventas_anuales", anio=2025), text="Voy a consultar. ")
        return "Vendimos 850000000."

    engine = ToolCallingEngine(toy_registry(), toy_erp, memory_store, StreamingFunctionModel(with_preamble))

    events = await events_of(engine, "c1", "¿Cuánto vendimos en 2025?")

    shown = "".join(event.text for event in events if isinstance(event, AnswerDelta))
    assert shown == "Voy a consultar.\n\nVendimos 850000000."  # documented in toolcalling_mode._streaming
    assert events[-1].result.answer == "Vendimos 850000000."
    assert memory_store.history("c1")[-1].content == "Vendimos 850000000."


async def test_ask_and_aask_measure_no_first_answer_time(toy_erp: Any, memory_store: Any) -> None:
    engine = streaming_engine(toy_erp, memory_store)

    assert engine.ask("c1", QUESTION, DEMO_CALLER).first_answer_ms is None
    assert (await engine.aask("c2", QUESTION, DEMO_CALLER)).first_answer_ms is None


async def test_the_offline_model_streams_its_answer_in_several_deltas(
    erp: Any, registry: Any, memory_store: Any
) -> None:
    engine = ToolCallingEngine(registry, erp, memory_store, OfflineSalesModel(latency_profile="gpu-8b"))

    events = await events_of(engine, "c1", "¿Cuánto vendimos en 2025?")

    deltas = [event.text for event in events if isinstance(event, AnswerDelta)]
    result = events[-1].result
    assert len(deltas) >= 2 and "".join(deltas) == result.answer
    assert result.first_answer_call is not None and result.first_answer_call.call == result.model_calls - 1


@pytest.mark.parametrize("strategy", ["provider", "tool"])
async def test_a_structured_answer_streams_only_its_respuesta(
    erp: Any, registry: Any, memory_store: Any, strategy: Literal["provider", "tool"]
) -> None:
    model = OfflineSalesModel()
    engine = ToolCallingEngine(
        registry, erp, memory_store, model, structured=True, structured_strategy=strategy
    )

    events = await events_of(engine, "c1", "¿Cuánto vendimos en 2025?")

    deltas = [event.text for event in events if isinstance(event, AnswerDelta)]
    result = events[-1].result
    assert result.failure is None and result.state["tema"] == "ventas"  # the structured answer's estado
    assert len(deltas) >= 2 and "".join(deltas) == result.answer
    assert "memoria" not in "".join(deltas)


# -- failures and refusals -----------------------------------------------------------------------------------


async def test_a_stream_that_breaks_midway_through_the_answer_records_nothing(
    toy_erp: Any, memory_store: Any
) -> None:
    engine = streaming_engine(toy_erp, memory_store, break_after=3)

    events = await events_of(engine, "c1", QUESTION)

    shown = [event.text for event in events if isinstance(event, AnswerDelta)]
    result = events[-1].result
    assert "".join(shown) == "En 2025 vendimos"  # the user saw part of the answer…
    assert (result.failure, result.answer) == ("provider", user_message("provider"))  # …which this replaces
    assert not result.recorded
    assert memory_store.history("c1") == [] and memory_store.get_conversation("c1") is None
    assert len(result.operations) == 2 and result.model_calls == 2


@pytest.mark.parametrize("driver", ["ask", "astream"])
async def test_a_dropped_connection_of_the_offline_model_ends_the_turn_with_or_without_a_reader(
    erp: Any, registry: Any, memory_store: Any, driver: str
) -> None:
    engine = ToolCallingEngine(registry, erp, memory_store, OfflineSalesModel(faults="stream_break"))

    result = await run_turn(engine, driver, "c1", "¿Cuánto vendimos en 2025?")

    assert result.failure == "provider" and not result.recorded
    assert result.model_calls == 1 and result.input_tokens > 0
    assert memory_store.get_conversation("c1") is None


async def test_an_answer_cut_by_a_dropped_connection_has_no_answering_call(
    erp: Any, registry: Any, memory_store: Any
) -> None:
    faults = FaultConfig(mode="stream_break", rate=0.5, seed=0)
    assert not faults.strikes(0) and faults.strikes(1)  # the tool step completes; the answer breaks
    model = OfflineSalesModel(latency_profile="gpu-8b", faults=faults)
    engine = ToolCallingEngine(registry, erp, memory_store, model)

    events = await events_of(engine, "c1", "¿Cuánto vendimos en 2025?")

    result = events[-1].result
    assert any(isinstance(event, AnswerDelta) for event in events)
    assert result.failure == "provider" and not result.recorded
    assert result.first_answer_ms is not None  # the reader did see text…
    assert result.first_answer_call is None  # …but no answer was written (ask would see none)


def looping(messages: list[BaseMessage], info: CallInfo) -> AIMessage:
    return ask_tools(call("ventas_anuales", anio=2025))


def cut_at_the_cap(messages: list[BaseMessage], info: CallInfo) -> AIMessage:
    reply = ask_tools(call("ventas_anuales", anio=2025))
    reply.response_metadata["finish_reason"] = "length"
    return reply


@pytest.mark.parametrize(
    ("function", "limits", "failure", "calls"),
    [
        (looping, ToolCallingLimits(), "limit", 6),  # the model-call limit
        (looping, ToolCallingLimits(model_calls=100, recursion_limit=10), "limit", 3),  # the recursion limit
        (cut_at_the_cap, ToolCallingLimits(), "model_output", 1),  # the middleware refuses a cut step
    ],
)
@pytest.mark.parametrize("driver", ["ask", "astream"])
async def test_limits_and_cut_replies_end_the_turn_unrecorded(
    toy_erp: Any,
    memory_store: Any,
    driver: str,
    function: Any,
    limits: ToolCallingLimits,
    failure: str,
    calls: int,
) -> None:
    engine = ToolCallingEngine(
        toy_registry(), toy_erp, memory_store, StreamingFunctionModel(function), limits=limits
    )

    result = await run_turn(engine, driver, "c1", "¿Cuánto vendimos?")

    assert (result.failure, result.model_calls, result.recorded) == (failure, calls, False)
    cut = OutputLimitError(None) if failure == "model_output" else None
    assert result.answer == user_message(failure, cut)  # the same words in both modes
    assert memory_store.get_conversation("c1") is None


async def test_a_consumer_that_stops_reading_before_the_result_records_nothing(
    toy_erp: Any, memory_store: Any
) -> None:
    engine = streaming_engine(toy_erp, memory_store)

    async with aclosing(engine.astream("c1", QUESTION, DEMO_CALLER)) as events:
        async for event in events:
            if isinstance(event, AnswerDelta):
                break

    assert memory_store.get_conversation("c1") is None


async def test_another_users_conversation_is_refused_before_the_first_event(
    toy_erp: Any, memory_store: Any
) -> None:
    model = StreamingFunctionModel(sales_and_best_customer)
    engine = ToolCallingEngine(toy_registry(), toy_erp, memory_store, model)
    memory_store.ensure_conversation("c1", user_id="otro")
    events = engine.astream("c1", QUESTION, DEMO_CALLER)

    with pytest.raises(ConversationAccessDenied):
        await anext(events)
    with pytest.raises(ConversationAccessDenied):
        await engine.aask("c1", QUESTION, DEMO_CALLER)
    assert model.call_count == 0


async def test_an_invalid_question_ends_in_one_event(toy_erp: Any, memory_store: Any) -> None:
    engine = streaming_engine(toy_erp, memory_store)

    events = await events_of(engine, "c1", "   ")

    assert [type(event) for event in events] == [TurnDone]
    result = events[0].result
    assert (result.failure, result.model_calls, result.plan_valid) == ("input", 0, None)


# -- the event loop is never blocked -----------------------------------------------------------------------

TENANT: contextvars.ContextVar[str] = contextvars.ContextVar("tenant", default="none")


async def test_ask_inside_a_running_event_loop_runs_the_turn_elsewhere_with_the_callers_context(
    make_engine: Any,
) -> None:
    engine, _ = make_engine(lambda messages, info: f"Inquilino {TENANT.get()}.")
    TENANT.set("acme")

    results = [
        engine.ask("c1", "hola", DEMO_CALLER),
        await asyncio.to_thread(engine.ask, "c1", "hola", DEMO_CALLER),
    ]

    assert [result.answer for result in results] == ["Inquilino acme.", "Inquilino acme."]


async def test_tools_and_storage_run_outside_the_event_loop_thread(
    toy_erp: Any, memory_store: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    threads: dict[str, int] = {}

    def sales(_session: Any, params: YearParams) -> YearTotal:
        threads["tool"] = threading.get_ident()
        return YearTotal(anio=params.anio, total=YEAR_TOTALS[params.anio])

    record_turn = memory_store.record_turn

    def recording(*args: Any, **kwargs: Any) -> Any:
        threads["record_turn"] = threading.get_ident()
        return record_turn(*args, **kwargs)

    monkeypatch.setattr(memory_store, "record_turn", recording)
    registry = OperationRegistry(
        [Operation("ventas_anuales", "Total vendido.", YearParams, YearTotal, sales)]
    )

    def reply(messages: list[BaseMessage], info: CallInfo) -> AIMessage | str:
        return "Listo." if info.tool_results else ask_tools(call("ventas_anuales", anio=2025))

    engine = ToolCallingEngine(registry, toy_erp, memory_store, StreamingFunctionModel(reply))

    result = await engine.aask("c1", "¿Cuánto vendimos en 2025?", DEMO_CALLER)

    assert result.recorded and result.operations[0].ok
    loop_thread = threading.get_ident()
    assert threads["tool"] != loop_thread and threads["record_turn"] != loop_thread


# -- callbacks -----------------------------------------------------------------------------------------------


class RunTree(BaseCallbackHandler):
    """Records every chain and chat-model run with its parent, name, tags and metadata."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.chains: dict[UUID, dict[str, Any]] = {}
        self.models: dict[UUID, UUID | None] = {}
        self.outputs: dict[UUID, Any] = {}

    def on_chain_start(
        self, serialized: Any, inputs: Any, *, run_id: UUID, parent_run_id: UUID | None = None, **kw: Any
    ) -> None:
        with self.lock:
            self.chains[run_id] = {
                "parent": parent_run_id,
                "name": kw.get("name"),
                "tags": kw.get("tags"),
                "metadata": kw.get("metadata"),
            }

    def on_chain_end(self, outputs: Any, *, run_id: UUID, **kw: Any) -> None:
        with self.lock:
            self.outputs[run_id] = outputs

    def on_chat_model_start(
        self, serialized: Any, messages: Any, *, run_id: UUID, parent_run_id: UUID | None = None, **kw: Any
    ) -> None:
        with self.lock:
            self.models[run_id] = parent_run_id

    def root_of(self, run: UUID | None) -> UUID | None:
        while run is not None and self.chains.get(run, {}).get("parent") is not None:
            run = self.chains[run]["parent"]
        return run


@pytest.mark.parametrize("driver", ["ask", "aask", "astream"])
async def test_callbacks_see_exactly_the_turns_model_calls_under_one_turn_run(
    erp: Any, registry: Any, memory_store: Any, driver: str
) -> None:
    engine = ToolCallingEngine(registry, erp, memory_store, OfflineSalesModel())
    tree = RunTree()
    config: Any = {"callbacks": [tree], "tags": ["erp-web"], "metadata": {"tenant": "acme"}}
    question = "¿Cuánto compró nuestro mejor cliente en 2025?"  # two dependent steps: three model calls

    result = await run_turn(engine, driver, "c1", question, config=config)

    assert result.model_calls == 3 and len(tree.models) == 3
    [root] = [run for run, chain in tree.chains.items() if chain["parent"] is None]
    assert tree.chains[root]["name"] == "toolcalling turn"
    assert "erp-web" in tree.chains[root]["tags"]
    assert tree.chains[root]["metadata"]["tenant"] == "acme"
    assert {tree.root_of(parent) for parent in tree.models.values()} == {root}
    agent_runs = [chain["name"] for chain in tree.chains.values() if chain["parent"] == root]
    assert agent_runs == ["toolcalling"]  # the compiled agent graph, whose descendants are the calls
    assert tree.outputs[root]["answer"] == result.answer and tree.outputs[root]["failure"] is None


async def test_run_name_names_the_turn_run(toy_erp: Any, memory_store: Any) -> None:
    engine = streaming_engine(toy_erp, memory_store)
    tree = RunTree()

    await engine.aask("c1", QUESTION, DEMO_CALLER, config={"callbacks": [tree], "run_name": "pedido 42"})

    assert [chain["name"] for chain in tree.chains.values() if chain["parent"] is None] == ["pedido 42"]


# -- logging -------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("driver", ["ask", "astream"])
async def test_every_finished_turn_is_logged_once(
    toy_erp: Any, memory_store: Any, caplog: pytest.LogCaptureFixture, driver: str
) -> None:
    engine = streaming_engine(toy_erp, memory_store)
    ana = Caller(user_id="ana", roles=frozenset({"gerente"}), name="Ana")
    caplog.set_level(logging.INFO, logger="toolcalling_mode")

    await run_turn(engine, driver, "c1", QUESTION, ana)

    [record] = [r for r in caplog.records if r.name == "toolcalling_mode"]
    assert record.levelno == logging.INFO
    fields = getattr(record, "erp_ai")  # noqa: B009 (set through ``extra``)
    assert fields["conversation_id"] == "c1" and fields["user_id"] == "ana"
    assert fields["mode"] == "toolcalling" and fields["model_calls"] == 2
    assert fields["failure"] is None and fields["recorded"] is True
    assert QUESTION not in record.getMessage()  # question and answer texts are never logged


async def test_a_failed_turn_is_logged_as_a_warning_with_its_kind(
    toy_erp: Any, memory_store: Any, caplog: pytest.LogCaptureFixture
) -> None:
    engine = streaming_engine(toy_erp, memory_store, break_after=3)
    caplog.set_level(logging.INFO, logger="toolcalling_mode")

    await events_of(engine, "c1", QUESTION)

    [record] = [r for r in caplog.records if r.name == "toolcalling_mode"]
    assert record.levelno == logging.WARNING
    assert getattr(record, "erp_ai")["failure"] == "provider"  # noqa: B009


# -- concurrent turns on one conversation ------------------------------------------------------------------


async def test_a_turn_planned_before_another_turn_was_recorded_is_flagged_stale(
    toy_erp: Any, memory_store: Any
) -> None:
    engine = streaming_engine(toy_erp, memory_store)
    engine.ask("c1", QUESTION, DEMO_CALLER)  # the conversation exists

    async with aclosing(engine.astream("c1", QUESTION, DEMO_CALLER)) as events:
        first = await anext(events)  # this turn read its context; now another turn lands first
        assert isinstance(first, OperationDone)
        other = await asyncio.to_thread(engine.ask, "c1", QUESTION, DEMO_CALLER)
        rest = [event async for event in events]

    late = rest[-1].result
    assert not other.stale_state
    assert late.recorded and late.stale_state
    contents = [message.content for message in memory_store.history("c1")]
    assert contents.count(QUESTION) == 3  # nothing lost: both concurrent turns recorded, whole
