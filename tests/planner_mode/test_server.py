"""The stateless AI server over FastAPI's in-process test client: routes, auth, limits and error bodies."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from datetime import date
from typing import Any

import pytest
from fastapi.testclient import TestClient
from langchain_core.messages import BaseMessage
from starlette.types import Message, Receive, Scope, Send

from planner_mode.server import BodySizeLimit, create_app
from shared.errors import ConfigurationError
from shared.memory.context import ConversationContext
from shared.operations.registry import OperationRegistry
from tests.fakes import CallInfo, ModelFunction
from tests.planner_mode.planner_fakes import scripted, text_model

CONTEXT = ConversationContext(hoy=date(2026, 11, 30), estado={"anio": 2025}).model_dump(mode="json")
PLAN = {"operaciones": [{"funcion": "ventas_anuales", "parametros": {"anio": 2025}}], "pregunta": "¿Cuánto?"}


@pytest.fixture
def catalog(toy_registry: OperationRegistry) -> list[dict[str, Any]]:
    return [spec.model_dump() for spec in toy_registry.catalog()]


def analyze_body(catalog: list[dict[str, Any]], message: str = "¿Cuánto vendimos en 2025?") -> dict[str, Any]:
    return {"message": message, "context": CONTEXT, "catalog": catalog}


def client_for(reply: ModelFunction, **kwargs: Any) -> TestClient:
    return TestClient(create_app(text_model(reply), **kwargs), raise_server_exceptions=False)


@pytest.fixture
def client() -> Iterator[TestClient]:
    with client_for(scripted(PLAN)) as c:
        yield c


def test_healthz_and_openapi_docs(client: TestClient) -> None:
    assert client.get("/healthz").json() == {"status": "ok"}
    paths = client.get("/openapi.json").json()["paths"]
    assert {"/ai/analyze", "/ai/respond", "/healthz"} <= set(paths)
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
        c.post("/ai/respond", json={"question": "q", "results": [], "context": CONTEXT})
    assert (planner.call_count, writer.call_count) == (1, 1)


def test_token_is_required_when_configured(catalog: list[dict[str, Any]]) -> None:
    with client_for(scripted(PLAN), token="s3cret") as c:
        missing = c.post("/ai/analyze", json=analyze_body(catalog))
        wrong = c.post("/ai/analyze", json=analyze_body(catalog), headers={"Authorization": "Bearer nope"})
        right = c.post("/ai/analyze", json=analyze_body(catalog), headers={"Authorization": "Bearer s3cret"})
        health = c.get("/healthz")
    assert missing.status_code == wrong.status_code == 401
    assert missing.json() == {
        "error": "Missing or wrong bearer token.",
        "kind": "unauthorized",
        "usage": None,
    }
    assert missing.headers["www-authenticate"] == "Bearer"
    assert right.status_code == 200
    assert health.status_code == 200


def test_token_comes_from_the_environment_by_default(
    monkeypatch: pytest.MonkeyPatch, catalog: list[dict[str, Any]]
) -> None:
    monkeypatch.setenv("ERP_AI_SERVER_TOKEN", "from-env")
    with client_for(scripted(PLAN)) as c:
        assert c.post("/ai/analyze", json=analyze_body(catalog)).status_code == 401
        ok = c.post("/ai/analyze", json=analyze_body(catalog), headers={"Authorization": "Bearer from-env"})
        assert ok.status_code == 200


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
        ({"message": "", "context": CONTEXT, "catalog": []}, "message"),
        ({"message": "x", "context": {"hoy": "ayer"}, "catalog": []}, "hoy"),
        ({"message": "x", "context": CONTEXT, "catalog": [{"name": "f"}]}, "description"),
    ],
)
def test_invalid_bodies_get_422_naming_the_field(
    client: TestClient, body: dict[str, Any], field: str
) -> None:
    response = client.post("/ai/analyze", json=body)
    assert response.status_code == 422
    assert any(field in error["loc"] for error in response.json()["detail"])


def boom(_messages: list[BaseMessage], _info: CallInfo) -> str:
    raise ConnectionError("ollama is down")


@pytest.mark.parametrize(
    ("reply", "kind", "text"),
    [
        (lambda _m, _i: "esto no es JSON", "model_output", "not valid JSON"),
        (boom, "provider", "ollama is down"),
    ],
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


def test_unexpected_errors_get_500_without_a_stack_trace(catalog: list[dict[str, Any]]) -> None:
    def misconfigured(_messages: list[BaseMessage], _info: CallInfo) -> str:
        raise ConfigurationError("secret detail")

    with client_for(misconfigured) as c:
        response = c.post("/ai/analyze", json=analyze_body(catalog))
    assert response.status_code == 500
    assert response.json() == {"error": "Internal error in the AI server.", "kind": "internal", "usage": None}


def test_app_from_env_builds_both_models_and_the_token(
    monkeypatch: pytest.MonkeyPatch, catalog: list[dict[str, Any]]
) -> None:
    from planner_mode.server import app_from_env

    monkeypatch.setenv("ERP_AI_PROVIDER", "offline")
    monkeypatch.setenv("ERP_AI_SERVER_TOKEN", "env-token")
    monkeypatch.setenv("ERP_AI_MAX_BODY_BYTES", "100000")
    with TestClient(app_from_env()) as c:
        assert c.post("/ai/analyze", json=analyze_body(catalog)).status_code == 401
        response = c.post(
            "/ai/analyze", json=analyze_body(catalog), headers={"Authorization": "Bearer env-token"}
        )
    assert response.status_code == 200
    assert response.json()["plan"]["operaciones"][0]["funcion"] == "ventas_anuales"


def test_app_from_env_rejects_a_bad_body_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    from planner_mode.server import app_from_env

    monkeypatch.setenv("ERP_AI_MAX_BODY_BYTES", "mucho")
    with pytest.raises(ConfigurationError, match="ERP_AI_MAX_BODY_BYTES"):
        app_from_env()


def test_an_empty_token_disables_auth_even_over_the_environment(
    monkeypatch: pytest.MonkeyPatch, catalog: list[dict[str, Any]]
) -> None:
    monkeypatch.setenv("ERP_AI_SERVER_TOKEN", "from-env")
    with client_for(scripted(PLAN), token="") as c:
        bare = c.post("/ai/analyze", json=analyze_body(catalog))
        with_any = c.post("/ai/analyze", json=analyze_body(catalog), headers={"Authorization": "Bearer x"})
    assert bare.status_code == with_any.status_code == 200


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
    assert response.status_code in (400, 422)
    assert "Traceback" not in response.text
    assert model.call_count == 0


def test_an_answer_the_erp_could_not_store_gets_502() -> None:
    estado: Any = 1
    for _ in range(300):
        estado = [estado]
    reply = json.dumps({"respuesta": "ok", "estado": {"x": estado}})
    with client_for(lambda _m, _i: reply) as c:
        response = c.post("/ai/respond", json={"question": "q", "results": [], "context": CONTEXT})
    assert response.status_code == 502
    assert response.json()["kind"] == "model_output" and response.json()["usage"]["model_calls"] == 1
