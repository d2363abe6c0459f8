"""Run real uvicorn servers on loopback in background threads: for the reliability matrix and HTTP tests."""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from types import TracebackType

import uvicorn
from fastapi import FastAPI


class ServerThread:
    """A uvicorn server for ``app`` on ``127.0.0.1:port`` (port 0 picks a free one); ``stop()`` ends it.

    ``http`` is uvicorn's HTTP protocol (e.g. :class:`planner_mode.server.protocol.HeadTimeoutH11Protocol`,
    as ``erp-ai serve`` runs it)."""

    def __init__(self, app: FastAPI, port: int = 0, *, http: type[asyncio.Protocol] | str = "auto") -> None:
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", port))
        self.port: int = self.sock.getsockname()[1]
        config = uvicorn.Config(
            app, http=http, log_level="warning", lifespan="off", timeout_graceful_shutdown=1
        )
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, kwargs={"sockets": [self.sock]}, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> ServerThread:
        self.thread.start()
        deadline = time.monotonic() + 30
        while not self.server.started:
            if not self.thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError("uvicorn did not start")
            time.sleep(0.01)
        return self

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=30)
        self.sock.close()

    def __enter__(self) -> ServerThread:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()
