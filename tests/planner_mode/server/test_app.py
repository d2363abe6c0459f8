"""The stateless AI server over FastAPI's in-process test client: routes, auth, limits and error bodies."""

from __future__ import annotations

import asyncio
import json
import logging
import re
from collections.abc import AsyncIterator, Iterator
from datetime import date
from typing import Any

import pytest
from fastapi.testclient import TestClient
from langchain_core.messages import BaseMessage
from starlette.types import Message, Receive, Scope, Send

from planner_mode.client import InProcessAIClient
from planner_mode.server import BodySizeLimit, bind_warning, create_app
from shared.errors import ConfigurationError
from shared.memory.context import ConversationContext
from shared.operations.registry import OperationRegistry
from shared.security import DEMO_CALLER
from tests.fakes import CallInfo, ModelFunction
from tests.planner_mode.planner_fakes import scripted, text_model

CONTEXT = ConversationContext(hoy=date(2026, 11, 30), estado={"anio": 2025}).model_dump(mode="json")
PLAN = {"operaciones": [{"funcion": "ventas_anuales", "parametros": {"anio": 2025}}], "pregunta": "¿Cuánto?"}


@pytest.fixture
def catalog(toy_registry: OperationRegistry) -> list[dict[str, Any]]:
    return [spec.model_dump() for spec in toy_registry.catalog(DEMO_CALLER)]


def analyze_body(catalog: list[dict[str, Any]], message: str = "¿Cuánto vendimos en 2025?") -> dict[str, Any]:
    return {"message": message, "context": CONTEXT, "catalog": catalog}


def client_for(reply: ModelFunction, **kwargs: Any) -> TestClient:
    return TestClient(create_app(text_model(reply), **kwargs), raise_server_exceptions=False)


@pytest.fixture
def client() -> Iterator[TestClient]:
    with client_for(scripted(PLAN)) as c:
        yield c


def test_healthz_and_openapi_docs_that_document_the_request_bodies(client: TestClient) -> None:
    assert client.get("/healthz").json() == {"status": "ok"}
    schema = client.get("/openapi.json").json()
    assert {"/ai/analyze", "/ai/respond", "/healthz"} <= set(schema["paths"])
    body = schema["paths"]["/ai/analyze"]["post"]["requestBody"]["content"]["application/json"]["schema"]
    assert body == {"$ref": "#/components/schemas/AnalyzeRequest"}
    assert "422" in schema["paths"]["/ai/respond"]["post"]["responses"]
    assert client.get("/docs").status_code == 200


def test_analyze_returns_the_plan_and_its_usage(client: TestClient, catalog: list[dict[str, Any]]) -> None:
    response = client.post("/ai/analyze", json=analyze_body(catalog))
    assert response.status_code == 200
    body = response.json()
    assert body["plan"]["operaciones"] == [
        {"id": None, "funcion": "ventas_anuales", "parametros": {"anio": 2025}}
    ]
    assert body["usage"]["model_calls"] == 1
    assert (body["usage"]["input_tokens"], body["usage"]["output_tokens"]) == (100, 10)


def test_respond_returns_the_answer_and_its_usage(client: TestClient) -> None:
    body = {
        "question": "¿Cuánto?",
        "results": [{"funcion": "ventas_anuales", "parametros": {"anio": 2025}, "resultado": {"total": 5}}],
        "context": CONTEXT,
        "catalog": [],
    }
    response = client.post("/ai/respond", json=body)
    assert response.status_code == 200, response.text
    assert response.json()["answer"]["estado"] == {"tema": "pruebas"}
    assert response.json()["usage"]["model_calls"] == 1


def test_plan_and_answer_can_use_different_models(catalog: list[dict[str, Any]]) -> None:
    planner = text_model(scripted(PLAN))
    writer = text_model(scripted(PLAN))
    with TestClient(create_app(planner, writer)) as c:
        c.post("/ai/analyze", json=analyze_body(catalog))
        c.post("/ai/respond", json={"question": "q", "results": [], "context": CONTEXT, "catalog": []})
    assert (planner.call_count, writer.call_count) == (1, 1)


