"""Slow clients over real sockets: a request's head must arrive within the read timeout or the connection is
closed (:class:`~planner_mode.server.protocol.HeadTimeoutH11Protocol`), its body too or it is a 408
(:class:`~planner_mode.server.limits.BodyReadTimeout`), and requests sent in time are answered as usual.

The timeout is short here (half a second) so that the tests end soon; nothing asserts how soon: a connection
the server never closed would fail a test at its socket's generous timeout instead.
"""

from __future__ import annotations

import asyncio
import json
import select
import socket
import time
from collections.abc import Iterator
from datetime import date

import httpx
import pytest
from starlette.types import Receive, Scope, Send

from benchmarks.serving import ServerThread
from benchmarks.stand_ins import build_model
from planner_mode.server import create_app
from planner_mode.server.limits import READ_TIMEOUT_ENV
from planner_mode.server.protocol import HeadTimeoutH11Protocol
from shared.memory.context import ConversationContext
from shared.operations.sales import sales_registry
from shared.security import DEMO_CALLER

READ_TIMEOUT_S = 0.5
NEVER_S = 60.0
"""A socket's timeout: what a server that never closes the connection would cost the failing test."""
HEAD = b"POST /ai/analyze HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"


@pytest.fixture
def read_timeout(monkeypatch: pytest.MonkeyPatch) -> float:
    monkeypatch.setenv(READ_TIMEOUT_ENV, str(READ_TIMEOUT_S))  # the protocol reads it per connection
    return READ_TIMEOUT_S


@pytest.fixture
def server(read_timeout: float) -> Iterator[ServerThread]:
    app = create_app(build_model("offline"), read_timeout_s=read_timeout)
    with ServerThread(app, http=HeadTimeoutH11Protocol) as running:
        yield running


def connect(server: ServerThread) -> socket.socket:
    return socket.create_connection(("127.0.0.1", server.port), timeout=NEVER_S)


def read_until_closed(sock: socket.socket) -> bytes:
    """Everything the server sends until it closes the connection (a reset counts as closed)."""
    received = b""
    try:
        while chunk := sock.recv(65536):
            received += chunk
    except ConnectionResetError:
        pass
    return received


def read_one_response(sock: socket.socket) -> bytes:
    """One whole response with a ``Content-Length`` body, leaving the connection open."""
    received = b""
    while b"\r\n\r\n" not in received:
        received += sock.recv(65536)
    head, _, body = received.partition(b"\r\n\r\n")
    fields = dict(line.lower().split(b": ", 1) for line in head.split(b"\r\n")[1:])
    length = int(fields[b"content-length"])
    while len(body) < length:
        body += sock.recv(65536)
    return head


def test_a_request_head_sent_a_byte_at_a_time_is_cut_off_without_an_answer(server: ServerThread) -> None:
    padding = b"X-Padding: " + b"a" * 4000  # under the 16 KiB a head may take: only its time is refused
    with connect(server) as sock:
        for byte in HEAD + padding:
            try:
                sock.sendall(bytes([byte]))
            except (BrokenPipeError, ConnectionResetError):
                break
            if select.select([sock], [], [], 0)[0]:  # the server said something, or closed
                break
            time.sleep(0.01)
        assert read_until_closed(sock) == b""


def test_a_connection_that_sends_nothing_is_closed(server: ServerThread) -> None:
    with connect(server) as sock:
        assert read_until_closed(sock) == b""


def test_a_body_that_stops_halfway_is_a_408_and_the_connection_is_closed(server: ServerThread) -> None:
    with connect(server) as sock:
        sock.sendall(HEAD + b"Content-Length: 100\r\n\r\n" + b'{"message": "hola"')
        response = read_until_closed(sock)

    head, _, body = response.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 408")
    assert b"connection: close" in head.lower()
    assert json.loads(body)["kind"] == "request_timeout"


def test_a_late_head_after_a_response_is_cut_off_too(server: ServerThread) -> None:
    with connect(server) as sock:
        sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        assert read_one_response(sock).startswith(b"HTTP/1.1 200")
        sock.sendall(b"GET /healthz HTTP/1.1\r\n")  # the next request's head, never finished
        assert read_until_closed(sock) == b""


def test_requests_sent_in_time_are_answered_on_one_connection(server: ServerThread) -> None:
    catalog = [spec.model_dump() for spec in sales_registry().catalog(DEMO_CALLER)]
    context = ConversationContext(hoy=date(2026, 11, 30)).model_dump(mode="json")
    body = {"message": "¿Cuánto vendimos en 2025?", "context": context, "catalog": catalog}
    with httpx.Client(base_url=server.url, timeout=NEVER_S) as client:
        first = client.post("/ai/analyze", json=body)
        second = client.post("/ai/analyze", json=body)

    assert first.status_code == second.status_code == 200
    assert first.json()["plan"] == second.json()["plan"]


async def slow_answer(scope: Scope, receive: Receive, send: Send) -> None:
    """An ASGI app that reads the request, then takes three read timeouts to answer."""
    if scope["type"] != "http":
        return
    await receive()
    await asyncio.sleep(3 * READ_TIMEOUT_S)
    await send({"type": "http.response.start", "status": 200, "headers": [(b"content-length", b"2")]})
    await send({"type": "http.response.body", "body": b"ok"})


def test_an_answer_that_takes_longer_than_the_read_timeout_is_not_cut_off(read_timeout: float) -> None:
    with (
        ServerThread(slow_answer, http=HeadTimeoutH11Protocol) as slow,  # type: ignore[arg-type]
        httpx.Client(base_url=slow.url, timeout=NEVER_S) as client,
    ):
        assert client.get("/").text == "ok"
