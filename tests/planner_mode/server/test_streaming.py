"""``POST /ai/respond`` and ``/ai/analyze`` streamed as NDJSON, in process and over HTTP; the request log.

The model here is a :class:`~tests.fakes.StreamingChatModel` that streams its reply six characters at a time
and can break after a given number of chunks, like a provider whose connection drops while the answer is
being written. Both calls stream alike: call 2 its answer, call 1 a direct answer.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import pytest
from fastapi.testclient import TestClient

from benchmarks.serving import ServerThread
from planner_mode import HttpAIClient, InProcessAIClient, PlannerAI, PlannerEngine
from planner_mode.client import AICallError, AnswerReply, PlanReply
from planner_mode.plan import OperationOutcome
from planner_mode.server import create_app
from planner_mode.server.wire import NDJSON, AnalyzeResponse, RespondResponse
from shared.erp.database import Erp
from shared.errors import ModelOutputError, ProviderError, ProviderTimeoutError
from shared.events import AnswerDelta, PlanReady, TurnDone
from shared.memory.store import MemoryStore
from shared.operations.registry import OperationRegistry
from shared.security import DEMO_CALLER
from tests.fakes import StreamingChatModel
from tests.planner_mode.planner_fakes import CALL_USAGE, CONTEXT, Toy

QUESTION = "¿Cuánto vendimos en 2025?"
RESULTS = [OperationOutcome(funcion="ventas_anuales", parametros={"anio": 2025}, resultado={"total": 5})]
CATALOG = Toy().registry().catalog(DEMO_CALLER)
BODY = {
    "question": QUESTION,
    "results": [r.model_dump(mode="json") for r in RESULTS],
    "context": CONTEXT.model_dump(mode="json"),
    "catalog": [spec.model_dump(mode="json") for spec in CATALOG],
}
ANSWER_TEXT = "En 2025 se vendieron ₲850.000.000 en total."
REPLY = json.dumps(
    {"respuesta": ANSWER_TEXT, "memoria": [{"contenido": "Ventas 2025.", "importancia": 0.5}], "estado": {}},
    ensure_ascii=False,
)
STREAM = {"Accept": NDJSON}
GREETING = "¡Hola! Puedo consultar las ventas, los clientes y las facturas. ¿Qué necesitás?"
DIRECT = json.dumps({"respuesta_directa": GREETING}, ensure_ascii=False)
PLAN = json.dumps({"operaciones": [{"funcion": "ventas_anuales", "parametros": {"anio": 2025}}]})
ANALYZE_BODY = {
    "message": "Hola",
    "context": CONTEXT.model_dump(mode="json"),
    "catalog": [spec.model_dump(mode="json") for spec in CATALOG],
}


@dataclass(frozen=True)
class Call:
    """One of the two calls: its path and body, a reply that streams, the text its deltas spell."""

    path: str
    body: dict[str, Any]
    reply: str
    text: str
    line: str
    """The name of its ``response`` line model in the OpenAPI schema."""

    def of(self, client: HttpAIClient | InProcessAIClient) -> Any:
        if self.path == "/ai/respond":
            return client.answer(QUESTION, RESULTS, CONTEXT, [])
        return client.plan("Hola", CONTEXT, CATALOG)

    def text_of(self, response: Any) -> str | None:
        if isinstance(response, RespondResponse | AnswerReply):
            return response.answer.text
        return response.plan.direct_answer if isinstance(response, AnalyzeResponse | PlanReply) else None


RESPOND = Call("/ai/respond", BODY, REPLY, ANSWER_TEXT, "RespondLine")
ANALYZE = Call("/ai/analyze", ANALYZE_BODY, DIRECT, GREETING, "AnalyzeLine")
CALLS = pytest.mark.parametrize("call", [RESPOND, ANALYZE], ids=["respond", "analyze"])


def streaming_model(reply: str = REPLY, **options: Any) -> StreamingChatModel:
    return StreamingChatModel(
        lambda _m, _i: reply, piece=6, usage=CALL_USAGE, native_structured_output=False, **options
    )


def ndjson(response: Any) -> list[dict[str, Any]]:
    return [json.loads(line) for line in response.iter_lines() if line.strip()]


def stream(app: Any, path: str, body: dict[str, Any]) -> tuple[Any, list[dict[str, Any]]]:
    """One streamed request to ``app`` in process: the response (status and headers) and its lines."""
    with TestClient(app) as c, c.stream("POST", path, json=body, headers=STREAM) as response:
        return response, ndjson(response)


@CALLS
def test_a_call_streams_its_deltas_then_the_response(call: Call) -> None:
    response, lines = stream(create_app(streaming_model(call.reply)), call.path, call.body)
    assert response.status_code == 200
    assert response.headers["content-type"].startswith(NDJSON)
    *deltas, last = lines
    assert len(deltas) >= 2 and {line["type"] for line in deltas} == {"answer_delta"}
    assert "".join(line["text"] for line in deltas) == call.text
    assert last["type"] == "response"
    parsed = (RespondResponse if call is RESPOND else AnalyzeResponse).model_validate(last)
    assert call.text_of(parsed) == call.text
    assert (parsed.usage.model_calls, parsed.usage.input_tokens, parsed.usage.output_tokens) == (1, 100, 10)
    if isinstance(parsed, RespondResponse):
        assert parsed.answer.memories[0].content == "Ventas 2025."
    else:
        assert parsed.plan.question == "Hola"


def test_without_the_accept_header_respond_is_one_json_body() -> None:
    with TestClient(create_app(streaming_model())) as c:
        response = c.post("/ai/respond", json=BODY)
    assert response.headers["content-type"] == "application/json"
    assert RespondResponse.model_validate(response.json()).answer.text == ANSWER_TEXT


def test_a_plan_with_operations_streams_only_its_response_line() -> None:
    with (
        TestClient(create_app(streaming_model(PLAN))) as c,
        c.stream("POST", "/ai/analyze", json=ANALYZE_BODY, headers=STREAM) as response,
    ):
        lines = ndjson(response)
        whole = c.post("/ai/analyze", json=ANALYZE_BODY)
    assert [line["type"] for line in lines] == ["response"]
    assert AnalyzeResponse.model_validate(lines[0]).plan == AnalyzeResponse.model_validate(whole.json()).plan
    assert whole.headers["content-type"] == "application/json"


@pytest.mark.parametrize(
    ("options", "body", "headers", "status", "kind"),
    [
        ({"token": "k"}, BODY, {}, 401, "unauthorized"),
        ({"max_body_bytes": 100}, BODY, {}, 413, "too_large"),
        ({}, {**BODY, "question": "  "}, {}, 422, "invalid_request"),
        ({"break_after": 0}, BODY, {}, 502, "provider"),
    ],
    ids=["token", "size", "invalid-body", "model-fails-before-the-first-delta"],
)
def test_failures_before_the_first_line_keep_their_status_and_json_body(
    options: dict[str, Any], body: dict[str, Any], headers: dict[str, str], status: int, kind: str
) -> None:
    model_options = {k: v for k, v in options.items() if k == "break_after"}
    app_options = {k: v for k, v in options.items() if k != "break_after"}
    with TestClient(create_app(streaming_model(**model_options), **app_options)) as c:
        response = c.post("/ai/respond", json=body, headers={**STREAM, **headers})
    assert response.status_code == status
    assert response.headers["content-type"] == "application/json"
    assert response.json()["kind"] == kind


MID_STREAM_FAILURES = pytest.mark.parametrize(
    ("call", "options", "kind", "cause"),
    [
        (RESPOND, {"break_after": 3}, "provider", ProviderError),
        (RESPOND, {"break_after": 3, "failure": TimeoutError}, "timeout", ProviderTimeoutError),
        (RESPOND, {"reply": REPLY[:40]}, "model_output", ModelOutputError),  # deltas, then no valid answer
        (ANALYZE, {"reply": DIRECT, "break_after": 8}, "provider", ProviderError),
    ],
    ids=["connection-lost", "timeout", "cut-json", "analyze-connection-lost"],
)


@MID_STREAM_FAILURES
def test_a_model_failing_mid_stream_ends_the_stream_with_an_error_line_the_http_client_raises(
    call: Call, options: dict[str, Any], kind: str, cause: type[Exception]
) -> None:
    response, lines = stream(create_app(streaming_model(**options)), call.path, call.body)
    assert response.status_code == 200  # sent with the first delta, before the failure
    *deltas, last = lines
    assert deltas and {line["type"] for line in deltas} == {"answer_delta"}
    assert last["type"] == "error" and last["kind"] == kind
    assert last["usage"]["model_calls"] == 1
    assert "Traceback" not in json.dumps(lines)
    with (
        ServerThread(create_app(streaming_model(**options))) as server,
        HttpAIClient([server.url], timeout=30) as client,
    ):
        seen, failed = collect(call, client)
    assert seen and all(isinstance(item, str) for item in seen)
    assert failed is not None and type(failed.cause) is cause
    assert failed.usage.model_calls == 1


def broken_stream(monkeypatch: pytest.MonkeyPatch) -> None:
    """A bug in the server's own streaming code after the first delta."""

    async def broken(*_args: Any, **_kwargs: Any) -> AsyncIterator[str | AnswerReply]:
        yield "En 2025 "
        raise RuntimeError("secret detail")

    monkeypatch.setattr(InProcessAIClient, "answer", broken)