@pytest.mark.parametrize("scheme", ["Bearer", "bearer", "BEARER"])
def test_token_is_required_when_configured(catalog: list[dict[str, Any]], scheme: str) -> None:
    with client_for(scripted(PLAN), token="s3cret") as c:
        missing = c.post("/ai/analyze", json=analyze_body(catalog))
        wrong = c.post("/ai/analyze", json=analyze_body(catalog), headers={"Authorization": "Bearer nope"})
        right = c.post(
            "/ai/analyze", json=analyze_body(catalog), headers={"Authorization": f"{scheme} s3cret"}
        )
        health = c.get("/healthz")
    assert missing.status_code == wrong.status_code == 401
    assert missing.json() == {
        "error": "Missing or wrong bearer token.",
        "kind": "unauthorized",
        "usage": None,
        "detail": None,
        "max_tokens": None,
    }
    assert missing.headers["www-authenticate"] == "Bearer"
    assert right.status_code == 200
    assert health.status_code == 200


def test_the_token_comes_from_the_environment_by_default_and_an_empty_one_disables_auth(
    monkeypatch: pytest.MonkeyPatch, catalog: list[dict[str, Any]]
) -> None:
    monkeypatch.setenv("ERP_AI_SERVER_TOKEN", "from-env")
    with client_for(scripted(PLAN)) as c:
        assert c.post("/ai/analyze", json=analyze_body(catalog)).status_code == 401
        ok = c.post("/ai/analyze", json=analyze_body(catalog), headers={"Authorization": "Bearer from-env"})
        assert ok.status_code == 200
    with client_for(scripted(PLAN), token="") as c:
        bare = c.post("/ai/analyze", json=analyze_body(catalog))
        with_any = c.post("/ai/analyze", json=analyze_body(catalog), headers={"Authorization": "Bearer x"})
    assert bare.status_code == with_any.status_code == 200


def test_oversized_bodies_get_413_without_calling_the_model(catalog: list[dict[str, Any]]) -> None:
    model = text_model(scripted(PLAN))
    with TestClient(create_app(model, max_body_bytes=2_000)) as c:
        big = analyze_body(catalog, message="x" * 5_000)
        declared = c.post("/ai/analyze", json=big)
        streamed = c.post(
            "/ai/analyze",
            content=(chunk.encode() for chunk in [json.dumps(big)[:3000], json.dumps(big)[3000:]]),
            headers={"Content-Type": "application/json"},
        )
        small = c.post("/ai/analyze", json=analyze_body(catalog))
    assert declared.status_code == streamed.status_code == 413
    assert declared.json()["kind"] == "too_large"
    assert small.status_code == 200
    assert model.call_count == 1


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"context": CONTEXT, "catalog": []}, "message"),
        ({"message": "x", "context": {"hoy": "ayer"}, "catalog": []}, "hoy"),
        ({"message": "x", "context": CONTEXT, "catalog": [{"name": "f"}]}, "description"),
    ],
)
def test_invalid_bodies_get_422_naming_the_field(
    client: TestClient, body: dict[str, Any], field: str
) -> None:
    response = client.post("/ai/analyze", json=body)
    assert response.status_code == 422
    assert response.json()["kind"] == "invalid_request"
    assert field in response.json()["error"]
    assert any(field in error["loc"] for error in response.json()["detail"])


def raising(error: Exception) -> ModelFunction:
    def reply(_messages: list[BaseMessage], _info: CallInfo) -> str:
        raise error

    return reply


@pytest.mark.parametrize(
    ("reply", "kind", "text"),
    [
        (lambda _m, _i: "esto no es JSON", "model_output", "not valid JSON"),
        (raising(ConnectionError("ollama is down")), "provider", "ollama is down"),
        # Whatever a model raises is a provider failure, not a server error: a misconfigured one too.
        (raising(ConfigurationError("set GOOGLE_API_KEY")), "provider", "GOOGLE_API_KEY"),
    ],
    ids=["garbage", "down", "misconfigured"],
)
def test_model_failures_get_502_with_a_json_error_and_the_usage(
    catalog: list[dict[str, Any]], reply: ModelFunction, kind: str, text: str
) -> None:
    with client_for(reply) as c:
        response = c.post("/ai/analyze", json=analyze_body(catalog))
    assert response.status_code == 502
    body = response.json()
    assert body["kind"] == kind and text in body["error"]
    assert body["usage"]["model_calls"] == 1
    assert "Traceback" not in response.text


