"""HTTP plumbing shared by the emulators: a threaded loopback server with real chunked streaming.

``http.server`` is enough here and keeps streaming honest: every chunk is written and flushed on its own, so a
client sees NDJSON lines or SSE events as they are produced. Accepted sockets get ``TCP_NODELAY``; without it
Nagle's algorithm plus delayed ACKs stall each small write by about 40 ms.

A protocol module implements :class:`Protocol.handle`, returning a :class:`JsonReply`, a
:class:`StreamReply` or a :class:`StallReply` (the ``stall`` fault: never answer); the server logs every
request (:class:`LoggedRequest`) for test assertions. A reply marked ``cut`` (the ``stream_break`` fault)
drops the connection partway, as a crashing server or a broken network does: a JSON body stops after half of
its bytes, a chunked stream after its last chunk without the terminating empty chunk, so the client's HTTP
layer sees an incomplete body (httpx: ``RemoteProtocolError``). Protocols cut streamed text into pieces with
:func:`benchmarks.stand_ins.chunks.stream_pieces`, the offline model's rule.
"""

from __future__ import annotations

import json
import select
import socket
import sys
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, TypeVar
from typing import Protocol as TypingProtocol
from urllib.parse import parse_qs, urlsplit

from benchmarks.stand_ins.emulators.faults import EmulatorFaults, FaultDecision, FaultSelector

T = TypeVar("T")

JsonValue = Any
"""A decoded JSON value (dict, list, str, number, bool or None)."""


@dataclass(frozen=True)
class HttpRequest:
    """One decoded request as a protocol module sees it."""

    method: str
    """HTTP method, upper case."""
    path: str
    """URL path without the query string."""
    query: dict[str, list[str]]
    """Parsed query string."""
    headers: dict[str, str]
    """Request headers (original case)."""
    body: JsonValue
    """The decoded JSON body, ``None`` when empty."""
    raw_body: bytes
    """The body as received."""

    def header(self, name: str) -> str | None:
        """Case-insensitive header lookup."""
        wanted = name.lower()
        for key, value in self.headers.items():
            if key.lower() == wanted:
                return value
        return None


@dataclass(frozen=True)
class JsonReply:
    """A JSON response."""

    status: int
    body: JsonValue
    cut: bool = False
    """Drop the connection after the headers (with the full ``Content-Length``) and half of the body."""


@dataclass(frozen=True)
class StreamReply:
    """A streamed response: each item of ``chunks`` is sent (and flushed) as one HTTP chunk."""

    content_type: str
    chunks: Iterable[bytes]
    status: int = 200
    cut: bool = False
    """Drop the connection after the last chunk, without the chunked body's terminating empty chunk."""


@dataclass(frozen=True)
class StallReply:
    """No response: the connection stays open and silent until the client hangs up or the server stops."""


Reply = JsonReply | StreamReply | StallReply


@dataclass
class LoggedRequest:
    """What the server received, kept for assertions in tests."""

    method: str
    path: str
    query: dict[str, list[str]]
    headers: dict[str, str]
    body: JsonValue
    fault: str | None = None
    """The fault applied to this request, if any."""
    received_at: float = field(default_factory=time.monotonic)


class BadRequestError(Exception):
    """The request body is not what the protocol expects; ``status`` and ``body`` form the reply."""

    def __init__(self, status: int, body: JsonValue) -> None:
        super().__init__(str(body))
        self.status = status
        self.body = body


class Protocol(TypingProtocol):
    """A provider wire protocol served by :class:`EmulatorServer`."""

    name: str
    """Short protocol name (``ollama``, ``gemini``)."""

    def handle(self, request: HttpRequest, log: LoggedRequest, faults: FaultSelector) -> Reply:
        """Answer one request; may set ``log.fault``."""
        ...

    def error_reply(self, status: int, message: str) -> JsonReply:
        """The provider's error body for an HTTP error."""
        ...


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False
    allow_reuse_address = True

    def __init__(self, address: tuple[str, int], emulator: EmulatorServer) -> None:
        self.emulator = emulator
        super().__init__(address, _Handler)

    def handle_error(self, request: Any, client_address: Any) -> None:
        """Stay quiet about clients that hang up (timeout tests do that on purpose)."""
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)

    def get_request(self) -> tuple[socket.socket, Any]:
        conn, address = super().get_request()
        conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return conn, address


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        """Silence the default stderr access log."""

    def do_GET(self) -> None:
        self._serve()

    def do_POST(self) -> None:
        self._serve()

    def do_DELETE(self) -> None:
        self._serve()

    def do_HEAD(self) -> None:
        self._write_json(200, None, head_only=True)

    def _serve(self) -> None:
        emulator = self.server.emulator
        split = urlsplit(self.path)
        length = _content_length(self.headers.get("Content-Length"))
        if length is None:  # the body cannot be delimited: answer, then drop the connection
            error = emulator.protocol.error_reply(400, "invalid Content-Length header")
            self.close_connection = True
            self._write_json(error.status, error.body)
            return
        raw = self.rfile.read(length) if length else b""
        headers = {key: value for key, value in self.headers.items()}
        try:
            body: JsonValue = json.loads(raw) if raw.strip() else None
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            error = emulator.protocol.error_reply(400, f"invalid JSON body: {exc}")
            self._write_json(error.status, error.body)
            return
        request = HttpRequest(
            method=self.command,
            path=split.path,
            query=parse_qs(split.query),
            headers=headers,
            body=body,
            raw_body=raw,
        )
        log = LoggedRequest(
            method=self.command, path=split.path, query=request.query, headers=headers, body=body
        )
        emulator.record(log)
        reply: Reply
        try:
            reply = emulator.protocol.handle(request, log, emulator.fault_selector)
        except BadRequestError as exc:
            self._write_json(exc.status, exc.body)
            return
        except Exception as exc:
            # A backing-model failure becomes the provider's 500, as a real server's would.
            reply = emulator.protocol.error_reply(500, f"{type(exc).__name__}: {exc}")
        if isinstance(reply, JsonReply):
            self._write_json(reply.status, reply.body, cut=reply.cut)
        elif isinstance(reply, StallReply):
            self._stall(emulator.stopping)
        else:
            self._write_stream(reply)

    def _stall(self, stopping: threading.Event) -> None:
        """Answer nothing until the client hangs up (its timeout) or the server stops; then drop the line."""
        self.close_connection = True
        connection = self.connection
        while not stopping.wait(0.05):
            try:
                readable, _, _ = select.select([connection], [], [], 0)
                if readable and not connection.recv(1, socket.MSG_PEEK):
                    return  # the client closed its end
            except (OSError, ValueError):  # the socket is gone
                return

    def _write_json(
        self, status: int, body: JsonValue, *, head_only: bool = False, cut: bool = False
    ) -> None:
        data = b"" if body is None else json.dumps(body, ensure_ascii=False).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json; charset=utf-8")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        if cut:  # the stream_break fault: half the promised body, then the connection drops
            data = data[: len(data) // 2]
            self.close_connection = True
        if not head_only:
            try:
                self.wfile.write(data)
                self.wfile.flush()
            except (BrokenPipeError, ConnectionResetError):  # the client gave up (e.g. a timeout test)
                self.close_connection = True

    def _write_stream(self, reply: StreamReply) -> None:
        self.send_response(reply.status)
        self.send_header("Content-Type", reply.content_type)
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        try:
            for chunk in reply.chunks:
                if chunk:
                    self.wfile.write(f"{len(chunk):X}\r\n".encode() + chunk + b"\r\n")
                    self.wfile.flush()
            if reply.cut:  # the stream_break fault: the body never ends, the connection drops
                self.close_connection = True
                return
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):  # the client gave up (e.g. a timeout test)
            self.close_connection = True


