"""Hostile input in one table: every case in both modes, in process and through the AI server, both backends.

A turn's input (:mod:`shared.inputs`) is refused before anything is read, paid or written, the same way
everywhere: failure kind ``input``, no model call, no conversation created, and nothing of the refused text
(a NUL, a terminal escape) repeated in what the user or a log reads. The AI server's request models apply
the same rules and the ERP's context bounds to what crosses the wire, so a hostile request sent straight to
the server is a 422 that costs no model call either; an unknown path or method gets the server's error body.

Every engine case runs on SQLite and on PostgreSQL (``backend``, :mod:`tests.engine_backends`): NUL is the
character the two disagree on (SQLite stores it, PostgreSQL refuses it), so it must never get that far.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import date
from typing import Any

import httpx
import pytest
from sqlalchemy import func, select
from typer.testing import CliRunner

from benchmarks.cli.app import app as cli_app
from benchmarks.modes import build_engine
from benchmarks.serving import ServerThread
from benchmarks.stand_ins import build_model
from benchmarks.stand_ins.offline import OfflineSalesModel
from planner_mode import HttpAIClient, PlannerEngine, create_app
from planner_mode.server.wire import MAX_CATALOG_CHARS, MAX_CATALOG_OPERATIONS, AnalyzeRequest, ErrorResponse
from shared.answer import MemoryItem
from shared.bounds import (
    MAX_CONTEXT_EXCHANGES,
    MAX_CONTEXT_MEMORIES,
    MAX_EXCHANGE_CHARS,
    MAX_MEMORY_CHARS,
    MAX_STATE_KEYS,
    clean_text,
)
from shared.engine import AssistantEngine
from shared.erp.database import Erp
from shared.inputs import ALLOWED_CONTROLS, CONTROL_CHARACTERS, MAX_QUESTION_CHARS, find_control_character
from shared.memory.context import ConversationContext
from shared.memory.store import MemoryStore, MessageIn, TurnRecord
from shared.memory.tables import Conversation
from shared.operations.registry import OperationRegistry
from shared.security import DEMO_CALLER
from tests.engine_backends import backend, erp, fresh_db_url, memory_store  # noqa: F401  (fixtures)

# -- the rule --------------------------------------------------------------------------------------------


def test_the_refused_controls_are_c0_but_tab_and_line_ends_del_and_c1() -> None:
    refused = {chr(code) for code in [*range(0x20), 0x7F, *range(0x80, 0xA0)]} - {"\t", "\n", "\r"}
    assert refused == CONTROL_CHARACTERS
    assert ALLOWED_CONTROLS == "\t\n\r"
    assert find_control_character("Busca el cliente \x1b]0;PWNED\x07 ABC") == 17
    assert find_control_character("línea 1\r\nlínea 2\tcon tabulador, ₲ y emoji 👍\u200d") is None


def test_stored_text_is_cleaned_of_exactly_the_refused_controls() -> None:
    """One table: what a question may not hold is what the store removes from what it keeps."""
    every_control = "".join(map(chr, [*range(0x20), *range(0x7F, 0xA0)]))
    assert clean_text(every_control).replace(" ", "") == "\t\n\r"  # vertical whitespace becomes a space


# -- the table: each hostile input, in every mode and transport, on both backends --------------------------


@dataclass(frozen=True)
class Hostile:
    """One hostile turn input."""

    name: str
    question: str
    reason: str
    """What the refusal says (the start of the one error the turn records)."""
    conversation_id: str = "c1"


CONTROL = "The question contains a control character"
HOSTILE = [
    Hostile("nul-in-question", "¿Cuánto vendimos en 2025?\x00 hola", f"{CONTROL} (U+0000 at position 26)"),
    Hostile("nul-in-a-customer-name", "Busca el cliente Emp\x00resa", f"{CONTROL} (U+0000 at position 21)"),
    Hostile(
        "terminal-title-escape", "Busca el cliente \x1b]0;PWNED\x07 ABC", f"{CONTROL} (U+001B at position 18)"
    ),
    Hostile("clear-screen-escape", "\x1b[2J¿Cuánto vendimos en 2025?", f"{CONTROL} (U+001B at position 1)"),
    Hostile("backspaces", "¿Cuánto vendimos en 2025?\x08\x08", f"{CONTROL} (U+0008 at position 26)"),
    Hostile("del", "Busca el cliente ABC\x7f", f"{CONTROL} (U+007F at position 21)"),
    Hostile("c1-csi", "Busca el cliente \x9b31m ABC", f"{CONTROL} (U+009B at position 18)"),
    Hostile(
        "oversized", "x" * (MAX_QUESTION_CHARS + 1), "The question has 4001 characters; the limit is 4000"
    ),
    Hostile("lone-surrogate", "Busca el cliente \udcff", "The question is not valid UTF-8 text"),
    Hostile(
        "nul-in-conversation-id",
        "¿Cuánto vendimos en 2025?",
        "A conversation id may not contain a control character (U+0000 at position 2)",
        conversation_id="c\x00",
    ),
    Hostile(
        "escape-in-conversation-id",
        "¿Cuánto vendimos en 2025?",
        "A conversation id may not contain a control character (U+001B at position 2)",
        conversation_id="c\x1b[2J",
    ),
]
ROUTES = ["planner", "planner-over-the-ai-server", "toolcalling"]
"""Both modes in process, and the planner with its model behind the AI server (the only mode that has one)."""


@pytest.fixture(scope="module")
def ai_server() -> Iterator[tuple[ServerThread, OfflineSalesModel]]:
    """One AI server over the offline model for the whole module, and that model (to count its calls)."""
    model = build_model("offline")
    assert isinstance(model, OfflineSalesModel)
    with ServerThread(create_app(model)) as server:
        yield server, model


@pytest.fixture
def route_engine(
    request: pytest.FixtureRequest,
    registry: OperationRegistry,
    erp: Erp,  # noqa: F811
    memory_store: MemoryStore,  # noqa: F811
) -> Iterator[Callable[[str], tuple[AssistantEngine, OfflineSalesModel]]]:
    """A maker of the engine of a route over the demo ERP and a fresh store of the test's backend."""
    clients: list[HttpAIClient] = []

    def make(route: str) -> tuple[AssistantEngine, OfflineSalesModel]:
        if route == "planner-over-the-ai-server":
            server, served = request.getfixturevalue("ai_server")
            client = HttpAIClient([server.url], timeout=30)
            clients.append(client)
            return PlannerEngine(registry, erp, memory_store, client), served
        model = build_model("offline")
        assert isinstance(model, OfflineSalesModel)
        mode = "planner" if route == "planner" else "toolcalling"
        return build_engine(mode, registry=registry, erp=erp, store=memory_store, model=model), model

    yield make
    for client in clients:
        client.close()


