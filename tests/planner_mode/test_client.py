"""AI clients: in process, and over HTTP with round-robin, connection-only retries and mapped errors.

Most tests run a call to its result (:func:`call`); the NDJSON streams are pinned at the end.
"""

from __future__ import annotations

import asyncio
import json
import ssl
import threading
from collections.abc import AsyncIterator, Callable
from typing import Any

import httpx
import pytest
from langchain_core.callbacks import BaseCallbackHandler, BaseCallbackManager
from langchain_core.runnables import RunnableConfig

from planner_mode.ai import PlannerAI
from planner_mode.client import AICallError, AIClient, AnswerReply, InProcessAIClient, last_item
from planner_mode.server.http_client import HttpAIClient
from planner_mode.server.wire import NDJSON, CallUsage, RespondResponse
from shared.errors import (
    ConfigurationError,
    ModelOutputError,
    OutputLimitError,
    ProviderError,
    ProviderTimeoutError,
)
from shared.tracing import aturn_run
from tests.fakes import RunRecorder
from tests.planner_mode.planner_fakes import CONTEXT, scripted, text_model

PLAN = {"operaciones": [{"funcion": "ventas_anuales", "parametros": {"anio": 2025}}], "pregunta": "q"}
USAGE = {"model_calls": 1, "input_tokens": 7, "output_tokens": 3, "model_ms": 1.5}


def call(client: Any, method: str, *args: Any) -> Any:
    """``client``'s call ``method`` run to completion: its result."""
    return asyncio.run(last_item(getattr(client, method)(*args)))


def ok_handler(seen: list[httpx.Request]) -> Callable[[httpx.Request], httpx.Response]:
    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        if request.url.path == "/ai/analyze":
            return httpx.Response(200, json={"plan": PLAN, "usage": USAGE})
        return httpx.Response(200, json={"answer": {"respuesta": "ok"}, "usage": USAGE})

    return handler


def test_both_clients_implement_the_protocol() -> None:
    assert isinstance(InProcessAIClient(PlannerAI(text_model(scripted(PLAN)))), AIClient)
    assert isinstance(HttpAIClient(["http://127.0.0.1:1"]), AIClient)


def test_in_process_client_measures_each_call() -> None:
    client = InProcessAIClient(PlannerAI(text_model(scripted(PLAN))))
    analyzed = call(client, "plan", "q", CONTEXT, [])
    assert analyzed.plan.operations[0].function == "ventas_anuales"
    usage = analyzed.usage
    assert (usage.model_calls, usage.input_tokens, usage.output_tokens) == (1, 100, 10)
    assert call(client, "answer", "q", [], CONTEXT, []).usage.model_calls == 1


def test_in_process_failures_carry_the_cause_and_the_usage() -> None:
    client = InProcessAIClient(PlannerAI(text_model(lambda _m, _i: "nada")))
    with pytest.raises(AICallError) as info:
        call(client, "plan", "q", CONTEXT, [])
    assert isinstance(info.value.cause, ModelOutputError)
    assert info.value.usage.model_calls == 1


def test_requests_go_round_robin_with_the_token() -> None:
    seen: list[httpx.Request] = []
    client = HttpAIClient(
        ["http://a.test", "http://b.test/"], token="t0k", transport=httpx.MockTransport(ok_handler(seen))
    )
    call(client, "plan", "q", CONTEXT, [])
    call(client, "answer", "q", [], CONTEXT, [])
    call(client, "plan", "q", CONTEXT, [])
    assert [(r.url.host, r.url.path) for r in seen] == [
        ("a.test", "/ai/analyze"),
        ("b.test", "/ai/respond"),
        ("a.test", "/ai/analyze"),
    ]
    assert {r.headers["authorization"] for r in seen} == {"Bearer t0k"}
    body = json.loads(seen[0].content)
    assert set(body) == {"message", "context", "catalog"}


