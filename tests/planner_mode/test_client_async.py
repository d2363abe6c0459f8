"""The clients' async side: callbacks in the caller's config, usage, NDJSON streams, event loops, closing.

The HTTP streams here come from ``httpx.MockTransport``; ``test_server_streaming`` and
``test_http_end_to_end_async`` run the same client against real servers.
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import AsyncIterator, Callable
from datetime import date
from types import SimpleNamespace
from typing import Any
from uuid import UUID

import httpx
import pytest
from langchain_core.callbacks import BaseCallbackHandler, BaseCallbackManager
from langchain_core.messages import BaseMessage
from langchain_core.runnables import RunnableConfig

from planner_mode.ai import PlannerAI
from planner_mode.client import AICallError, InProcessAIClient, last_item
from planner_mode.http_client import HttpAIClient
from planner_mode.plan import OperationOutcome
from planner_mode.wire import NDJSON, CallUsage, RespondResponse
from shared.errors import ModelOutputError, OutputLimitError, ProviderError, ProviderTimeoutError
from shared.memory.context import ConversationContext
from shared.tracing import aturn_run
from tests.planner_mode.planner_fakes import scripted, text_model

CONTEXT = ConversationContext(hoy=date(2026, 11, 30))
PLAN = {"operaciones": [{"funcion": "ventas_anuales", "parametros": {"anio": 2025}}], "pregunta": "q"}
USAGE = {"model_calls": 1, "input_tokens": 7, "output_tokens": 3, "model_ms": 1.5}
RESPONSE = {"answer": {"respuesta": "En 2025: ₲5."}, "usage": USAGE}


class Recorder(BaseCallbackHandler):
    """Records the chain and chat-model runs it sees, with their parents, tags and metadata."""

    def __init__(self) -> None:
        self.chains: list[UUID] = []
        self.models: list[tuple[UUID | None, list[str], dict[str, Any]]] = []

    def on_chain_start(
        self, serialized: dict[str, Any] | None, inputs: dict[str, Any], *, run_id: UUID, **kwargs: Any
    ) -> None:
        self.chains.append(run_id)

    def on_chat_model_start(
        self,
        serialized: dict[str, Any],
        messages: list[list[BaseMessage]],
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        tags: list[str] | None = None,
        metadata: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        self.models.append((parent_run_id, list(tags or []), dict(metadata or {})))


def in_process() -> InProcessAIClient:
    return InProcessAIClient(PlannerAI(text_model(scripted(PLAN))))


# -- the caller's config -------------------------------------------------------------------------------------


async def test_handlers_in_a_config_list_see_the_call_and_the_list_is_left_alone() -> None:
    recorder = Recorder()
    callbacks: list[BaseCallbackHandler] = [recorder]
    config: RunnableConfig = {"callbacks": callbacks, "tags": ["erp"], "metadata": {"tenant": "t1"}}
    analyzed = await last_item(in_process().plan("q", CONTEXT, [], config=config))
    assert analyzed.usage.model_calls == 1  # the client's own tracker counted it too
    [(_parent, tags, metadata)] = recorder.models
    assert "erp" in tags and metadata["tenant"] == "t1"
    assert config["callbacks"] is callbacks and callbacks == [recorder]


async def test_calls_made_with_a_turns_child_config_are_children_of_the_turn_run() -> None:
    recorder = Recorder()
    client = in_process()
    async with aturn_run({"callbacks": [recorder]}, mode="planner", inputs={}) as turn:
        child = turn.child_config()
        manager = child["callbacks"]
        assert isinstance(manager, BaseCallbackManager)
        handlers_before = list(manager.handlers)
        await last_item(client.plan("q", CONTEXT, [], config=child))
        await last_item(client.answer("q", [], CONTEXT, config=child))
    [turn_id] = recorder.chains
    assert [parent for parent, _tags, _metadata in recorder.models] == [turn_id, turn_id]
    assert manager.handlers == handlers_before  # the tracker went into a copy


async def test_without_a_config_the_call_is_still_measured() -> None:
    responded = await last_item(in_process().answer("q", [], CONTEXT, config=None))
    assert (responded.usage.model_calls, responded.usage.input_tokens) == (1, 100)


# -- usage on the wire ---------------------------------------------------------------------------------------


def test_call_usage_takes_the_simulated_token_times_of_the_trackers_last_call() -> None:
    tracker = SimpleNamespace(
        calls=2,
        input_tokens=10,
        output_tokens=4,
        model_ms=3.0,
        simulated_model_ms=900.0,
        simulated_calls=[
            SimpleNamespace(total_ms=400.0, first_token_ms=150.0, ms_per_output_token=20.0),
            SimpleNamespace(total_ms=500.0, first_token_ms=180.0, ms_per_output_token=25.0),
        ],
    )
    usage = CallUsage.from_tracker(tracker)
    assert (usage.simulated_first_token_ms, usage.simulated_ms_per_token) == (180.0, 25.0)
    assert CallUsage.total([usage, usage]).simulated_first_token_ms is None  # per call: no sum


def test_call_usage_without_simulated_calls_has_no_token_times() -> None:
    tracker = SimpleNamespace(
        calls=1, input_tokens=1, output_tokens=1, model_ms=1.0, simulated_model_ms=None, simulated_calls=[]
    )
    usage = CallUsage.from_tracker(tracker)
    assert usage.simulated_first_token_ms is None and usage.simulated_ms_per_token is None


async def test_a_latency_profile_gives_each_call_its_simulated_token_times() -> None:
    from benchmarks.stand_ins.latency import resolve_latency_profile
    from shared.llm import build_chat_model

    profile = resolve_latency_profile("gpu-8b")
    client = InProcessAIClient(PlannerAI(build_chat_model("offline", latency_profile="gpu-8b")))
    results = [OperationOutcome(funcion="ventas_anuales", parametros={"anio": 2025}, resultado={"total": 5})]
    streamed = [item async for item in client.answer("¿Cuánto vendimos en 2025?", results, CONTEXT)]
    usage = streamed[-1].usage
    assert isinstance(streamed[-1], RespondResponse)
    # (the offline model reports its times rounded to the microsecond)
    assert usage.simulated_first_token_ms == pytest.approx(
        profile.first_token_ms(usage.input_tokens), abs=1e-3
    )
    assert usage.simulated_ms_per_token == pytest.approx(profile.ms_per_output_token, abs=1e-3)
    assert usage.simulated_model_ms is not None and usage.simulated_model_ms > usage.simulated_first_token_ms


def test_the_wire_format_stays_readable_both_ways() -> None:
    # An older server's usage (no token times) still reads; an older client ignores the new fields.
    old = CallUsage.model_validate({"model_calls": 1, "input_tokens": 2, "output_tokens": 3, "model_ms": 4.0})
    assert old.simulated_first_token_ms is None
    new = CallUsage(simulated_first_token_ms=1.0, simulated_ms_per_token=2.0).model_dump()
    assert {"simulated_first_token_ms", "simulated_ms_per_token"} <= set(new)


# -- NDJSON streams over HTTP --------------------------------------------------------------------------------


def ndjson(*lines: dict[str, Any]) -> bytes:
    return b"".join(json.dumps(line, ensure_ascii=False).encode() + b"\n" for line in lines)


def stream_client(
    respond: Callable[[httpx.Request], httpx.Response], seen: list[httpx.Request]
) -> HttpAIClient:
    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return respond(request)

    return HttpAIClient(["http://a.test"], transport=httpx.MockTransport(handler))


async def drain(client: HttpAIClient, into: list[str | RespondResponse] | None = None) -> list[Any]:
    items = into if into is not None else []
    async for item in client.answer("q", [], CONTEXT):
        items.append(item)
    return items


DELTAS = [{"type": "answer_delta", "text": "En 2025: "}, {"type": "answer_delta", "text": "₲5."}]


async def test_a_stream_gives_the_deltas_then_the_response() -> None:
    seen: list[httpx.Request] = []
    lines = ndjson(*DELTAS, {"type": "response", **RESPONSE})
    client = stream_client(
        lambda _r: httpx.Response(200, headers={"content-type": NDJSON}, content=lines), seen
    )
    items = await drain(client)
    assert items == ["En 2025: ", "₲5.", RespondResponse.model_validate(RESPONSE)]
    assert NDJSON in seen[0].headers["accept"]
    assert set(json.loads(seen[0].content)) == {"question", "results", "context"}


async def test_a_server_that_does_not_stream_gives_just_the_response() -> None:
    client = stream_client(lambda _r: httpx.Response(200, json=RESPONSE), [])
    assert await drain(client) == [RespondResponse.model_validate(RESPONSE)]


@pytest.mark.parametrize(
    ("error", "cause", "calls"),
    [
        ({"error": "bad json", "kind": "model_output", "usage": USAGE}, ModelOutputError, 1),
        ({"error": "cut", "kind": "model_output", "usage": USAGE, "max_tokens": 64}, OutputLimitError, 1),
        ({"error": "ollama down", "kind": "provider", "usage": USAGE}, ProviderError, 1),
        ({"error": "too slow", "kind": "timeout", "usage": USAGE}, ProviderTimeoutError, 1),
        ({"error": "Internal error in the AI server (ref 0a1b2c3d).", "kind": "internal"}, ProviderError, 1),
    ],
    ids=["model-output", "output-limit", "provider", "timeout", "internal"],
)
async def test_an_error_line_after_deltas_raises_its_kind_with_the_usage(
    error: dict[str, Any], cause: type[Exception], calls: int
) -> None:
    lines = ndjson(*DELTAS, {"type": "error", **error})
    client = stream_client(
        lambda _r: httpx.Response(200, headers={"content-type": NDJSON}, content=lines), []
    )
    items: list[str | RespondResponse] = []
    with pytest.raises(AICallError) as failed:
        await drain(client, items)
    assert items == ["En 2025: ", "₲5."]
    assert type(failed.value.cause) is cause
    assert failed.value.usage.model_calls == calls  # from the line, or the call the server was making
    if error["kind"] == "internal":
        assert "ref 0a1b2c3d" in str(failed.value)


async def test_a_status_before_the_stream_maps_like_a_whole_response() -> None:
    body = {"error": "ollama down", "kind": "provider", "usage": USAGE}
    client = stream_client(lambda _r: httpx.Response(502, json=body), [])
    with pytest.raises(AICallError, match="ollama down") as failed:
        await drain(client)
    assert type(failed.value.cause) is ProviderError and failed.value.usage.input_tokens == 7


@pytest.mark.parametrize(
    ("content", "text"),
    [
        (ndjson(*DELTAS), "without a response"),
        (ndjson(DELTAS[0]) + b"{not json}\n", "unexpected stream line"),
        (ndjson(DELTAS[0], {"type": "surprise"}), "unexpected stream line"),
    ],
    ids=["no-final-line", "not-json", "unknown-type"],
)
async def test_a_stream_without_a_proper_last_line_is_a_provider_error_counting_the_call(
    content: bytes, text: str
) -> None:
    client = stream_client(
        lambda _r: httpx.Response(200, headers={"content-type": NDJSON}, content=content), []
    )
    with pytest.raises(AICallError, match=text) as failed:
        await drain(client)
    assert type(failed.value.cause) is ProviderError
    assert failed.value.usage.model_calls == 1


class BrokenStream(httpx.AsyncByteStream):
    """A response body that sends some lines, then fails with ``failure``; records whether it was closed."""

    def __init__(self, lines: bytes, failure: Exception | None) -> None:
        self.lines = lines
        self.failure = failure
        self.closed = False

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for line in self.lines.splitlines(keepends=True):
            yield line
        if self.failure is not None:
            raise self.failure

    async def aclose(self) -> None:
        self.closed = True


@pytest.mark.parametrize(
    ("failure", "cause"),
    [(httpx.ReadTimeout("read timed out"), ProviderTimeoutError), (httpx.ReadError("reset"), ProviderError)],
    ids=["read-timeout", "connection-reset"],
)
async def test_a_stream_that_breaks_off_counts_the_call_and_keeps_the_deltas(
    failure: Exception, cause: type[Exception]
) -> None:
    body = BrokenStream(ndjson(*DELTAS), failure)
    client = stream_client(lambda _r: httpx.Response(200, headers={"content-type": NDJSON}, stream=body), [])
    items: list[str | RespondResponse] = []
    with pytest.raises(AICallError) as failed:
        await drain(client, items)
    assert items == ["En 2025: ", "₲5."]
    assert type(failed.value.cause) is cause
    assert failed.value.usage.model_calls == 1
    assert body.closed


async def test_a_consumer_that_stops_early_closes_the_response() -> None:
    body = BrokenStream(ndjson(*DELTAS, {"type": "response", **RESPONSE}), None)
    client = stream_client(lambda _r: httpx.Response(200, headers={"content-type": NDJSON}, stream=body), [])
    stream = client.answer("q", [], CONTEXT)
    assert await anext(stream) == "En 2025: "
    await stream.aclose()
    assert body.closed


async def test_the_stream_goes_round_robin_and_retries_only_connections() -> None:
    seen: list[httpx.Request] = []
    lines = ndjson({"type": "response", **RESPONSE})

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        if request.url.host == "down.test":
            raise httpx.ConnectError("refused", request=request)
        return httpx.Response(200, headers={"content-type": NDJSON}, content=lines)

    client = HttpAIClient(["http://down.test", "http://up.test"], transport=httpx.MockTransport(handler))
    assert len(await drain(client)) == 1
    assert [r.url.host for r in seen] == ["down.test", "up.test"]


# -- event loops and closing ---------------------------------------------------------------------------------


@pytest.fixture
def async_clients(monkeypatch: pytest.MonkeyPatch) -> list[httpx.AsyncClient]:
    """Every ``httpx.AsyncClient`` made while the test runs."""
    made: list[httpx.AsyncClient] = []
    original = httpx.AsyncClient

    def recording(*args: Any, **kwargs: Any) -> httpx.AsyncClient:
        client = original(*args, **kwargs)
        made.append(client)
        return client

    monkeypatch.setattr(httpx, "AsyncClient", recording)
    return made


def test_each_event_loop_gets_its_own_pool_closed_when_the_loop_ends(
    async_clients: list[httpx.AsyncClient],
) -> None:
    client = HttpAIClient(
        ["http://a.test"], transport=httpx.MockTransport(lambda _r: httpx.Response(200, json=RESPONSE))
    )

    async def twice() -> None:
        await last_item(client.answer("q", [], CONTEXT))
        await last_item(client.answer("q", [], CONTEXT))

    asyncio.run(twice())
    asyncio.run(twice())
    assert len(async_clients) == 2  # one per loop, shared by the loop's calls
    assert all(http.is_closed for http in async_clients)


async def test_aclose_closes_the_running_loops_pool_and_the_client(
    async_clients: list[httpx.AsyncClient],
) -> None:
    client = HttpAIClient(
        ["http://a.test"], transport=httpx.MockTransport(lambda _r: httpx.Response(200, json=RESPONSE))
    )
    async with client:
        await last_item(client.answer("q", [], CONTEXT))
    assert [http.is_closed for http in async_clients] == [True]
    with pytest.raises(RuntimeError, match="closed"):
        await last_item(client.answer("q", [], CONTEXT))


def test_close_asks_a_loop_running_in_another_thread_to_close_its_pool(
    async_clients: list[httpx.AsyncClient],
) -> None:
    client = HttpAIClient(
        ["http://a.test"], transport=httpx.MockTransport(lambda _r: httpx.Response(200, json=RESPONSE))
    )
    called, closed_seen = threading.Event(), threading.Event()

    async def serve() -> None:
        await last_item(client.answer("q", [], CONTEXT))
        called.set()
        for _ in range(500):  # the loop keeps running while the main thread closes the client
            if async_clients[0].is_closed:
                closed_seen.set()
                return
            await asyncio.sleep(0.01)

    thread = threading.Thread(target=asyncio.run, args=(serve(),))
    thread.start()
    assert called.wait(10)
    client.close()
    thread.join(10)
    assert closed_seen.is_set()
