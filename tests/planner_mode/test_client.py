"""AI clients: in process, and over HTTP with round-robin, connection-only retries and mapped errors.

Each test runs a call to its result (the ``call`` fixture); the streams themselves are pinned in
``test_client_async.py``.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from datetime import date
from typing import Any

import httpx
import pytest

from planner_mode.ai import PlannerAI
from planner_mode.client import AICallError, AIClient, InProcessAIClient, last_item
from planner_mode.http_client import HttpAIClient
from planner_mode.wire import CallUsage
from shared.errors import ConfigurationError, ModelOutputError, ProviderError, ProviderTimeoutError
from shared.memory.context import ConversationContext
from tests.planner_mode.planner_fakes import scripted, text_model

CONTEXT = ConversationContext(hoy=date(2026, 11, 30))
PLAN = {"operaciones": [{"funcion": "ventas_anuales", "parametros": {"anio": 2025}}], "pregunta": "q"}
USAGE = {"model_calls": 1, "input_tokens": 7, "output_tokens": 3, "model_ms": 1.5, "simulated_model_ms": None}


Call = Callable[..., Any]
"""``call(client, "plan", *args)``: the client's call run to completion, its result."""


@pytest.fixture
def call() -> Call:
    def run(client: Any, method: str, *args: Any) -> Any:
        return asyncio.run(last_item(getattr(client, method)(*args)))

    return run


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


def test_in_process_client_measures_each_call(call: Call) -> None:
    client = InProcessAIClient(PlannerAI(text_model(scripted(PLAN))))
    analyzed = call(client, "plan", "q", CONTEXT, [])
    assert analyzed.plan.operaciones[0].funcion == "ventas_anuales"
    assert (analyzed.usage.model_calls, analyzed.usage.input_tokens, analyzed.usage.output_tokens) == (
        1,
        100,
        10,
    )
    assert call(client, "answer", "q", [], CONTEXT).usage.model_calls == 1


def test_in_process_failures_carry_the_cause_and_the_usage(call: Call) -> None:
    client = InProcessAIClient(PlannerAI(text_model(lambda _m, _i: "nada")))
    with pytest.raises(AICallError) as info:
        call(client, "plan", "q", CONTEXT, [])
    assert isinstance(info.value.cause, ModelOutputError)
    assert info.value.usage.model_calls == 1


def test_requests_go_round_robin_with_the_token(call: Call) -> None:
    seen: list[httpx.Request] = []
    client = HttpAIClient(
        ["http://a.test", "http://b.test/"], token="t0k", transport=httpx.MockTransport(ok_handler(seen))
    )
    call(client, "plan", "q", CONTEXT, [])
    call(client, "answer", "q", [], CONTEXT)
    call(client, "plan", "q", CONTEXT, [])
    assert [(r.url.host, r.url.path) for r in seen] == [
        ("a.test", "/ai/analyze"),
        ("b.test", "/ai/respond"),
        ("a.test", "/ai/analyze"),
    ]
    assert {r.headers["authorization"] for r in seen} == {"Bearer t0k"}
    body = json.loads(seen[0].content)
    assert set(body) == {"message", "context", "catalog"}


@pytest.mark.parametrize("failure", [httpx.ConnectError, httpx.ConnectTimeout])
def test_connection_errors_are_retried_on_the_next_server(
    failure: type[httpx.TransportError], call: Call
) -> None:
    seen: list[httpx.Request] = []
    ok = ok_handler(seen)

    def handler(request: httpx.Request) -> httpx.Response:
        if request.url.host == "down.test":
            seen.append(request)
            raise failure("connection refused", request=request)
        return ok(request)

    client = HttpAIClient(["http://down.test", "http://up.test"], transport=httpx.MockTransport(handler))
    result = call(client, "plan", "q", CONTEXT, [])
    assert result.usage == CallUsage.model_validate(USAGE)
    assert [r.url.host for r in seen] == ["down.test", "up.test"]


def test_retries_are_bounded(call: Call) -> None:
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


def test_a_request_that_reached_a_server_is_never_repeated(call: Call) -> None:
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
        (401, {"error": "Missing or wrong bearer token.", "kind": "unauthorized"}, ProviderError, 0, "token"),
        (500, {"error": "Internal error", "kind": "internal"}, ProviderError, 0, "HTTP 500: Internal error"),
        (404, "not json", ProviderError, 0, "HTTP 404"),
    ],
)
def test_error_responses_map_to_ai_call_errors(
    status: int, body: Any, cause: type[Exception], usage_calls: int, text: str, call: Call
) -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        return (
            httpx.Response(status, json=body) if isinstance(body, dict) else httpx.Response(status, text=body)
        )

    client = HttpAIClient(["http://a.test"], transport=httpx.MockTransport(handler))
    with pytest.raises(AICallError, match=text) as info:
        call(client, "answer", "q", [], CONTEXT)
    assert type(info.value.cause) is cause
    assert info.value.usage.model_calls == usage_calls


def test_an_unexpected_success_body_is_a_provider_error(call: Call) -> None:
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


def test_requests_carry_the_request_and_connect_timeouts(call: Call) -> None:
    seen: list[httpx.Request] = []
    transport = httpx.MockTransport(ok_handler(seen))
    call(HttpAIClient(["http://a.test"], timeout=30, transport=transport), "plan", "q", CONTEXT, [])
    call(
        HttpAIClient(["http://a.test"], timeout=2, connect_timeout=3, transport=transport),
        "plan",
        "q",
        CONTEXT,
        [],
    )
    # A dead server is given up on after the connect timeout, not after the long wait meant for the model.
    assert [(r.extensions["timeout"]["connect"], r.extensions["timeout"]["read"]) for r in seen] == [
        (5.0, 30.0),
        (2.0, 2.0),
    ]
