"""Local servers that speak the Ollama, Gemini and OpenAI-compatible wire protocols, backed by a LangChain
chat model (default: the offline model), for the real ``ChatOllama``, ``ChatGoogleGenerativeAI`` and
``ChatOpenAI`` clients over real sockets, with output caps and faults (:mod:`.faults`); ``erp-ai emulate``
serves one.

::

    with start_emulator("ollama") as base_url:            # "http://127.0.0.1:<free port>"
        ChatOllama(model="llama3.1:8b", base_url=base_url).invoke("hola")

    with create_emulator("gemini", faults=EmulatorFaults(mode="http_500")) as server:
        server.base_url, server.requests                  # the handle, with its request log
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager, suppress
from typing import Any, Literal

from langchain_core.language_models import BaseChatModel

from benchmarks.stand_ins.emulators._app import EmulatorServer, Protocol
from benchmarks.stand_ins.emulators.faults import DELAY_HEADER, FAULT_HEADER, FAULT_MODES, EmulatorFaults
from benchmarks.stand_ins.emulators.gemini import GeminiProtocol
from benchmarks.stand_ins.emulators.ollama import OllamaProtocol
from benchmarks.stand_ins.emulators.openai import OpenAIProtocol

__all__ = [
    "DEFAULT_PORTS",
    "DELAY_HEADER",
    "FAULT_HEADER",
    "FAULT_MODES",
    "EmulatorFaults",
    "EmulatorKind",
    "EmulatorServer",
    "create_emulator",
    "run_emulator",
    "start_emulator",
]

EmulatorKind = Literal["ollama", "gemini", "openai"]
"""Which provider protocol to serve (``openai``: the OpenAI-compatible Chat Completions API)."""

DEFAULT_PORTS: dict[EmulatorKind, int] = {"ollama": 11434, "gemini": 8089, "openai": 8080}
"""``run_emulator``'s ports (11434 is Ollama's own, 8080 llama.cpp server's)."""


def create_emulator(
    kind: EmulatorKind,
    *,
    model: BaseChatModel | None = None,
    host: str = "127.0.0.1",
    port: int = 0,
    faults: EmulatorFaults | None = None,
    api_key: str | None = None,
) -> EmulatorServer:
    """An emulator bound to ``host:port`` (port 0: a free one), not started yet.

    ``model`` backs the replies (default: the offline model). ``api_key`` (Gemini and OpenAI) makes the
    server refuse any other key; without it Gemini takes any non-empty key and OpenAI any bearer key.
    """
    if kind not in DEFAULT_PORTS:
        raise ValueError(f"Unknown emulator kind {kind!r}; use 'ollama', 'gemini' or 'openai'.")
    if model is None:
        from benchmarks.stand_ins.offline import OfflineSalesModel  # late: heavier to load

        model = OfflineSalesModel()
    protocol: Protocol = OllamaProtocol(model)
    if kind != "ollama":
        protocol = (GeminiProtocol if kind == "gemini" else OpenAIProtocol)(model, api_key=api_key)
    return EmulatorServer(protocol, host=host, port=port, faults=faults)


@contextmanager
def start_emulator(kind: EmulatorKind, **options: Any) -> Iterator[str]:
    """Serve an emulator (``options``: :func:`create_emulator`'s) for the ``with`` block; yields its URL."""
    with create_emulator(kind, **options) as server:
        yield server.base_url


def run_emulator(
    kind: EmulatorKind, host: str = "127.0.0.1", port: int | None = None, **options: Any
) -> None:
    """Serve an emulator in the foreground until interrupted (Ctrl-C); for ``erp-ai emulate``."""
    server = create_emulator(kind, host=host, port=DEFAULT_PORTS[kind] if port is None else port, **options)
    with suppress(KeyboardInterrupt):  # uvicorn shuts down gracefully, then re-raises the signal
        server.serve_forever()