def broken_server_code(monkeypatch: pytest.MonkeyPatch) -> None:
    """A bug in the server itself (not in the model: whatever a model raises is a 502 provider failure)."""

    async def broken(*_args: Any, **_kwargs: Any) -> AsyncIterator[Any]:
        raise RuntimeError("secret detail")
        yield  # an async generator, as the client's calls are

    monkeypatch.setattr(InProcessAIClient, "plan", broken)


def test_unexpected_errors_get_500_naming_only_a_reference_under_which_the_traceback_is_logged(
    catalog: list[dict[str, Any]], caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    broken_server_code(monkeypatch)
    with caplog.at_level(logging.ERROR, logger="planner_mode.server"), client_for(scripted(PLAN)) as c:
        response = c.post("/ai/analyze", json=analyze_body(catalog))
    assert response.status_code == 500
    body = response.json()
    assert body["kind"] == "internal" and body["usage"] is None
    reference = re.fullmatch(r"Internal error in the AI server \(ref ([0-9a-f]{8})\)\.", body["error"])
    assert reference is not None
    assert "secret detail" not in response.text and "Traceback" not in response.text
    [record] = [r for r in caplog.records if r.name == "planner_mode.server"]
    assert reference.group(1) in record.getMessage()
    assert record.exc_info is not None and "secret detail" in str(record.exc_info[1])


def test_app_from_env_builds_both_models_and_the_token(
    monkeypatch: pytest.MonkeyPatch, catalog: list[dict[str, Any]]
) -> None:
    from benchmarks.stand_ins import build_model
    from planner_mode.server import app_from_env

    monkeypatch.setenv("ERP_AI_PROVIDER", "offline")
    monkeypatch.setenv("ERP_AI_SERVER_TOKEN", "env-token")
    monkeypatch.setenv("ERP_AI_MAX_BODY_BYTES", "100000")
    with TestClient(app_from_env(build_model)) as c:
        assert c.post("/ai/analyze", json=analyze_body(catalog)).status_code == 401
        response = c.post(
            "/ai/analyze", json=analyze_body(catalog), headers={"Authorization": "Bearer env-token"}
        )
    assert response.status_code == 200
    assert response.json()["plan"]["operaciones"][0]["funcion"] == "ventas_anuales"


@pytest.mark.parametrize(
    ("variable", "value"),
    [("ERP_AI_MAX_BODY_BYTES", "mucho")] + [("ERP_AI_READ_TIMEOUT", v) for v in ["soon", "0", "-1", "inf"]],
)
def test_app_from_env_rejects_a_bad_body_limit_or_read_timeout(
    monkeypatch: pytest.MonkeyPatch, variable: str, value: str
) -> None:
    from planner_mode.server import app_from_env

    monkeypatch.setenv(variable, value)
    with pytest.raises(ConfigurationError, match=variable):
        app_from_env()


def test_app_from_env_needs_a_provider_named_unless_the_application_gives_a_default(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from planner_mode.server import app_from_env

    monkeypatch.delenv("ERP_AI_PROVIDER", raising=False)
    with pytest.raises(ConfigurationError, match=r"Set ERP_AI_PROVIDER .*ollama, gemini, openai"):
        app_from_env()
    monkeypatch.setenv("ERP_AI_PROVIDER", "offline")  # a stand-in is not a provider of the library
    with pytest.raises(ConfigurationError, match="Unknown model provider 'offline'"):
        app_from_env()


def test_the_body_limit_counts_bytes_whatever_content_length_says() -> None:
    # A raw ASGI exchange: HTTP servers usually refuse a malformed or lying Content-Length themselves, but the
    # middleware must not depend on it.
    reached: list[bytes] = []

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body", False):
                break
        reached.append(body)
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"ok"})

    async def exchange(content_length: bytes, chunks: list[bytes]) -> int:
        messages: list[Message] = [
            {"type": "http.request", "body": chunk, "more_body": i < len(chunks) - 1}
            for i, chunk in enumerate(chunks)
        ]
        sent: list[Message] = []

        async def receive() -> Message:
            return messages.pop(0)

        async def send(message: Message) -> None:
            sent.append(message)

        scope = {
            "type": "http",
            "method": "POST",
            "path": "/",
            "headers": [(b"content-length", content_length)],
        }
        await BodySizeLimit(app, max_body_bytes=10)(scope, receive, send)
        return int(sent[0]["status"])

    assert asyncio.run(exchange(b"abc", [b"x" * 8, b"x" * 8])) == 413
    assert asyncio.run(exchange(b"4", [b"x" * 8, b"x" * 8])) == 413
    assert asyncio.run(exchange(b"11", [b"x"])) == 413  # declared too large: refused before reading
    assert asyncio.run(exchange(b"10", [b"x" * 6, b"x" * 4])) == 200
    assert reached == [b"x" * 10]