def conversations(store: MemoryStore) -> int:
    with store.engine.connect() as connection:
        return int(connection.scalar(select(func.count()).select_from(Conversation)) or 0)


@pytest.mark.parametrize("route", ROUTES)
@pytest.mark.parametrize("case", HOSTILE, ids=[case.name for case in HOSTILE])
def test_a_hostile_input_is_refused_as_input_before_any_model_call(
    route_engine: Callable[[str], tuple[AssistantEngine, OfflineSalesModel]],
    memory_store: MemoryStore,  # noqa: F811
    route: str,
    case: Hostile,
) -> None:
    engine, model = route_engine(route)
    calls_before = model.calls

    result = engine.ask(case.conversation_id, case.question, DEMO_CALLER)

    assert (result.failure, result.model_calls, result.recorded) == ("input", 0, False)
    assert model.calls == calls_before  # not one model call, in process or on the server
    assert conversations(memory_store) == 0
    # What the user and the logs read names the character (U+001B) but never repeats it.
    shown = [result.answer, *result.errors]
    assert all(find_control_character(text) is None for text in shown), shown
    assert len(result.errors) == 1 and result.errors[0].startswith(case.reason), result.errors


@pytest.mark.parametrize("route", ROUTES)
def test_tabs_and_line_ends_are_text_and_answered_as_usual(
    route_engine: Callable[[str], tuple[AssistantEngine, OfflineSalesModel]], route: str
) -> None:
    engine, _model = route_engine(route)
    result = engine.ask("c1", "¿Cuánto vendimos\ten 2025?\r\n", DEMO_CALLER)
    assert result.failure is None and result.recorded
    assert "₲850.000.000" in result.answer


def test_the_cli_refuses_a_terminal_escape_in_one_line_without_repeating_it() -> None:
    result = CliRunner().invoke(cli_app, ["ask", "Busca el cliente \x1b]0;PWNED\x07 ABC"])
    assert result.exit_code == 2
    assert "control character (U+001B at position 18)" in result.output
    assert find_control_character(result.output.replace("\n", "")) is None


# -- hostile requests sent straight to the AI server ------------------------------------------------------


def valid_analyze_body(registry: OperationRegistry) -> dict[str, Any]:
    return {
        "message": "¿Cuánto vendimos en 2025?",
        "context": ConversationContext(hoy=date(2026, 11, 30)).model_dump(mode="json"),
        "catalog": [spec.model_dump(mode="json") for spec in registry.catalog(DEMO_CALLER)],
    }


Change = Callable[[dict[str, Any]], Any]


def one(key: str, value: Any) -> Change:
    return lambda body: body.update({key: value})


def with_context(**fields: Any) -> Change:
    return lambda body: body["context"].update(fields)