@pytest.mark.parametrize("streamed", [False, True], ids=["json", "ndjson"])
@pytest.mark.parametrize("failure", [httpx.ConnectError, httpx.ConnectTimeout])
def test_connection_errors_are_retried_on_the_next_server(
    failure: type[httpx.TransportError], streamed: bool
) -> None:
    seen: list[httpx.Request] = []
    ok = ok_handler(seen)

    def handler(request: httpx.Request) -> httpx.Response:
        if request.url.host == "down.test":
            seen.append(request)
            raise failure("connection refused", request=request)
        if streamed:
            seen.append(request)
            line = json.dumps({"type": "response", "plan": PLAN, "usage": USAGE}).encode() + b"\n"
            return httpx.Response(200, headers={"content-type": NDJSON}, content=line)
        return ok(request)

    client = HttpAIClient(["http://down.test", "http://up.test"], transport=httpx.MockTransport(handler))
    result = call(client, "plan", "q", CONTEXT, [])
    assert result.usage == CallUsage.model_validate(USAGE)
    assert [r.url.host for r in seen] == ["down.test", "up.test"]


def test_retries_are_bounded() -> None:
    attempts: list[str] = []

    def handler(request: httpx.Request) -> httpx.Response:
        attempts.append(str(request.url.host))
        raise httpx.ConnectError("connection refused", request=request)

    client = HttpAIClient(
        ["http://a.test", "http://b.test"], retries=2, transport=httpx.MockTransport(handler)
    )
    with pytest.raises(AICallError, match="Could not connect to any AI server") as info:
        call(client, "plan", "q", CONTEXT, [])
    assert isinstance(info.value.cause, ProviderError)
    assert attempts == ["a.test", "b.test", "a.test"]


def test_a_request_that_reached_a_server_is_never_repeated() -> None:
    attempts: list[str] = []

    def handler(request: httpx.Request) -> httpx.Response:
        attempts.append(str(request.url.host))
        raise httpx.ReadTimeout("read timed out", request=request)

    client = HttpAIClient(["http://a.test", "http://b.test"], transport=httpx.MockTransport(handler))
    with pytest.raises(AICallError, match="did not answer within") as failed:
        call(client, "plan", "q", CONTEXT, [])
    assert attempts == ["a.test"]
    assert isinstance(failed.value.cause, ProviderTimeoutError)
    assert failed.value.usage.model_calls == 1  # the server was calling its model: the call is counted


@pytest.mark.parametrize(
    ("status", "body", "cause", "usage_calls", "text"),
    [
        (502, {"error": "bad json", "kind": "model_output", "usage": USAGE}, ModelOutputError, 1, "bad json"),
        (502, {"error": "ollama down", "kind": "provider", "usage": USAGE}, ProviderError, 1, "ollama down"),
        (500, {"error": "Internal error", "kind": "internal"}, ProviderError, 0, "HTTP 500: Internal error"),
        (404, "not json", ProviderError, 0, "HTTP 404"),
    ],
)
def test_error_responses_map_to_ai_call_errors(
    status: int, body: Any, cause: type[Exception], usage_calls: int, text: str
) -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        return (
            httpx.Response(status, json=body) if isinstance(body, dict) else httpx.Response(status, text=body)
        )

    client = HttpAIClient(["http://a.test"], transport=httpx.MockTransport(handler))
    with pytest.raises(AICallError, match=text) as info:
        call(client, "answer", "q", [], CONTEXT, [])
    assert type(info.value.cause) is cause
    assert info.value.usage.model_calls == usage_calls


def test_an_unexpected_success_body_is_a_provider_error() -> None:
    client = HttpAIClient(
        ["http://a.test"], transport=httpx.MockTransport(lambda _r: httpx.Response(200, json={}))
    )
    with pytest.raises(AICallError, match="unexpected body"):
        call(client, "plan", "q", CONTEXT, [])


def test_bad_configuration_is_refused() -> None:
    with pytest.raises(ConfigurationError):
        HttpAIClient([])
    with pytest.raises(ConfigurationError):
        HttpAIClient(["http://a.test"], retries=-1)
    with pytest.raises(ConfigurationError):
        HttpAIClient(["http://a.test"], timeout=0)


@pytest.mark.parametrize(
    "url", ["localhost:8000", "127.0.0.1:8000", "ftp://a.test", "http://", "http://a:port"]
)
def test_malformed_server_urls_are_refused_up_front(url: str) -> None:
    with pytest.raises(ConfigurationError, match="URL"):
        HttpAIClient([url])


