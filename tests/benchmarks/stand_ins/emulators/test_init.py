"""The package's public face: ``create_emulator``, ``start_emulator``, ``run_emulator``."""

from __future__ import annotations

import threading
import time

import httpx
import pytest

import benchmarks.stand_ins.emulators as emulators
from benchmarks.stand_ins.emulators import EmulatorFaults, create_emulator, run_emulator, start_emulator
from benchmarks.stand_ins.offline import OfflineSalesModel
from tests.fakes import FunctionChatModel


@pytest.mark.parametrize(("kind", "probe"), [("ollama", "/api/version"), ("gemini", "/v1beta/models?key=k")])
def test_start_emulator_yields_a_live_base_url_and_stops_after(
    kind: str, probe: str, fake_model: FunctionChatModel
) -> None:
    with start_emulator(kind, model=fake_model) as base_url:  # type: ignore[arg-type]
        assert base_url.startswith("http://127.0.0.1:")
        assert httpx.get(base_url + probe).status_code == 200
    with pytest.raises(httpx.ConnectError):
        httpx.get(base_url + probe)


def test_create_emulator_takes_faults(fake_model: FunctionChatModel) -> None:
    with create_emulator("ollama", model=fake_model, faults=EmulatorFaults(mode="http_500")) as server:
        reply = httpx.post(
            f"{server.base_url}/api/chat",
            json={"model": "m", "messages": [{"role": "user", "content": "hola"}]},
        )
    assert reply.status_code == 500
    assert "error" in reply.json()


def test_unknown_kind_is_refused() -> None:
    with pytest.raises(ValueError, match="Unknown emulator kind"):
        create_emulator("anthropic")  # type: ignore[arg-type]


def test_run_emulator_serves_in_the_foreground_until_interrupted(
    monkeypatch: pytest.MonkeyPatch, fake_model: FunctionChatModel
) -> None:
    servers: list[emulators.EmulatorServer] = []
    real_create = emulators.create_emulator

    def spying_create(*args: object, **kwargs: object) -> emulators.EmulatorServer:
        server = real_create(*args, **kwargs)  # type: ignore[arg-type]
        servers.append(server)
        return server

    monkeypatch.setattr(emulators, "create_emulator", spying_create)
    thread = threading.Thread(
        target=run_emulator,
        args=("ollama", "127.0.0.1", 0),
        kwargs={"model": fake_model},
    )
    thread.start()
    try:
        for _ in range(200):  # wait (bounded) for the server object to exist
            if servers:
                break
            time.sleep(0.01)
        assert httpx.get(f"{servers[0].base_url}/api/version").status_code == 200
    finally:
        servers[0].stop()
        thread.join(timeout=5)
    assert not thread.is_alive()


def test_the_default_backing_model_is_the_offline_model() -> None:
    server = create_emulator("ollama")
    try:
        assert isinstance(server.protocol.model, OfflineSalesModel)
    finally:
        server.stop()
