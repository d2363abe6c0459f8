"""Emulator servers started once per session: backed by a scripted fake model (each test gets them clean) or
by the offline model (what ``erp-ai emulate`` serves)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack

import pytest

from benchmarks.stand_ins.emulators import EmulatorFaults, EmulatorServer, create_emulator
from tests.benchmarks.stand_ins.emulators.emulator_fakes import GEMINI_KEY, scripted_responder
from tests.fakes import FunctionChatModel

KINDS = ("ollama", "gemini", "openai")


@pytest.fixture(scope="session")
def fake_model() -> FunctionChatModel:
    """The model behind the fake-backed servers."""
    return FunctionChatModel(scripted_responder)


@pytest.fixture(scope="session")
def _fake_servers(fake_model: FunctionChatModel) -> Iterator[dict[str, EmulatorServer]]:
    with ExitStack() as stack:
        yield {
            kind: stack.enter_context(
                create_emulator(kind, model=fake_model, api_key=GEMINI_KEY if kind == "gemini" else None)  # type: ignore[arg-type]
            )
            for kind in KINDS
        }


@pytest.fixture(scope="session")
def _offline_servers() -> Iterator[dict[str, EmulatorServer]]:
    with ExitStack() as stack:
        yield {kind: stack.enter_context(create_emulator(kind)) for kind in KINDS}  # type: ignore[arg-type]


def _clean(server: EmulatorServer, model: FunctionChatModel) -> EmulatorServer:
    server.faults = EmulatorFaults()
    server.clear_requests()
    model.calls.clear()
    return server


@pytest.fixture
def ollama_server(_fake_servers: dict[str, EmulatorServer], fake_model: FunctionChatModel) -> EmulatorServer:
    """The Ollama emulator, with no faults, an empty request log and a fresh call record."""
    return _clean(_fake_servers["ollama"], fake_model)


@pytest.fixture
def gemini_server(_fake_servers: dict[str, EmulatorServer], fake_model: FunctionChatModel) -> EmulatorServer:
    """The Gemini emulator (accepting only ``GEMINI_KEY``), clean."""
    return _clean(_fake_servers["gemini"], fake_model)


@pytest.fixture
def openai_server(_fake_servers: dict[str, EmulatorServer], fake_model: FunctionChatModel) -> EmulatorServer:
    """The OpenAI-compatible emulator (any key accepted), clean."""
    return _clean(_fake_servers["openai"], fake_model)


@pytest.fixture
def offline_ollama(_offline_servers: dict[str, EmulatorServer]) -> EmulatorServer:
    """The Ollama emulator backed by the offline model."""
    return _offline_servers["ollama"]


@pytest.fixture
def offline_gemini(_offline_servers: dict[str, EmulatorServer]) -> EmulatorServer:
    """The Gemini emulator backed by the offline model (any API key accepted)."""
    return _offline_servers["gemini"]


@pytest.fixture
def offline_openai(_offline_servers: dict[str, EmulatorServer]) -> EmulatorServer:
    """The OpenAI-compatible emulator backed by the offline model."""
    return _offline_servers["openai"]