def test_requests_carry_the_request_and_connect_timeouts() -> None:
    seen: list[httpx.Request] = []
    transport = httpx.MockTransport(ok_handler(seen))
    for options in ({"timeout": 30}, {"timeout": 2, "connect_timeout": 3}):
        call(HttpAIClient(["http://a.test"], transport=transport, **options), "plan", "q", CONTEXT, [])
    # A dead server is given up on after the connect timeout, not after the long wait meant for the model.
    assert [(r.extensions["timeout"]["connect"], r.extensions["timeout"]["read"]) for r in seen] == [
        (5.0, 30.0),
        (2.0, 2.0),
    ]


# -- the config, the usage and the streams -------------------------------------------------------------------

RESPONSE = {"answer": {"respuesta": "En 2025: ₲5."}, "usage": USAGE}


def in_process() -> InProcessAIClient:
    return InProcessAIClient(PlannerAI(text_model(scripted(PLAN))))


# -- the caller's config -------------------------------------------------------------------------------------


async def test_handlers_in_a_config_list_see_the_call_and_the_list_is_left_alone() -> None:
    recorder = RunRecorder()
    callbacks: list[BaseCallbackHandler] = [recorder]
    config: RunnableConfig = {"callbacks": callbacks, "tags": ["erp"], "metadata": {"tenant": "t1"}}
    analyzed = await last_item(in_process().plan("q", CONTEXT, [], config=config))
    assert analyzed.usage.model_calls == 1  # the client's own tracker counted it too
    [model] = recorder.models
    assert "erp" in model.tags and model.metadata["tenant"] == "t1"
    assert config["callbacks"] is callbacks and callbacks == [recorder]


async def test_calls_made_with_a_turns_child_config_are_children_of_the_turn_run() -> None:
    recorder = RunRecorder()
    client = in_process()
    async with aturn_run({"callbacks": [recorder]}, mode="planner", inputs={}) as turn:
        child = turn.child_config()
        manager = child["callbacks"]
        assert isinstance(manager, BaseCallbackManager)
        handlers_before = list(manager.handlers)
        await last_item(client.plan("q", CONTEXT, [], config=child))
        await last_item(client.answer("q", [], CONTEXT, [], config=child))
    [turn_run] = recorder.chains
    assert [model.parent for model in recorder.models] == [turn_run.run_id] * 2
    assert manager.handlers == handlers_before  # the tracker went into a copy


async def test_without_a_config_the_call_is_still_measured() -> None:
    responded = await last_item(in_process().answer("q", [], CONTEXT, [], config=None))
    assert (responded.usage.model_calls, responded.usage.input_tokens) == (1, 100)


# -- usage on the wire ---------------------------------------------------------------------------------------


def test_usage_from_a_server_that_sends_more_fields_still_reads() -> None:
    # A newer or older server may send usage fields this client does not know: they are ignored.
    usage = CallUsage.model_validate(
        {"model_calls": 1, "input_tokens": 2, "output_tokens": 3, "model_ms": 4.0, "simulated_model_ms": 9.0}
    )
    assert (usage.model_calls, usage.input_tokens, usage.output_tokens) == (1, 2, 3)


# -- NDJSON streams over HTTP --------------------------------------------------------------------------------


def ndjson(*lines: dict[str, Any]) -> bytes:
    return b"".join(json.dumps(line, ensure_ascii=False).encode() + b"\n" for line in lines)


def stream_client(
    body: bytes | httpx.AsyncByteStream | dict[str, Any], seen: list[httpx.Request] | None = None
) -> HttpAIClient:
    """A client of one server that answers every request with ``body``: NDJSON lines, or one JSON object."""

    def handler(request: httpx.Request) -> httpx.Response:
        if seen is not None:
            seen.append(request)
        if isinstance(body, dict):
            return httpx.Response(200, json=body)
        if isinstance(body, bytes):
            return httpx.Response(200, headers={"content-type": NDJSON}, content=body)
        return httpx.Response(200, headers={"content-type": NDJSON}, stream=body)

    return HttpAIClient(["http://a.test"], transport=httpx.MockTransport(handler))