def test_an_unexpected_error_mid_stream_sends_only_a_reference_and_logs_the_traceback(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    broken_stream(monkeypatch)
    with caplog.at_level(logging.ERROR, logger="planner_mode.server"):
        _response, lines = stream(create_app(streaming_model()), "/ai/respond", BODY)
    assert [line["type"] for line in lines] == ["answer_delta", "error"]
    error = lines[-1]
    assert error["kind"] == "internal"
    reference = re.fullmatch(r"Internal error in the AI server \(ref ([0-9a-f]{8})\)\.", error["error"])
    assert reference is not None
    assert "secret detail" not in json.dumps(lines) and "Traceback" not in json.dumps(lines)
    [record] = [r for r in caplog.records if r.levelno == logging.ERROR]
    assert reference.group(1) in record.getMessage()
    assert record.exc_info is not None and "secret detail" in str(record.exc_info[1])


def request_records(caplog: pytest.LogCaptureFixture) -> list[dict[str, Any]]:
    return [
        r.erp_ai  # type: ignore[attr-defined]
        for r in caplog.records
        if r.name == "planner_mode.server" and r.getMessage().startswith("request ")
    ]


def test_every_request_is_logged_once_with_its_fields_and_without_any_text(
    caplog: pytest.LogCaptureFixture,
) -> None:
    app = create_app(streaming_model(), token="k")
    auth = {"Authorization": "Bearer k"}
    with caplog.at_level(logging.INFO, logger="planner_mode.server"), TestClient(app) as c:
        c.post("/ai/respond", json=BODY, headers=auth)
        with c.stream("POST", "/ai/respond", json=BODY, headers={**auth, **STREAM}) as response:
            ndjson(response)
        c.post("/ai/respond", json={**BODY, "question": ""}, headers=auth)
        c.post("/ai/respond", json=BODY)
        c.get("/healthz")
    records = request_records(caplog)
    assert [(r["path"], r["status"], r["kind"], r["streamed"]) for r in records] == [
        ("/ai/respond", 200, None, False),
        ("/ai/respond", 200, None, True),
        ("/ai/respond", 422, "invalid_request", False),
        ("/ai/respond", 401, "unauthorized", False),
    ]  # /healthz is logged at DEBUG only
    assert [(r["model_calls"], r["input_tokens"], r["output_tokens"]) for r in records[:2]] == [
        (1, 100, 10)
    ] * 2
    assert all(r["method"] == "POST" and r["ms"] >= r["model_ms"] >= 0 for r in records)
    logged = " ".join(r.getMessage() for r in caplog.records) + json.dumps(records)
    assert "vendimos" not in logged and "vendieron" not in logged


def test_a_stream_that_fails_midway_is_logged_with_its_kind_and_usage(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.INFO, logger="planner_mode.server"):
        stream(create_app(streaming_model(break_after=4)), "/ai/respond", BODY)
    [record] = request_records(caplog)
    assert (record["status"], record["kind"], record["streamed"], record["model_calls"]) == (
        200,
        "provider",
        True,
        1,
    )


@CALLS
def test_the_openapi_schema_documents_the_ndjson_stream(call: Call) -> None:
    with TestClient(create_app(streaming_model())) as c:
        schema = c.get("/openapi.json").json()
    post = schema["paths"][call.path]["post"]
    assert "application/x-ndjson" in post["description"]
    content = post["responses"]["200"]["content"]
    assert set(content) == {"application/json", NDJSON}
    line = content[NDJSON]["schema"]
    refs = [option["$ref"] for option in line["oneOf"]]
    names = [ref.rsplit("/", 1)[1] for ref in refs]
    assert sorted(names) == sorted(["AnswerDeltaLine", "ErrorLine", call.line])
    assert all(ref.startswith("#/components/schemas/") for ref in refs)
    components = schema["components"]["schemas"]
    assert all(name in components for name in names)
    assert line["discriminator"]["propertyName"] == "type"
    assert components["AnswerDeltaLine"]["properties"]["type"]["const"] == "answer_delta"


# -- the clients ---------------------------------------------------------------------------------------------


def collect(call: Call, client: HttpAIClient | InProcessAIClient) -> tuple[list[Any], AICallError | None]:
    """Every item of one call's stream, and the :class:`AICallError` that ended it (if one did)."""
    seen: list[Any] = []

    async def run() -> None:
        async for item in call.of(client):
            seen.append(item)

    try:
        asyncio.run(run())
    except AICallError as exc:
        return seen, exc
    return seen, None


@CALLS
def test_the_http_client_streams_a_call_like_the_in_process_client(call: Call) -> None:
    in_process, _ = collect(call, InProcessAIClient(PlannerAI(streaming_model(call.reply))))
    with (
        ServerThread(create_app(streaming_model(call.reply))) as server,
        HttpAIClient([server.url], timeout=30) as client,
    ):
        over_http, _ = collect(call, client)
    for items in (in_process, over_http):
        *deltas, last = items
        assert len(deltas) >= 2 and all(isinstance(delta, str) for delta in deltas)
        assert "".join(deltas) == call.text_of(last) == call.text
        assert last.usage.model_calls == 1
    assert in_process[:-1] == over_http[:-1]


def test_the_in_process_stream_failure_carries_the_usage() -> None:
    seen, failed = collect(RESPOND, InProcessAIClient(PlannerAI(streaming_model(break_after=4))))
    assert len(seen) >= 1 and all(isinstance(item, str) for item in seen)
    assert failed is not None and isinstance(failed.cause, ProviderError)
    assert failed.usage.model_calls == 1


def test_over_http_the_engine_streams_a_direct_answer_before_the_plan(
    toy_registry: OperationRegistry, toy_erp: Erp, memory_store: MemoryStore
) -> None:
    with (
        ServerThread(create_app(streaming_model(DIRECT))) as server,
        HttpAIClient([server.url], timeout=30) as client,
    ):
        engine = PlannerEngine(toy_registry, toy_erp, memory_store, client)

        async def run() -> list[Any]:
            return [event async for event in engine.astream("c1", "Hola", DEMO_CALLER)]

        events = asyncio.run(run())
    types = [type(event) for event in events]
    assert types.index(PlanReady) > 1 and set(types[: types.index(PlanReady)]) == {AnswerDelta}
    result = events[-1].result if isinstance(events[-1], TurnDone) else None
    assert result is not None and result.recorded and result.plan_valid is True
    assert "".join(e.text for e in events if isinstance(e, AnswerDelta)) == result.answer == GREETING
