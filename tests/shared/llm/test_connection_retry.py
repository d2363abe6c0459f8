"""A connection that fails before the server answers is retried once, counted, on the real OpenAI client."""

from __future__ import annotations

import asyncio
import json
import socket

import pytest
from langchain_core.language_models import BaseChatModel
from langchain_core.runnables import RunnableConfig

from shared.errors import ProviderError
from shared.llm.factory import build_chat_model
from shared.llm.provider_errors import as_erp_error
from shared.llm.usage import UsageTracker
from tests.shared.llm.provider_fakes import SocketServer, openai_completion

REPLY = openai_completion("Hola", prompt_tokens=7, completion_tokens=1)


def dropping_server(drops: int) -> SocketServer:
    """A server that drops its first ``drops`` connections unanswered, then answers with :data:`REPLY`."""

    def answer(connection: socket.socket, number: int) -> None:
        connection.recv(65536)
        if number > drops:
            body = json.dumps(REPLY).encode()
            head = f"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {len(body)}\r\n"
            connection.sendall(head.encode() + b"Connection: close\r\n\r\n" + body)
        connection.close()

    return SocketServer(answer)


def model_for(server: SocketServer) -> BaseChatModel:
    return build_chat_model("openai", api_key="k", base_url=f"{server.url}/v1", timeout=10)


@pytest.mark.parametrize("client", ["sync", "async"])
def test_a_dropped_connection_is_retried_once_and_counted_on_the_calls_tracker(client: str) -> None:
    with dropping_server(drops=1) as server:
        tracker = UsageTracker()
        model, config = model_for(server), RunnableConfig(callbacks=[tracker])
        reply = (
            model.invoke("hola", config) if client == "sync" else asyncio.run(model.ainvoke("hola", config))
        )

    assert reply.content == "Hola"
    assert server.connections == 2
    assert (tracker.calls, tracker.connection_retries, tracker.input_tokens) == (1, 1, 7)


def test_a_second_dropped_connection_is_a_provider_error_after_exactly_one_retry() -> None:
    with dropping_server(drops=5) as server:
        tracker = UsageTracker()
        with pytest.raises(Exception) as raised:
            model_for(server).invoke("hola", config={"callbacks": [tracker]})

    assert server.connections == 2
    assert tracker.connection_retries == 1
    assert isinstance(as_erp_error(raised.value), ProviderError)


def test_a_proxy_in_the_environment_keeps_the_sdks_own_client(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HTTPS_PROXY", "http://proxy.example:3128")
    model = build_chat_model("openai", api_key="k", base_url="http://127.0.0.1:9/v1")

    assert getattr(model, "http_client", None) is None  # the SDK's default client, which honours the proxy
