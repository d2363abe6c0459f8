"""The offline model streams: several chunks per reply, whose sum is exactly what ``invoke`` returns.

The property is checked over every model call of a real run of the default benchmark suite (planner calls 1
and 2, tool-calling steps, structured final answers), recorded once for this module and replayed against
fresh models, so the prompts are the ones the engines really send. Fault modes behave the same streamed and
not; ``stream_break`` is the one that differs by design: a stream delivers its first half, then fails.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from uuid import UUID

import pytest
from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage

from benchmarks.runner import RunConfig, run_suite
from benchmarks.scenario import load_scenarios
from benchmarks.stand_ins.chunks import PIECE_MAX_CHARS
from benchmarks.stand_ins.faults import FAULT_MODES, FaultConfig, FaultMode, OfflineStreamBreak
from benchmarks.stand_ins.offline import OfflineSalesModel
from shared.errors import ProviderError, ProviderTimeoutError
from shared.operations.sales import sales_registry
from tests.benchmarks.stand_ins.offline.offline_prompts import answer_messages, merged, outcome, plan_messages

RAISING: tuple[FaultMode, ...] = ("provider_error", "timeout", "stream_break")
"""Fault modes that end a call with an exception instead of a reply."""
REPLAYED = ("tools", "tool_choice", "response_format", "format", "max_tokens")
"""The call options the offline model acts on, replayed from the recorded invocation parameters."""


@dataclass(frozen=True)
class RecordedCall:
    """One model call of the suite run: the messages and the options it was made with."""

    messages: list[BaseMessage]
    options: dict[str, Any]


class CallRecorder(BaseCallbackHandler):
    """Records every chat-model call made with it attached."""

    def __init__(self) -> None:
        self.calls: list[RecordedCall] = []

    def on_chat_model_start(
        self, serialized: dict[str, Any], messages: list[list[BaseMessage]], *, run_id: UUID, **kwargs: Any
    ) -> None:
        params = kwargs.get("invocation_params") or {}
        options = {key: params[key] for key in REPLAYED if params.get(key) is not None}
        self.calls.append(RecordedCall(messages=list(messages[0]), options=options))


@pytest.fixture(scope="module")
def suite_calls(erp_db_url: str, tmp_path_factory: pytest.TempPathFactory) -> list[RecordedCall]:
    """Every call of the default suite in both modes, and of its first scenarios in tool calling with a
    structured final answer."""
    recorder = CallRecorder()
    model = OfflineSalesModel(callbacks=[recorder])
    scenarios = load_scenarios(registry=sales_registry())
    runs = [(["planner", "toolcalling"], False, scenarios), (["toolcalling"], True, scenarios[:15])]
    for modes, structured, suite in runs:
        out_dir: Path = tmp_path_factory.mktemp("suite")
        config = RunConfig(modes=modes, out_dir=out_dir, structured=structured)
        run_suite(suite, config, db_url=erp_db_url, model=model, show_progress=False)
    return recorder.calls


def sample(calls: Sequence[RecordedCall], every: int) -> list[RecordedCall]:
    """Every ``every``-th call, so slower checks still see every kind of call."""
    return list(calls[::every])


# -- helpers -------------------------------------------------------------------------------------------------


def invoked(call: RecordedCall, **model: Any) -> AIMessage:
    reply = OfflineSalesModel(**model).invoke(call.messages, **call.options)
    assert isinstance(reply, AIMessage)
    return reply


def streamed(call: RecordedCall, **model: Any) -> list[AIMessageChunk]:
    return list(OfflineSalesModel(**model).stream(call.messages, **call.options))


def astreamed(call: RecordedCall, **model: Any) -> list[AIMessageChunk]:
    async def collect() -> list[AIMessageChunk]:
        return [chunk async for chunk in OfflineSalesModel(**model).astream(call.messages, **call.options)]

    return asyncio.run(collect())


def fields(message: AIMessage) -> dict[str, Any]:
    """What must be identical streamed or not (the message id is LangChain's, per run)."""
    return {
        "content": message.content,
        "tool_calls": message.tool_calls,
        "invalid_tool_calls": message.invalid_tool_calls,
        "usage_metadata": message.usage_metadata,
        "response_metadata": message.response_metadata,
    }


def content_chunks(chunks: Sequence[AIMessageChunk]) -> int:
    return sum(1 for chunk in chunks if chunk.text)


# -- the recording -------------------------------------------------------------------------------------------


def test_the_recorded_suite_has_every_kind_of_call(suite_calls: list[RecordedCall]) -> None:
    schemas = [json.dumps(c.options.get("response_format")) for c in suite_calls]
    assert len(suite_calls) > 400
    assert any("operaciones" in s for s in schemas), "planner call 1"
    assert any("respuesta" in s and "memoria" in s for s in schemas), "planner call 2"
    assert sum(1 for c in suite_calls if c.options.get("tools")) > 200, "tool-calling steps"
    assert any(
        c.options.get("tools") and "respuesta" in json.dumps(c.options.get("response_format"))
        for c in suite_calls
    ), "tool calling asking for a structured final answer"


# -- the property --------------------------------------------------------------------------------------------


def test_every_streamed_reply_sums_to_the_invoked_reply(suite_calls: list[RecordedCall]) -> None:
    for call in suite_calls:
        reply = invoked(call, latency_profile="gpu-8b")
        chunks = streamed(call, latency_profile="gpu-8b")

        assert fields(merged(chunks)) == fields(reply), call
        if len(str(reply.content).split()) >= 2:
            assert content_chunks(chunks) >= 2, call
        if any(len(json.dumps(c["args"])) > PIECE_MAX_CHARS for c in reply.tool_calls):
            tool_chunks = [c for c in chunks if c.tool_call_chunks]
            assert len(tool_chunks) > len(reply.tool_calls), call  # long arguments arrive in pieces too


def test_astream_sends_the_same_chunks_as_stream(suite_calls: list[RecordedCall]) -> None:
    for call in sample(suite_calls, 10):
        sync = streamed(call)
        async_ = astreamed(call)

        assert [(c.content, c.tool_call_chunks) for c in async_] == [
            (c.content, c.tool_call_chunks) for c in sync
        ]
        assert fields(merged(async_)) == fields(invoked(call)), call


def test_invoke_through_langchains_streaming_path_gives_the_same_reply(
    suite_calls: list[RecordedCall],
) -> None:
    """``streaming=True`` (or a streaming callback, as LangGraph's ``stream_mode="messages"`` attaches)
    makes ``invoke`` assemble the reply from ``_stream``: it must not differ."""
    for call in sample(suite_calls, 6):
        assert fields(invoked(call, streaming=True)) == fields(invoked(call)), call


def test_a_reply_cut_at_the_output_cap_streams_the_same_cut_reply(suite_calls: list[RecordedCall]) -> None:
    cut = 0
    for call in sample(suite_calls, 5):
        reply = invoked(call, max_tokens=25)
        cut += reply.response_metadata["finish_reason"] == "length"
        assert fields(merged(streamed(call, max_tokens=25))) == fields(reply), call
    assert cut > 20


@pytest.mark.parametrize("mode", [m for m in FAULT_MODES if m not in RAISING])
def test_a_fault_gives_the_same_reply_streamed_or_not(
    suite_calls: list[RecordedCall], mode: FaultMode
) -> None:
    model = {"faults": FaultConfig(mode=mode), "max_tokens": 300}
    for call in sample(suite_calls, 20):
        reply = invoked(call, **model)

        assert fields(merged(streamed(call, **model))) == fields(reply), call
        assert fields(invoked(call, streaming=True, **model)) == fields(reply), call


@pytest.mark.parametrize("mode", ["malformed_json", "truncated_json"])
def test_broken_tool_arguments_stay_invalid_tool_calls_when_streamed(
    suite_calls: list[RecordedCall], mode: FaultMode
) -> None:
    """LangChain completes a prefix of streamed arguments into a valid call; the fault's arguments must not be
    completable, or a streamed turn would run a tool the unstreamed turn refuses."""
    broken = 0
    for call in [c for c in suite_calls if c.options.get("tools")][:40]:
        reply = invoked(call, faults=mode)
        total = merged(streamed(call, faults=mode))
        broken += len(reply.invalid_tool_calls)

        assert total.invalid_tool_calls == reply.invalid_tool_calls
        assert [c["name"] for c in total.tool_calls] == [c["name"] for c in reply.tool_calls]
    assert broken > 10


# -- failures ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("mode", "error"), [("provider_error", ProviderError), ("timeout", ProviderTimeoutError)]
)
def test_provider_failures_raise_before_the_first_chunk(mode: FaultMode, error: type[Exception]) -> None:
    stream = OfflineSalesModel(faults=mode).stream(plan_messages("¿Cuánto vendimos en 2025?"))
    with pytest.raises(error):
        next(stream)


