"""The embedding example of ``docs/design.md`` runs as documented: its own database, two custom operations,
its own roles and users, and a FastAPI app that streams each turn as NDJSON.

The repository's offline model only understands the demo's sales questions (it answers the bookshop's
questions with "I can only consult sales"), so these tests drive the example with :func:`librarian`: a
scripted chat model that plans the bookshop's questions from a table and phrases whatever results the ERP
sends back, streaming its replies in small chunks like a real provider. Every figure asserted below comes
from the example's own SQLite database, through the ERP's execution of the plan.
"""

from __future__ import annotations

import importlib.util
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from fastapi.testclient import TestClient
from langchain_core.messages import BaseMessage

from tests.fakes import CallInfo, StreamingChatModel

EXAMPLE = Path(__file__).resolve().parents[2] / "docs" / "examples" / "embed_planner.py"

SOLD = "¿Cuántos ejemplares de Rayuela vendimos en 2025?"
STOCK = "¿Y cuántos nos quedan?"
PLANS: dict[str, list[dict[str, Any]]] = {
    SOLD: [{"funcion": "ventas_libro", "parametros": {"titulo": "Rayuela", "anio": 2025}}],
    STOCK: [{"funcion": "stock_libro", "parametros": {"titulo": "Rayuela"}}],
}
"""Call 1 of the scripted model: the plan of each question (whatever the caller's catalog offers, as a
model fooled by a prompt injection would plan)."""
MARTA = {"X-User": "marta"}  # role encargado: stock and sales
TOMAS = {"X-User": "tomas"}  # role cajero: stock only


def librarian(messages: list[BaseMessage], info: CallInfo) -> str:
    """Call 1: the plan of :data:`PLANS` for the question. Call 2: one sentence per result or error."""
    prompt = messages[-1].text
    if "operaciones" in (info.schema or {}).get("properties", {}):
        question = prompt.rsplit("Nueva pregunta:\n", 1)[1]
        return json.dumps({"operaciones": PLANS[question]})
    sentences = []
    results, _end = json.JSONDecoder().raw_decode(prompt.rsplit("Resultados:\n", 1)[1])
    for item in results:
        result = item.get("resultado")
        if result is None:
            sentences.append(f"No pude consultar {item['funcion']}: {item['error']}")
        elif item["funcion"] == "ventas_libro":
            sentences.append(
                f"En {result['anio']} se vendieron {result['ejemplares']} ejemplares de {result['titulo']} "
                f"por ₲{result['total']}."  # the ERP writes the figure ("840.000"); the answer copies it
            )
        else:
            sentences.append(f"Quedan {result['stock']} ejemplares de {result['titulo']}.")
    answer = {"respuesta": " ".join(sentences), "memoria": [], "estado": {"tema": "libros"}}
    return json.dumps(answer, ensure_ascii=False)