def reply_of(body: dict[str, Any]) -> AnswerReply:
    """The engine's reply the client makes of a ``/ai/respond`` response body."""
    response = RespondResponse.model_validate(body)
    return AnswerReply(response.answer, response.usage)


async def drain(client: HttpAIClient, into: list[str | AnswerReply] | None = None) -> list[Any]:
    items = into if into is not None else []
    async for item in client.answer("q", [], CONTEXT, []):
        items.append(item)
    return items


DELTAS = [{"type": "answer_delta", "text": "En 2025: "}, {"type": "answer_delta", "text": "₲5."}]


async def test_a_stream_gives_the_deltas_then_the_response() -> None:
    seen: list[httpx.Request] = []
    items = await drain(stream_client(ndjson(*DELTAS, {"type": "response", **RESPONSE}), seen))
    assert items == ["En 2025: ", "₲5.", reply_of(RESPONSE)]
    assert NDJSON in seen[0].headers["accept"]
    assert set(json.loads(seen[0].content)) == {"question", "results", "context", "catalog"}


async def test_a_server_that_does_not_stream_gives_just_the_response() -> None:
    assert await drain(stream_client(RESPONSE)) == [reply_of(RESPONSE)]


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
    items: list[str | AnswerReply] = []
    with pytest.raises(AICallError) as failed:
        await drain(stream_client(ndjson(*DELTAS, {"type": "error", **error})), items)
    assert items == ["En 2025: ", "₲5."]
    assert type(failed.value.cause) is cause
    assert failed.value.usage.model_calls == calls  # from the line, or the call the server was making
    if error["kind"] == "internal":
        assert "ref 0a1b2c3d" in str(failed.value)


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
    with pytest.raises(AICallError, match=text) as failed:
        await drain(stream_client(content))
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
    items: list[str | AnswerReply] = []
    with pytest.raises(AICallError) as failed:
        await drain(stream_client(body), items)
    assert items == ["En 2025: ", "₲5."]
    assert type(failed.value.cause) is cause
    assert failed.value.usage.model_calls == 1
    assert body.closed


async def test_a_consumer_that_stops_early_closes_the_response() -> None:
    body = BrokenStream(ndjson(*DELTAS, {"type": "response", **RESPONSE}), None)
    stream = stream_client(body).answer("q", [], CONTEXT, [])
    assert await anext(stream) == "En 2025: "
    await stream.aclose()
    assert body.closed


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
    client = stream_client(RESPONSE)

    async def twice() -> None:
        await last_item(client.answer("q", [], CONTEXT, []))
        await last_item(client.answer("q", [], CONTEXT, []))

    asyncio.run(twice())
    asyncio.run(twice())
    assert len(async_clients) == 2  # one per loop, shared by the loop's calls
    assert all(http.is_closed for http in async_clients)


async def test_aclose_closes_the_running_loops_pool_and_the_client(
    async_clients: list[httpx.AsyncClient],
) -> None:
    client = stream_client(RESPONSE)
    async with client:
        await last_item(client.answer("q", [], CONTEXT, []))
    assert [http.is_closed for http in async_clients] == [True]
    with pytest.raises(RuntimeError, match="closed"):
        await last_item(client.answer("q", [], CONTEXT, []))


def test_close_asks_a_loop_running_in_another_thread_to_close_its_pool(
    async_clients: list[httpx.AsyncClient],
) -> None:
    client = stream_client(RESPONSE)
    called, closed_seen = threading.Event(), threading.Event()

    async def serve() -> None:
        await last_item(client.answer("q", [], CONTEXT, []))
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


# -- one TLS context -----------------------------------------------------------------------------------------


def test_clients_and_their_event_loops_share_one_verifying_tls_context() -> None:
    first, second = HttpAIClient(["https://a.test"]), HttpAIClient(["http://b.test"])

    async def async_context(client: HttpAIClient) -> ssl.SSLContext:
        http = await client._async_http()
        return http._transport._pool._ssl_context  # type: ignore[attr-defined,no-any-return]

    contexts = [asyncio.run(async_context(client)) for client in (first, second, first)]
    assert len({id(context) for context in contexts}) == 1
    context = contexts[0]
    assert context.verify_mode == ssl.CERT_REQUIRED
    assert context.check_hostname