def test_json_nested_past_the_recursion_limit_is_refused_cleanly(catalog: list[dict[str, Any]]) -> None:
    model = text_model(scripted(PLAN))
    with TestClient(create_app(model), raise_server_exceptions=False) as c:
        response = c.post(
            "/ai/analyze",
            content=b"[" * 100_000 + b"]" * 100_000,
            headers={"Content-Type": "application/json"},
        )
    assert response.status_code == 422
    assert response.json()["kind"] == "invalid_request"
    assert "Traceback" not in response.text
    assert model.call_count == 0


def test_an_answer_with_a_hostile_estado_comes_back_bounded() -> None:
    # ``Answer`` clips its ``estado`` (shared.bounds.clip_state) instead of refusing it: 200, visibly cut.
    estado: Any = 1
    for _ in range(300):
        estado = [estado]
    reply = json.dumps({"respuesta": "ok", "estado": {"x": estado}})
    with client_for(lambda _m, _i: reply) as c:
        response = c.post(
            "/ai/respond", json={"question": "q", "results": [], "context": CONTEXT, "catalog": []}
        )
    assert response.status_code == 200, response.text
    assert "[anidado]" in json.dumps(response.json()["answer"]["estado"], ensure_ascii=False)


# -- every bad body is a clear 422, the token comes first, the docs are guarded --------------------

JSON = {"Content-Type": "application/json"}


def post_raw(c: TestClient, path: str, content: bytes | str, headers: dict[str, str] | None = None) -> Any:
    return c.post(path, content=content, headers={**JSON, **(headers or {})})


@pytest.mark.parametrize(
    ("path", "placeholder", "replacement"),
    [
        ("/ai/analyze", '"MSG"', '"hola \\ud800"'),
        ("/ai/analyze", '"MSG"', '"\\udc00"'),
        ("/ai/analyze", '"ESTADO"', '"\\ud800"'),
        ("/ai/respond", '"MSG"', '"\\ud800 hola"'),
    ],
    ids=["analyze-message", "analyze-low-surrogate", "analyze-context", "respond-question"],
)
def test_a_lone_surrogate_escape_in_any_string_is_a_422(
    catalog: list[dict[str, Any]], path: str, placeholder: str, replacement: str
) -> None:
    context = {**CONTEXT, "estado": {"tema": "ESTADO"}}
    if path == "/ai/analyze":
        body = {"message": "MSG", "context": context, "catalog": catalog}
    else:
        body = {"question": "MSG", "results": [], "context": context}
    model = text_model(scripted(PLAN))
    with TestClient(create_app(model), raise_server_exceptions=False) as c:
        response = post_raw(c, path, json.dumps(body).replace(placeholder, replacement))
    assert response.status_code == 422, response.text
    assert response.json()["kind"] == "invalid_request"
    assert "surrogate" in response.json()["error"]
    assert model.call_count == 0


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (b'{"message": "\xff\xfe", "context": {}, "catalog": []}', "UTF-8"),
        (b"{nope", "not valid JSON"),
        (b'{"message": "x", "context": {"hoy": "2026-11-30", "estado": {"n": NaN}}, "catalog": []}', "JSON"),
        (b"", "body"),
    ],
    ids=["invalid-utf8", "not-json", "nan", "empty"],
)
def test_unparseable_bodies_get_a_422_with_a_clear_error(
    client: TestClient, content: bytes, expected: str
) -> None:
    response = post_raw(client, "/ai/analyze", content)
    assert response.status_code == 422, response.text
    body = response.json()
    assert body["kind"] == "invalid_request" and body["usage"] is None
    assert body["error"].startswith("Invalid request body") and expected in body["error"]
    assert "Traceback" not in response.text