def _content_length(header: str | None) -> int | None:
    """The request body's length: 0 without the header, ``None`` when the header is not a length."""
    if header is None:
        return 0
    try:
        length = int(header)
    except ValueError:
        return None
    return length if length >= 0 else None


class EmulatorServer:
    """A protocol emulator listening on loopback in a background thread.

    Use it as a context manager (``with EmulatorServer(protocol) as server: server.base_url``), or call
    :meth:`start` / :meth:`stop`. ``requests`` logs every request received; ``faults`` is the live
    server-wide fault configuration.
    """

    def __init__(
        self,
        protocol: Protocol,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        faults: EmulatorFaults | None = None,
    ) -> None:
        self.protocol = protocol
        self.fault_selector = FaultSelector(faults)
        self._lock = threading.Lock()
        self._requests: list[LoggedRequest] = []
        self.stopping = threading.Event()
        """Set when the server stops: stalled requests give up their connection."""
        self._httpd = _Server((host, port), self)
        self._thread: threading.Thread | None = None

    @property
    def faults(self) -> EmulatorFaults:
        """The server-wide fault configuration (mutable)."""
        return self.fault_selector.faults

    @faults.setter
    def faults(self, value: EmulatorFaults) -> None:
        self.fault_selector.faults = value

    @property
    def host(self) -> str:
        """The bound host."""
        return str(self._httpd.server_address[0])

    @property
    def port(self) -> int:
        """The bound port (the real one when started with port 0)."""
        return int(self._httpd.server_address[1])

    @property
    def base_url(self) -> str:
        """``http://host:port`` without a trailing slash."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"

    @property
    def requests(self) -> list[LoggedRequest]:
        """A snapshot of every request received so far, oldest first."""
        with self._lock:
            return list(self._requests)

    def record(self, request: LoggedRequest) -> None:
        """Append a request to the log (called by the handler)."""
        with self._lock:
            self._requests.append(request)

    def clear_requests(self) -> None:
        """Forget the logged requests."""
        with self._lock:
            self._requests.clear()

    def start(self) -> EmulatorServer:
        """Serve in a daemon thread; returns ``self``."""
        if self._thread is None:
            self.stopping.clear()
            self._thread = threading.Thread(
                target=self._httpd.serve_forever,
                kwargs={"poll_interval": 0.05},
                name=f"{self.protocol.name}-emulator",
                daemon=True,
            )
            self._thread.start()
        return self

    def serve_forever(self) -> None:
        """Serve in the calling thread until interrupted."""
        self.stopping.clear()
        self._httpd.serve_forever(poll_interval=0.2)

    def stop(self) -> None:
        """Stop serving and close the listening socket (stalled requests are released, never waited for)."""
        self.stopping.set()
        if self._thread is not None:
            self._httpd.shutdown()
            self._thread.join(timeout=5)
            self._thread = None
        self._httpd.server_close()

    def __enter__(self) -> EmulatorServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def apply_delay(decision: FaultDecision, sleep: Callable[[float], None] = time.sleep) -> None:
    """Sleep for a ``slow`` fault before anything is sent."""
    if decision.mode == "slow" and decision.delay_seconds > 0:
        sleep(decision.delay_seconds)


def before_break(pieces: Sequence[T]) -> list[T]:
    """What a ``stream_break`` lets through: the first half of ``pieces`` (at least one, if any)."""
    return list(pieces[: max(1, len(pieces) // 2)])
