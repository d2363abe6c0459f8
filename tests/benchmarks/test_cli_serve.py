"""`erp-ai serve` refuses a port in use before uvicorn starts, and starts uvicorn with bounds for slow clients
(``uvicorn.run`` is replaced: nothing listens in these tests unless a test binds a port itself). Options out
of range are refused by the parser (``test_cli_hardening.py``)."""

from __future__ import annotations

import os
import socket
from collections.abc import Iterator
from typing import Any

import pytest
from typer.testing import CliRunner

import benchmarks.cli.servers as servers
from benchmarks.cli.app import app
from benchmarks.loadtest_fleet import free_port
from benchmarks.modes import ModelOptions
from planner_mode.server.limits import DEFAULT_READ_TIMEOUT_S, READ_TIMEOUT_ENV, read_timeout_from_env
from planner_mode.server.protocol import HeadTimeoutH11Protocol

runner = CliRunner()

SERVE_SETTINGS = (*ModelOptions().environment(), servers.SERVER_TOKEN_ENV, READ_TIMEOUT_ENV)
"""What ``serve`` writes into the environment for its workers."""


@pytest.fixture
def uvicorn_runs(monkeypatch: pytest.MonkeyPatch) -> list[dict[str, Any]]:
    """The keyword arguments of every ``uvicorn.run`` call (none is started)."""
    import uvicorn

    calls: list[dict[str, Any]] = []
    monkeypatch.setattr(uvicorn, "run", lambda *args, **kwargs: calls.append(kwargs))
    for name in SERVE_SETTINGS:  # serve writes its settings into the environment: undo that afterwards
        monkeypatch.setenv(name, "")
        monkeypatch.delenv(name)
    return calls


@pytest.fixture
def busy_port() -> Iterator[int]:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        yield int(sock.getsockname()[1])


def test_a_port_in_use_is_one_line_and_exit_2_before_uvicorn_starts(
    busy_port: int, uvicorn_runs: list[dict[str, Any]]
) -> None:
    result = runner.invoke(app, ["serve", "--port", str(busy_port)])

    assert result.exit_code == 2
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and f"port {busy_port}" in lines[0] and "already in use" in lines[0], lines
    assert uvicorn_runs == []


@pytest.fixture
def port() -> int:
    return free_port()


def test_a_free_port_starts_uvicorn_with_bounds_for_slow_clients(
    port: int, uvicorn_runs: list[dict[str, Any]]
) -> None:
    result = runner.invoke(app, ["serve", "--port", str(port), "--workers", "2"])

    assert result.exit_code == 0, result.output
    [options] = uvicorn_runs
    assert options["port"] == port and options["workers"] == 2
    assert options["timeout_keep_alive"] == servers.SERVE_KEEP_ALIVE_S
    assert options["h11_max_incomplete_event_size"] == servers.SERVE_MAX_HEADER_BYTES
    assert options["limit_concurrency"] == servers.SERVE_MAX_CONCURRENCY
    assert options["timeout_graceful_shutdown"] == servers.SERVE_SHUTDOWN_S
    assert options["http"] is HeadTimeoutH11Protocol
    assert os.environ[READ_TIMEOUT_ENV] == f"{DEFAULT_READ_TIMEOUT_S:g}"


def test_the_read_timeout_reaches_every_worker_through_the_environment(
    port: int, uvicorn_runs: list[dict[str, Any]]
) -> None:
    result = runner.invoke(app, ["serve", "--port", str(port), "--read-timeout", "2.5"])

    assert result.exit_code == 0, result.output
    assert os.environ[READ_TIMEOUT_ENV] == "2.5"  # what the protocol and app_from_env read
    assert read_timeout_from_env() == 2.5


def test_serve_warns_when_it_binds_beyond_loopback_without_a_token(
    port: int, uvicorn_runs: list[dict[str, Any]]
) -> None:
    exposed = runner.invoke(app, ["serve", "--host", "0.0.0.0", "--port", str(port)])
    local = runner.invoke(app, ["serve", "--host", "127.0.0.1", "--port", str(port)])

    assert exposed.exit_code == local.exit_code == 0
    assert "Warning" in exposed.output and "Warning" not in local.output
    assert len(uvicorn_runs) == 2