def answer_call() -> RecordedCall:
    messages = answer_messages("¿Cuánto vendimos en 2025?", [outcome("ventas_anuales", anio=2025)])
    return RecordedCall(messages=messages, options={})


def test_a_stream_break_delivers_the_first_half_of_the_reply_then_a_provider_error() -> None:
    call = answer_call()
    full = streamed(call)
    received: list[AIMessageChunk] = []

    with pytest.raises(OfflineStreamBreak) as raised:
        for chunk in OfflineSalesModel(faults="stream_break").stream(call.messages):
            received.append(chunk)

    assert isinstance(raised.value, ProviderError)
    assert 1 <= len(received) == (len(full) - 1) // 2
    assert [c.content for c in received] == [c.content for c in full[: len(received)]]
    assert all(not c.response_metadata and c.usage_metadata is None for c in received)  # never finished
    usage = raised.value.usage_metadata
    assert usage["input_tokens"] == full[-1].usage_metadata["input_tokens"]  # type: ignore[index]
    assert 0 < usage["output_tokens"] < full[-1].usage_metadata["output_tokens"]  # type: ignore[index]


def test_a_stream_break_fails_the_same_unstreamed_and_async() -> None:
    call = answer_call()
    with pytest.raises(OfflineStreamBreak) as sync_error:
        list(OfflineSalesModel(faults="stream_break").stream(call.messages))
    with pytest.raises(OfflineStreamBreak) as invoke_error:
        OfflineSalesModel(faults="stream_break").invoke(call.messages)

    async def consume() -> int:
        count = 0
        async for _ in OfflineSalesModel(faults="stream_break").astream(call.messages):
            count += 1
        return count

    with pytest.raises(OfflineStreamBreak) as async_error:
        asyncio.run(consume())
    assert str(invoke_error.value) == str(sync_error.value) == str(async_error.value)
    assert (
        invoke_error.value.usage_metadata
        == sync_error.value.usage_metadata
        == async_error.value.usage_metadata
    )


