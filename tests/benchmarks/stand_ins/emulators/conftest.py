"""Emulator servers started once per session, backed by a scripted fake model; each test gets them clean."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from benchmarks.stand_ins.emulators import EmulatorFaults, EmulatorServer, create_emulator
from tests.benchmarks.stand_ins.emulators.emulator_fakes import GEMINI_KEY, scripted_responder
from tests.fakes import FunctionChatModel


@pytest.fixture(scope="session")
def fake_model() -> FunctionChatModel:
    """The model behind both session servers."""
    return FunctionChatModel(scripted_responder)


@pytest.fixture(scope="session")
def _ollama_server(fake_model: FunctionChatModel) -> Iterator[EmulatorServer]:
    with create_emulator("ollama", model=fake_model) as server:
        yield server


@pytest.fixture(scope="session")
def _gemini_server(fake_model: FunctionChatModel) -> Iterator[EmulatorServer]:
    with create_emulator("gemini", model=fake_model, api_key=GEMINI_KEY) as server:
        yield server


def _clean(server: EmulatorServer, model: FunctionChatModel) -> None:
    server.faults = EmulatorFaults()
    server.clear_requests()
    model.calls.clear()


@pytest.fixture(scope="session")
def _openai_server(fake_model: FunctionChatModel) -> Iterator[EmulatorServer]:
    with create_emulator("openai", model=fake_model) as server:
        yield server


@pytest.fixture
def ollama_server(_ollama_server: EmulatorServer, fake_model: FunctionChatModel) -> Iterator[EmulatorServer]:
    """The Ollama emulator, with no faults, an empty request log and a fresh call record."""
    _clean(_ollama_server, fake_model)
    yield _ollama_server
    _clean(_ollama_server, fake_model)


@pytest.fixture
def gemini_server(_gemini_server: EmulatorServer, fake_model: FunctionChatModel) -> Iterator[EmulatorServer]:
    """The Gemini emulator (accepting only ``GEMINI_KEY``), clean."""
    _clean(_gemini_server, fake_model)
    yield _gemini_server
    _clean(_gemini_server, fake_model)


@pytest.fixture(scope="session")
def offline_ollama() -> Iterator[EmulatorServer]:
    """An Ollama emulator backed by the offline model (what ``erp-ai emulate ollama`` serves)."""
    with create_emulator("ollama") as server:
        yield server


@pytest.fixture(scope="session")
def offline_gemini() -> Iterator[EmulatorServer]:
    """A Gemini emulator backed by the offline model (any API key accepted)."""
    with create_emulator("gemini") as server:
        yield server


@pytest.fixture
def openai_server(_openai_server: EmulatorServer, fake_model: FunctionChatModel) -> Iterator[EmulatorServer]:
    """The OpenAI-compatible emulator (any key accepted), clean."""
    _clean(_openai_server, fake_model)
    yield _openai_server
    _clean(_openai_server, fake_model)


@pytest.fixture(scope="session")
def offline_openai() -> Iterator[EmulatorServer]:
    """An OpenAI-compatible emulator backed by the offline model."""
    with create_emulator("openai") as server:
        yield server
