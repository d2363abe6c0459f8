"""`erp-ai emulate … --fault KIND[:COUNT]`: fault injection from the command line."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from collections.abc import Iterator

import httpx
import pytest
from typer.testing import CliRunner

from benchmarks.cli import app
from benchmarks.stand_ins.emulators import FAULT_MODES

runner = CliRunner()
CHAT = {"model": "llama3.1:8b", "stream": False, "messages": [{"role": "user", "content": "Hola"}]}


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


PROBES = {"ollama": ("/api/version", "/api/chat", CHAT)}
"""Per protocol: a path that is not a model request (to wait on), the chat path and a chat body. One
protocol is enough here (each process takes seconds to start); every protocol has its own tests."""


@pytest.fixture(params=sorted(PROBES))
def emulator_with_one_500(request: pytest.FixtureRequest) -> Iterator[tuple[str, str]]:
    """`erp-ai emulate KIND --fault http_500:1` in its own process; yields its chat URL and kind."""
    kind: str = request.param
    probe, chat_path, _ = PROBES[kind]
    port = _free_port()
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "benchmarks.cli",
            "emulate",
            kind,
            "--port",
            str(port),
            "--fault",
            "http_500:1",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    base_url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 30
        while True:
            if process.poll() is not None:
                raise AssertionError(f"emulate exited early: {process.communicate()[1]}")
            try:
                httpx.get(f"{base_url}{probe}", timeout=1.0)  # not a model request: no fault used up
                break
            except httpx.TransportError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.05)
        yield f"{base_url}{chat_path}", kind
    finally:
        process.terminate()
        process.communicate(timeout=10)


def test_a_counted_fault_fails_only_the_first_model_requests(emulator_with_one_500: tuple[str, str]) -> None:
    url, kind = emulator_with_one_500
    first = httpx.post(url, json=PROBES[kind][2], timeout=10)
    second = httpx.post(url, json=PROBES[kind][2], timeout=10)

    assert first.status_code == 500 and "error" in first.json()
    assert second.status_code == 200


@pytest.mark.parametrize(
    ("specs", "message"),
    [
        (["meteor"], "Unknown emulator fault 'meteor'"),
        (["http_500:0"], "COUNT must be a whole number, 1 or more"),
        (["slow", "http_500:1"], "'slow' has no COUNT"),
    ],
)
def test_an_invalid_fault_spec_exits_2_with_one_clear_error(specs: list[str], message: str) -> None:
    args = ["emulate", "ollama", "--port", "1"]
    for spec in specs:
        args += ["--fault", spec]

    result = runner.invoke(app, args)

    assert result.exit_code == 2
    error = " ".join(result.stderr.split())
    assert error.startswith("Error: --fault:") and message in error
    assert "Traceback" not in result.output


def test_an_unknown_kind_is_told_every_valid_kind() -> None:
    result = runner.invoke(app, ["emulate", "gemini", "--fault", "meteor"])

    assert all(mode in result.stderr for mode in FAULT_MODES)


def test_help_lists_every_fault_kind() -> None:
    result = runner.invoke(app, ["emulate", "--help"], env={"COLUMNS": "200"})

    assert result.exit_code == 0
    assert "--fault" in result.output
    assert all(mode in result.output for mode in FAULT_MODES)