def spec_change(key: str, value: Any) -> Change:
    return lambda body: body["catalog"][0].update({key: value})


def many_operations(body: dict[str, Any]) -> None:
    spec = body["catalog"][0]
    body["catalog"] = [{**spec, "name": f"op{i}"} for i in range(MAX_CATALOG_OPERATIONS + 1)]


EXCHANGE = {"usuario": "hola", "asistente": "hola"}
HOSTILE_BODIES: list[tuple[str, Change, str]] = [
    ("nul-in-message", one("message", "¿Cuánto vendimos en 2025?\x00 hola"), "message"),
    ("escape-in-message", one("message", "Busca el cliente \x1b]0;PWNED\x07 ABC"), "message"),
    ("c1-in-message", one("message", "Busca el cliente \x9b31m ABC"), "message"),
    ("message-over-the-erp-limit", one("message", "x" * (MAX_QUESTION_CHARS + 1)), "message"),
    ("message-of-900000-characters", one("message", "¿Cuánto vendimos? " + "x" * 900_000), "message"),
    ("escape-in-a-memory", with_context(memoria=["el cliente \x1b]0;PWNED\x07"]), "context"),
    ("too-many-memories", with_context(memoria=["m"] * (MAX_CONTEXT_MEMORIES + 1)), "context"),
    ("a-memory-too-long", with_context(memoria=["m" * (MAX_MEMORY_CHARS + 1)]), "context"),
    ("too-many-state-keys", with_context(estado={f"k{i}": 1 for i in range(MAX_STATE_KEYS + 1)}), "context"),
    ("nul-deep-in-the-state", with_context(estado={"cliente": {"nombre": ["Emp\x00resa"]}}), "context"),
    ("a-state-value-too-long", with_context(estado={"nota": "n" * 600}), "context"),
    (
        "too-many-exchanges",
        with_context(ultimos_intercambios=[EXCHANGE] * (MAX_CONTEXT_EXCHANGES + 1)),
        "context",
    ),
    (
        "an-exchange-too-long",
        with_context(ultimos_intercambios=[{"usuario": "u" * (MAX_EXCHANGE_CHARS + 1), "asistente": "a"}]),
        "context",
    ),
    ("nul-in-a-catalog-description", spec_change("description", "Ventas\x00"), "catalog"),
    ("escape-in-a-catalog-schema", spec_change("parameters", {"description": "\x1b[2J"}), "catalog"),
    ("too-many-operations", many_operations, "catalog"),
    ("a-catalog-too-long", spec_change("description", "d" * MAX_CATALOG_CHARS), "catalog"),
]


@pytest.mark.parametrize(
    ("change", "field"), [(c, f) for _, c, f in HOSTILE_BODIES], ids=[n for n, _, _ in HOSTILE_BODIES]
)
def test_a_hostile_request_to_the_ai_server_is_a_422_before_any_model_call(
    ai_server: tuple[ServerThread, OfflineSalesModel],
    registry: OperationRegistry,
    change: Change,
    field: str,
) -> None:
    server, model = ai_server
    body = valid_analyze_body(registry)
    change(body)
    calls_before = model.calls

    response = httpx.post(f"{server.url}/ai/analyze", json=body, timeout=30)

    assert response.status_code == 422, response.text[:300]
    error = ErrorResponse.model_validate_json(response.content)
    assert error.kind == "invalid_request" and field in error.error
    assert error.detail and error.detail[0].loc[:2] == ["body", field]
    assert model.calls == calls_before
    assert find_control_character(error.error) is None  # the refused text is not sent back raw


def test_call_2_refuses_the_same_question_and_context(
    ai_server: tuple[ServerThread, OfflineSalesModel],
) -> None:
    server, model = ai_server
    context = ConversationContext(hoy=date(2026, 11, 30)).model_dump(mode="json")
    bodies = [
        {"question": "Emp\x00resa", "results": [], "context": context, "catalog": []},
        {"question": "x" * (MAX_QUESTION_CHARS + 1), "results": [], "context": context, "catalog": []},
        {
            "question": "¿Y?",
            "results": [],
            "context": {**context, "memoria": ["\x1b]0;PWNED\x07"]},
            "catalog": [],
        },
    ]
    calls_before = model.calls
    statuses = [httpx.post(f"{server.url}/ai/respond", json=b, timeout=30).status_code for b in bodies]
    assert statuses == [422, 422, 422]
    assert model.calls == calls_before


