"""Emulator servers started once per session: backed by a scripted fake model (each test gets them clean) or
by the offline model (what ``erp-ai emulate`` serves).

``ollama_server``, ``gemini_server`` and ``openai_server`` are the fake-backed ones (Gemini accepting only
``GEMINI_KEY``), ``fake_server`` each of them in turn; ``offline_ollama``, ``offline_gemini``,
``offline_openai`` and ``offline_server`` the same for the offline-backed ones (any API key accepted).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
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


def _clean(request: pytest.FixtureRequest, servers: str, kind: str) -> EmulatorServer:
    """A session server with no faults and an empty request log (and the fake model's call record emptied)."""
    server: EmulatorServer = request.getfixturevalue(servers)[kind]
    server.faults = EmulatorFaults()
    server.clear_requests()
    if servers == "_fake_servers":
        request.getfixturevalue("fake_model").calls.clear()
    return server


def _server_fixture(servers: str, kind: str) -> Callable[[pytest.FixtureRequest], EmulatorServer]:
    @pytest.fixture
    def server(request: pytest.FixtureRequest) -> EmulatorServer:
        return _clean(request, servers, kind)

    return server  # type: ignore[no-any-return]


ollama_server, gemini_server, openai_server = (_server_fixture("_fake_servers", kind) for kind in KINDS)
offline_ollama, offline_gemini, offline_openai = (_server_fixture("_offline_servers", kind) for kind in KINDS)


@pytest.fixture(params=KINDS)
def fake_server(request: pytest.FixtureRequest) -> EmulatorServer:
    return _clean(request, "_fake_servers", request.param)


@pytest.fixture(params=KINDS)
def offline_server(request: pytest.FixtureRequest) -> EmulatorServer:
    return _clean(request, "_offline_servers", request.param)