@pytest.fixture(scope="module")
def example() -> Iterator[ModuleType]:
    """``docs/examples/embed_planner.py``, imported from its path (it is a script, not a package)."""
    spec = importlib.util.spec_from_file_location("embed_planner", EXAMPLE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # pydantic and typing resolve the module's annotations through it
    try:
        spec.loader.exec_module(module)
        yield module
    finally:
        sys.modules.pop(spec.name, None)


@pytest.fixture
def model() -> StreamingChatModel:
    """:func:`librarian` as a chat model that streams its replies eight characters at a time."""
    return StreamingChatModel(librarian, piece=8)


@pytest.fixture
def client(example: ModuleType, model: StreamingChatModel, tmp_path: Path) -> Iterator[TestClient]:
    app = example.create_app(f"sqlite:///{tmp_path / 'bookshop.sqlite3'}", model)
    with TestClient(app) as test_client:
        yield test_client


def chat(client: TestClient, conversation: str, message: str, user: dict[str, str]) -> list[dict[str, Any]]:
    """One turn through ``POST /chat``: its NDJSON lines, parsed."""
    response = client.post("/chat", json={"conversation_id": conversation, "message": message}, headers=user)
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("application/x-ndjson")
    return [json.loads(line) for line in response.text.splitlines()]


def test_healthz(client: TestClient) -> None:
    assert client.get("/healthz").json() == {"status": "ok"}


def test_a_turn_streams_its_events_and_ends_with_the_operation_result_from_the_examples_database(
    client: TestClient, model: StreamingChatModel
) -> None:
    events = chat(client, "c1", SOLD, MARTA)

    kinds = [event["type"] for event in events]
    assert kinds[:2] == ["plan", "operation"] and kinds[-1] == "turn"
    deltas = [event["text"] for event in events if event["type"] == "answer_delta"]
    assert len(deltas) >= 2, "the answer arrives in pieces as call 2 writes it"
    assert kinds == ["plan", "operation", *["answer_delta"] * len(deltas), "turn"]
    # 3 + 4 copies of Rayuela in 2025 (not the 2 of 2024), at ₲120.000 each: the ERP's own rows.
    sold = {"titulo": "Rayuela", "anio": 2025, "ejemplares": 7, "total": 840_000}
    assert events[1]["operation"]["result"] == sold
    turn = events[-1]["result"]
    assert turn["answer"] == "".join(deltas) == "En 2025 se vendieron 7 ejemplares de Rayuela por ₲840.000."
    assert (turn["failure"], turn["recorded"], turn["model_calls"]) == (None, True, 2)
    assert turn["operations"][0]["result"] == sold
    assert model.call_count == 2


def test_the_conversation_is_recorded_and_the_next_turn_reads_it(
    client: TestClient, model: StreamingChatModel
) -> None:
    first = chat(client, "c1", SOLD, MARTA)[-1]["result"]["answer"]

    history = client.get("/conversations/c1", headers=MARTA)
    assert history.status_code == 200
    assert history.json() == [{"role": "user", "content": SOLD}, {"role": "assistant", "content": first}]

    second = chat(client, "c1", STOCK, MARTA)[-1]["result"]
    assert second["answer"] == "Quedan 4 ejemplares de Rayuela."
    plan_prompt = model.calls[2].messages[-1].text  # call 1 of the second turn: the store's context
    assert first in plan_prompt and "ventas_libro(" in plan_prompt


def test_another_caller_can_neither_read_nor_continue_the_conversation(
    client: TestClient, model: StreamingChatModel
) -> None:
    chat(client, "c1", SOLD, MARTA)
    calls_before = model.call_count

    assert client.get("/conversations/c1", headers=TOMAS).status_code == 403
    refused = client.post("/chat", json={"conversation_id": "c1", "message": STOCK}, headers=TOMAS)
    assert refused.status_code == 403
    assert "another user" in refused.json()["detail"]
    assert model.call_count == calls_before, "refused before any model call"
    assert len(client.get("/conversations/c1", headers=MARTA).json()) == 2, "nothing written"


def test_an_operation_the_caller_may_not_run_is_refused_and_never_executed(
    client: TestClient, model: StreamingChatModel
) -> None:
    events = chat(client, "t1", SOLD, TOMAS)  # the scripted model plans ventas_libro even so

    catalog_prompt = model.calls[0].messages[0].text
    assert "stock_libro(" in catalog_prompt and "ventas_libro" not in catalog_prompt
    operation = next(event["operation"] for event in events if event["type"] == "operation")
    assert operation["funcion"] == "ventas_libro"
    assert (operation["result"], operation["error_kind"]) == (None, "invalid")
    assert "No tiene permiso" in operation["error"]
    turn = events[-1]["result"]
    assert turn["failure"] == "invalid_plan" and turn["recorded"]
    assert "840" not in turn["answer"] and "No pude consultar ventas_libro" in turn["answer"]


def test_an_unknown_user_is_refused(client: TestClient) -> None:
    response = client.post("/chat", json={"conversation_id": "c1", "message": SOLD}, headers={"X-User": "x"})
    assert response.status_code == 401


def test_main_serves_the_app_with_uvicorn(
    example: ModuleType, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import uvicorn

    served: dict[str, Any] = {}
    monkeypatch.setattr(uvicorn, "run", lambda app, **options: served.update(app=app, **options))
    monkeypatch.setenv("BOOKSHOP_DB_URL", f"sqlite:///{tmp_path / 'bookshop.sqlite3'}")
    example.main()

    assert served["host"] == "127.0.0.1"
    with TestClient(served["app"]) as test_client:
        assert test_client.get("/healthz").status_code == 200
