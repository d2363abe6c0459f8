"""A connection that fails before the server answers is retried once, counted, on the real OpenAI client."""

from __future__ import annotations

import asyncio
import json
import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from shared.errors import ProviderError
from shared.llm.factory import build_chat_model
from shared.llm.provider_errors import as_erp_error
from shared.llm.usage import UsageTracker
from tests.shared.llm.provider_fakes import openai_completion

REPLY = openai_completion("Hola", prompt_tokens=7, completion_tokens=1)


@contextmanager
def dropping_server(drops: int) -> Iterator[dict[str, int]]:
    """A server that drops its first ``drops`` connections unanswered; yields its port and counts."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    listener.settimeout(0.1)  # accept() wakes up to see the stop flag (closing the socket would not wake it)
    seen = {"port": listener.getsockname()[1], "connections": 0}
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                connection, _ = listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            connection.settimeout(None)
            with connection:
                seen["connections"] += 1
                connection.recv(65536)
                if seen["connections"] <= drops:
                    continue  # closed without a response
                body = json.dumps(REPLY).encode()
                head = f"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {len(body)}\r\n"
                connection.sendall(head.encode() + b"Connection: close\r\n\r\n" + body)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield seen
    finally:
        stop.set()
        listener.close()
        thread.join(timeout=5)


def model_for(port: int):  # type: ignore[no-untyped-def]
    return build_chat_model("openai", api_key="k", base_url=f"http://127.0.0.1:{port}/v1", timeout=10)


def test_a_dropped_connection_is_retried_once_and_counted_on_the_calls_tracker() -> None:
    with dropping_server(drops=1) as seen:
        tracker = UsageTracker()
        reply = model_for(seen["port"]).invoke("hola", config={"callbacks": [tracker]})

    assert reply.content == "Hola"
    assert seen["connections"] == 2
    assert (tracker.calls, tracker.connection_retries, tracker.input_tokens) == (1, 1, 7)


def test_the_async_client_retries_the_same_way() -> None:
    async def ask() -> tuple[str, UsageTracker]:
        tracker = UsageTracker()
        reply = await model_for(seen["port"]).ainvoke("hola", config={"callbacks": [tracker]})
        return str(reply.content), tracker

    with dropping_server(drops=1) as seen:
        text, tracker = asyncio.run(ask())

    assert text == "Hola"
    assert (tracker.calls, tracker.connection_retries) == (1, 1)


def test_a_second_dropped_connection_is_a_provider_error_after_exactly_one_retry() -> None:
    with dropping_server(drops=5) as seen:
        tracker = UsageTracker()
        with pytest.raises(Exception) as raised:
            model_for(seen["port"]).invoke("hola", config={"callbacks": [tracker]})

    assert seen["connections"] == 2
    assert tracker.connection_retries == 1
    assert isinstance(as_erp_error(raised.value), ProviderError)


def test_a_proxy_in_the_environment_keeps_the_sdks_own_client(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HTTPS_PROXY", "http://proxy.example:3128")
    model = build_chat_model("openai", api_key="k", base_url="http://127.0.0.1:9/v1")

    assert getattr(model, "http_client", None) is None  # the SDK's default client, which honours the proxy