def test_the_largest_context_the_store_builds_and_the_longest_question_pass_the_wire(
    registry: OperationRegistry,
    memory_store: MemoryStore,  # noqa: F811
) -> None:
    """The server's bounds are the ERP's own: whatever the store holds, what it sends is accepted."""
    hostile = "\x1b]0;PWNED\x07 \x00" + "m" * 10_000
    message = "\x1b]0;PWNED\x07 " + "m" * 10_000  # messages are stored whole: PostgreSQL cannot hold a NUL
    for turn in range(MAX_CONTEXT_EXCHANGES + 1):
        memory_store.record_turn(
            "big",
            TurnRecord(
                messages=[
                    MessageIn(role="user", content=message),
                    MessageIn(role="assistant", content=message),
                ],
                memories=[MemoryItem(contenido=f"{turn}-{i} {hostile}", importancia=1.0) for i in range(5)],
                state={f"{turn}-{key} {hostile}": {"v": [hostile] * 50} for key in range(MAX_STATE_KEYS)},
            ),
        )
    context = memory_store.build_context("big", date(2026, 11, 30), memory_limit=100, exchanges=100)
    assert len(context.memories) == MAX_CONTEXT_MEMORIES and len(context.state) == MAX_STATE_KEYS

    request = AnalyzeRequest(
        message="¿" + "x" * (MAX_QUESTION_CHARS - 1),
        context=context,
        catalog=registry.catalog(DEMO_CALLER),
    )
    assert request.context is context


def test_six_oversized_requests_at_once_are_all_refused_without_a_model_call(
    ai_server: tuple[ServerThread, OfflineSalesModel], registry: OperationRegistry
) -> None:
    server, model = ai_server
    body = json.dumps({**valid_analyze_body(registry), "message": "x" * 900_000})
    statuses: list[int] = []

    def post() -> None:
        headers = {"Content-Type": "application/json"}
        statuses.append(
            httpx.post(f"{server.url}/ai/analyze", content=body, headers=headers, timeout=30).status_code
        )

    calls_before = model.calls
    threads = [threading.Thread(target=post) for _ in range(6)]
    for thread in threads:
        thread.start()
    health = httpx.get(f"{server.url}/healthz", timeout=30)
    for thread in threads:
        thread.join()
    assert health.status_code == 200
    assert statuses == [422] * 6 and model.calls == calls_before


def test_a_large_body_is_parsed_off_the_event_loop(
    monkeypatch: pytest.MonkeyPatch, registry: OperationRegistry
) -> None:
    from planner_mode.server import endpoints as server_module

    threads: list[int] = []
    real = server_module.strict_json

    def spy(body: bytes) -> Any:
        threads.append(threading.get_ident())
        return real(body)

    monkeypatch.setattr(server_module, "strict_json", spy)
    loop_threads: list[int] = []
    app = create_app(build_model("offline"))
    small = valid_analyze_body(registry)
    large = {**small, "message": "x" * 900_000}

    async def run() -> None:
        loop_threads.append(threading.get_ident())
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://ai") as client:
            assert (await client.post("/ai/analyze", json=small)).status_code == 200
            assert (await client.post("/ai/analyze", json=large)).status_code == 422

    asyncio.run(run())
    assert threads[0] == loop_threads[0]  # a small body: parsed inline, cheaper than a thread hop
    assert threads[1] != loop_threads[0]  # a large one: in a worker thread


# -- unknown paths and wrong methods get the documented error body ----------------------------------------


@pytest.mark.parametrize(
    ("method", "path", "status", "kind"),
    [
        ("GET", "/nope", 404, "not_found"),
        ("POST", "/ai/%1B%5D0%3BPWNED%07", 404, "not_found"),
        ("GET", "/ai/analyze", 405, "method_not_allowed"),
        ("POST", "/healthz", 405, "method_not_allowed"),
    ],
)
def test_unknown_paths_and_wrong_methods_get_the_error_body(
    ai_server: tuple[ServerThread, OfflineSalesModel], method: str, path: str, status: int, kind: str
) -> None:
    server, _model = ai_server
    response = httpx.request(method, f"{server.url}{path}", timeout=30)
    assert response.status_code == status
    error = ErrorResponse.model_validate_json(response.content)
    assert error.kind == kind
    assert "PWNED" not in error.error  # the path is not echoed back
    if status == 405:
        assert response.headers["allow"] and response.headers["allow"] in error.error


def test_a_routing_error_is_logged_with_its_kind(
    ai_server: tuple[ServerThread, OfflineSalesModel], caplog: pytest.LogCaptureFixture
) -> None:
    server, _model = ai_server
    with caplog.at_level("INFO", logger="planner_mode.server"):
        httpx.get(f"{server.url}/nope", timeout=30)
        deadline = time.monotonic() + 5
        while not any(getattr(r, "erp_ai", {}).get("path") == "/nope" for r in caplog.records):
            assert time.monotonic() < deadline
            time.sleep(0.01)
    [record] = [r for r in caplog.records if getattr(r, "erp_ai", {}).get("path") == "/nope"]
    assert record.erp_ai["status"] == 404 and record.erp_ai["kind"] == "not_found"  # type: ignore[attr-defined]
