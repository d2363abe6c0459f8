"""The shared server plumbing: socket options, request log, error replies, streaming helpers."""

from __future__ import annotations

import socket

import httpx
import pytest

from benchmarks.stand_ins.emulators import EmulatorServer, create_emulator
from benchmarks.stand_ins.emulators._app import before_break
from tests.fakes import FunctionChatModel


def test_accepted_sockets_have_tcp_nodelay(fake_model: FunctionChatModel) -> None:
    with (
        create_emulator("ollama", model=fake_model) as server,
        socket.create_connection((server.host, server.port)) as client,
    ):
        client.sendall(b"GET /api/version HTTP/1.1\r\nHost: x\r\n\r\n")
        assert client.recv(4096).startswith(b"HTTP/1.1 200")
        (connection,) = server._uvicorn.server_state.connections
        accepted = connection.transport.get_extra_info("socket")  # type: ignore[union-attr]
        assert accepted.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) != 0


def test_base_url_uses_the_bound_free_port(ollama_server: EmulatorServer) -> None:
    assert ollama_server.port > 0
    assert ollama_server.base_url == f"http://127.0.0.1:{ollama_server.port}"


def test_every_request_is_logged_with_its_decoded_body(ollama_server: EmulatorServer) -> None:
    httpx.post(f"{ollama_server.base_url}/api/show", json={"model": "llama3.1:8b"})
    httpx.get(f"{ollama_server.base_url}/api/version")

    logged = ollama_server.requests
    assert [(r.method, r.path) for r in logged] == [("POST", "/api/show"), ("GET", "/api/version")]
    assert logged[0].body == {"model": "llama3.1:8b"}
    assert logged[0].fault is None


def test_invalid_json_gets_the_protocols_error_body(
    ollama_server: EmulatorServer, gemini_server: EmulatorServer
) -> None:
    ollama_reply = httpx.post(f"{ollama_server.base_url}/api/chat", content=b"{not json")
    gemini_reply = httpx.post(
        f"{gemini_server.base_url}/v1beta/models/m:generateContent", content=b"{not json"
    )

    assert ollama_reply.status_code == 400 and "invalid JSON body" in ollama_reply.json()["error"]
    assert gemini_reply.status_code == 400 and gemini_reply.json()["error"]["status"] == "INVALID_ARGUMENT"


@pytest.mark.parametrize("length", ["-5", "many"])
def test_an_invalid_content_length_gets_a_400_instead_of_a_hang(
    ollama_server: EmulatorServer, length: str
) -> None:
    request = f"POST /api/chat HTTP/1.1\r\nHost: x\r\nContent-Length: {length}\r\n\r\n{{}}".encode()
    with socket.create_connection((ollama_server.host, ollama_server.port), timeout=5) as client:
        client.sendall(request)
        reply = b""
        while chunk := client.recv(4096):  # the server closes the connection after its reply
            reply += chunk

    assert reply.startswith(b"HTTP/1.1 400")


def test_unknown_paths_are_404(ollama_server: EmulatorServer) -> None:
    assert httpx.get(f"{ollama_server.base_url}/api/nothing").status_code == 404


def test_a_stream_break_lets_the_first_half_through_and_at_least_one_piece() -> None:
    assert before_break(["a", "b", "c", "d", "e"]) == ["a", "b"]
    assert before_break(["a"]) == ["a"]
    assert before_break([]) == []