def test_a_stream_break_on_one_call_leaves_the_next_whole() -> None:
    """At a partial rate the fault strikes chosen calls only (here the second: the answer, not the plan)."""
    config = FaultConfig(mode="stream_break", rate=0.5, seed=SECOND_CALL_ONLY_SEED)
    model = OfflineSalesModel(faults=config)
    plan = model.invoke(plan_messages("¿Cuánto vendimos en 2025?"))
    assert "operaciones" in str(plan.content)
    with pytest.raises(OfflineStreamBreak):
        list(model.stream(answer_call().messages))


SECOND_CALL_ONLY_SEED = next(
    seed
    for seed in range(1000)
    if [FaultConfig(mode="stream_break", rate=0.5, seed=seed).strikes(i) for i in (0, 1)] == [False, True]
)
"""A seed whose fault strikes call 1 and not call 0 at rate 0.5 (a planner turn: the answer, not the plan)."""


# -- how chunks arrive ---------------------------------------------------------------------------------------


def test_the_answer_text_arrives_in_several_chunks_before_the_json_moves_on() -> None:
    chunks = streamed(answer_call())
    text = "".join(str(c.content) for c in chunks)
    answer = json.loads(text)["respuesta"]
    end_of_answer = text.index(json.dumps(answer, ensure_ascii=False)) + len(
        json.dumps(answer, ensure_ascii=False)
    )

    written = 0
    inside = 0
    for chunk in chunks:
        written += len(str(chunk.content))
        inside += 0 < written <= end_of_answer
    assert inside >= 5


class TokenCounter(BaseCallbackHandler):
    def __init__(self) -> None:
        self.tokens: list[str] = []

    def on_llm_new_token(self, token: str, **kwargs: Any) -> None:
        self.tokens.append(token)


def test_callbacks_see_each_chunk_as_a_new_token() -> None:
    counter = TokenCounter()
    chunks = list(OfflineSalesModel().stream(answer_call().messages, config={"callbacks": [counter]}))
    assert len(counter.tokens) == len(chunks)
    assert "".join(counter.tokens) == "".join(str(c.content) for c in chunks)


def test_async_chunks_arrive_one_by_one_while_other_tasks_run() -> None:
    async def run() -> list[int]:
        ticks = 0
        done = asyncio.Event()

        async def ticker() -> None:
            nonlocal ticks
            while not done.is_set():
                ticks += 1
                await asyncio.sleep(0)

        task = asyncio.create_task(ticker())
        seen = [ticks async for _ in OfflineSalesModel().astream(answer_call().messages)]
        done.set()
        await task
        return seen

    seen = asyncio.run(run())
    assert len(seen) > 10
    assert len(set(seen)) > len(seen) // 2  # the other task ran between most chunks
