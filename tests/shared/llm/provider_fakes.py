"""Loopback servers that drive the real provider clients over real sockets, and OpenAI completion payloads."""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from langchain_core.language_models import BaseChatModel

from shared.llm.factory import build_chat_model

Reply = Callable[[str, dict[str, Any]], tuple[int, str, bytes]]
"""``(path, json_body) -> (status, content_type, body)``."""


@dataclass
class Request:
    """One request a :class:`ReplyServer` received."""

    path: str
    body: dict[str, Any] = field(default_factory=dict)


def openai_completion(
    content: str, *, finish_reason: str = "stop", prompt_tokens: int = 11, completion_tokens: int = 7
) -> dict[str, Any]:
    """A ``/v1/chat/completions`` response body with one choice and its usage."""
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 1_700_000_000,
        "model": "local",
        "choices": [
            {"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": finish_reason}
        ],
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        },
    }


def length_error(content: str, *, prompt_tokens: int, completion_tokens: int) -> Exception:
    """``openai.LengthFinishReasonError`` around a real ``ChatCompletion`` cut at the output cap."""
    from openai import LengthFinishReasonError
    from openai.types.chat import ChatCompletion

    completion = ChatCompletion.model_validate(
        openai_completion(
            content, finish_reason="length", prompt_tokens=prompt_tokens, completion_tokens=completion_tokens
        )
    )
    return LengthFinishReasonError(completion=completion)


def json_reply(payload: Any, status: int = 200) -> tuple[int, str, bytes]:
    """A JSON response for a :data:`Reply` function."""
    return status, "application/json", json.dumps(payload).encode()


class ReplyServer:
    """A threaded HTTP server on 127.0.0.1 answering every POST with ``reply``; a context manager."""

    def __init__(self, reply: Reply) -> None:
        self.requests: list[Request] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                body = json.loads(raw) if raw else {}
                server.requests.append(Request(self.path, body))
                status, content_type, payload = reply(self.path, body)
                self.send_response(status)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host!s}:{port}"

    def __enter__(self) -> ReplyServer:
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=5)


class SocketServer:
    """Accepts TCP connections on 127.0.0.1 and hands each, with its number (from 1), to ``answer``; by
    default it never sends a byte back. Use as a context manager."""

    def __init__(self, answer: Callable[[socket.socket, int], None] | None = None) -> None:
        self._answer = answer
        self._listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._listener.bind(("127.0.0.1", 0))
        self._listener.listen(16)
        self._listener.settimeout(0.1)  # accept() wakes up to see the stop flag
        self._accepted: list[socket.socket] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._accept, daemon=True)

    @property
    def url(self) -> str:
        host, port = self._listener.getsockname()[:2]
        return f"http://{host}:{port}"

    def _accept(self) -> None:
        while not self._stop.is_set():
            try:
                connection, _ = self._listener.accept()
            except (TimeoutError, OSError):
                continue
            self._accepted.append(connection)
            if self._answer is not None:
                connection.settimeout(None)
                self._answer(connection, len(self._accepted))

    @property
    def connections(self) -> int:
        """How many connections were accepted."""
        return len(self._accepted)

    def __enter__(self) -> SocketServer:
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._stop.set()
        self._thread.join(timeout=5)
        for connection in self._accepted:
            connection.close()
        self._listener.close()


def network_model(kind: str, base_url: str, **options: Any) -> BaseChatModel:
    """The real client of provider ``kind`` (``ollama``, ``gemini`` or ``openai``) against ``base_url``."""
    if kind == "ollama":
        return build_chat_model("ollama", base_url=base_url, **options)
    return build_chat_model(
        kind, api_key="k", base_url=f"{base_url}/v1" if kind == "openai" else base_url, **options
    )
