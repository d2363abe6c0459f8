"""Local servers that speak the Ollama, Gemini and OpenAI-compatible wire protocols, backed by a LangChain
chat model.

They let the real ``ChatOllama``, ``ChatGoogleGenerativeAI`` and ``ChatOpenAI`` clients be exercised end to
end over real loopback sockets, with output caps honoured and fault injection
(:mod:`benchmarks.stand_ins.emulators.faults`), and let a user try those provider paths without the real
service
(``erp-ai emulate ollama|gemini|openai --port N --fault KIND[:COUNT]``).

::

    with start_emulator("ollama") as base_url:            # yields "http://127.0.0.1:<free port>"
        ChatOllama(model="llama3.1:8b", base_url=base_url).invoke("hola")

    with create_emulator("gemini", faults=EmulatorFaults(mode="http_500")) as server:
        server.base_url, server.requests                  # the handle, with its request log

    EmulatorFaults(sequence=[("http_500", 2), ("slow", None)])  # two 500s, then every request slow
    EmulatorFaults.from_specs(["http_500:2", "slow"])         # the same, from ``--fault KIND[:COUNT]``

The backing model defaults to :class:`benchmarks.stand_ins.offline.OfflineSalesModel`.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager, suppress
from typing import Any, Literal

from langchain_core.language_models import BaseChatModel

from benchmarks.stand_ins.emulators._app import EmulatorServer, LoggedRequest, Protocol
from benchmarks.stand_ins.emulators.faults import (
    DELAY_HEADER,
    FAULT_HEADER,
    FAULT_MODES,
    EmulatorFault,
    EmulatorFaults,
    FaultStep,
    parse_fault_spec,
)
from benchmarks.stand_ins.emulators.gemini import GeminiProtocol
from benchmarks.stand_ins.emulators.ollama import OllamaProtocol
from benchmarks.stand_ins.emulators.openai import OpenAIProtocol

__all__ = [
    "DEFAULT_PORTS",
    "DELAY_HEADER",
    "FAULT_HEADER",
    "FAULT_MODES",
    "EmulatorFault",
    "EmulatorFaults",
    "EmulatorKind",
    "EmulatorServer",
    "FaultStep",
    "LoggedRequest",
    "create_emulator",
    "parse_fault_spec",
    "run_emulator",
    "start_emulator",
]

EmulatorKind = Literal["ollama", "gemini", "openai"]
"""Which provider protocol to serve (``openai``: the OpenAI-compatible Chat Completions API)."""

DEFAULT_PORTS: dict[EmulatorKind, int] = {"ollama": 11434, "gemini": 8089, "openai": 8080}
"""Ports ``run_emulator`` uses when none is given (11434 is Ollama's own, 8080 llama.cpp server's)."""


def _protocol(kind: EmulatorKind, model: BaseChatModel | None, api_key: str | None) -> Protocol:
    if kind not in DEFAULT_PORTS:
        raise ValueError(f"Unknown emulator kind {kind!r}; use 'ollama', 'gemini' or 'openai'.")
    if model is None:
        from benchmarks.stand_ins.offline import OfflineSalesModel  # late: heavier to load

        model = OfflineSalesModel()
    if kind == "ollama":
        return OllamaProtocol(model)
    return (GeminiProtocol if kind == "gemini" else OpenAIProtocol)(model, api_key=api_key)


def create_emulator(
    kind: EmulatorKind,
    *,
    model: BaseChatModel | None = None,
    host: str = "127.0.0.1",
    port: int = 0,
    faults: EmulatorFaults | None = None,
    api_key: str | None = None,
) -> EmulatorServer:
    """Build (not start) an emulator bound to ``host:port`` (port 0: a free port).

    ``model`` backs the replies (default: the offline model). ``api_key`` (Gemini and OpenAI) makes the
    server reject any other key; without it Gemini accepts any non-empty ``x-goog-api-key`` and OpenAI any
    bearer key.
    """
    return EmulatorServer(_protocol(kind, model, api_key), host=host, port=port, faults=faults)


@contextmanager
def start_emulator(kind: EmulatorKind, **options: Any) -> Iterator[str]:
    """Run an emulator (``options``: those of :func:`create_emulator`) in a background thread for the
    ``with`` block; yields its base URL."""
    with create_emulator(kind, **options) as server:
        yield server.base_url


def run_emulator(
    kind: EmulatorKind, host: str = "127.0.0.1", port: int | None = None, **options: Any
) -> None:
    """Serve an emulator in the foreground until interrupted (Ctrl-C); for ``erp-ai emulate``."""
    server = create_emulator(kind, host=host, port=DEFAULT_PORTS[kind] if port is None else port, **options)
    with suppress(KeyboardInterrupt):  # uvicorn shuts down gracefully, then re-raises the signal
        server.serve_forever()