def test_a_body_that_is_not_declared_as_json_gets_a_422_saying_so(
    client: TestClient, catalog: list[dict[str, Any]]
) -> None:
    response = client.post(
        "/ai/analyze", content=json.dumps(analyze_body(catalog)), headers={"Content-Type": "text/plain"}
    )
    assert response.status_code == 422
    assert "application/json" in response.json()["error"]
    assert "¿Cuánto vendimos" not in response.text  # the body is not echoed back


@pytest.mark.parametrize("blank", ["", "   ", "\n\t "])
def test_an_empty_or_blank_question_is_a_422(
    client: TestClient, catalog: list[dict[str, Any]], blank: str
) -> None:
    analyze = client.post("/ai/analyze", json=analyze_body(catalog, message=blank))
    respond = client.post(
        "/ai/respond", json={"question": blank, "results": [], "context": CONTEXT, "catalog": []}
    )
    assert analyze.status_code == respond.status_code == 422
    assert "message" in analyze.json()["error"] and "question" in respond.json()["error"]


def test_the_token_is_checked_before_the_body_is_read(catalog: list[dict[str, Any]]) -> None:
    model = text_model(scripted(PLAN))
    with TestClient(create_app(model, token="s3cret", max_body_bytes=2_000)) as c:
        invalid = post_raw(c, "/ai/analyze", b"{nope", {"Authorization": "Bearer nope"})
        surrogate = post_raw(c, "/ai/analyze", b'{"message": "\\ud800"}')
        declared = c.post("/ai/analyze", json=analyze_body(catalog, message="x" * 5_000))
        streamed = c.post(
            "/ai/analyze",
            content=(b"x" * 1_500 for _ in range(3)),
            headers={**JSON, "Authorization": "Bearer nope"},
        )
        authorised = c.post(
            "/ai/analyze",
            json=analyze_body(catalog, message="x" * 5_000),
            headers={"Authorization": "Bearer s3cret"},
        )
    assert invalid.status_code == surrogate.status_code == declared.status_code == streamed.status_code == 401
    assert invalid.json()["kind"] == "unauthorized"
    assert invalid.headers["www-authenticate"] == "Bearer"
    assert authorised.status_code == 413
    assert model.call_count == 0


def test_with_a_token_the_schema_needs_it_and_the_browser_docs_are_off() -> None:
    with client_for(scripted(PLAN), token="s3cret") as c:
        anonymous = [c.get(path).status_code for path in ("/openapi.json", "/docs", "/redoc", "/nope")]
        auth = {"Authorization": "Bearer s3cret"}
        schema = c.get("/openapi.json", headers=auth)
        docs = [c.get(path, headers=auth).status_code for path in ("/docs", "/redoc")]
        health = c.get("/healthz")
    assert anonymous == [401, 401, 401, 401]
    assert schema.status_code == 200 and "/ai/analyze" in schema.json()["paths"]
    assert docs == [404, 404]
    assert health.status_code == 200


@pytest.mark.parametrize(
    ("host", "token", "warns"),
    [
        ("127.0.0.1", None, False),
        ("localhost", None, False),
        ("::1", None, False),
        ("[::1]", None, False),
        ("127.8.9.10", "", False),
        ("0.0.0.0", None, True),
        ("::", None, True),
        ("", None, True),
        ("192.168.1.20", "", True),
        ("erp.example.com", None, True),
        ("0.0.0.0", "s3cret", False),
    ],
)
def test_bind_warning_only_for_a_non_loopback_host_without_a_token(
    monkeypatch: pytest.MonkeyPatch, host: str, token: str | None, warns: bool
) -> None:
    monkeypatch.delenv("ERP_AI_SERVER_TOKEN", raising=False)
    warning = bind_warning(host, token)
    assert (warning is not None) == warns
    if warning is not None:
        assert "token" in warning and (host or "all interfaces") in warning


def test_bind_warning_counts_the_token_from_the_environment_like_the_server(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("ERP_AI_SERVER_TOKEN", "from-env")
    assert bind_warning("0.0.0.0", None) is None
    assert bind_warning("0.0.0.0", "") is not None
