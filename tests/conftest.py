"""Session-wide test fixtures and the network guard.

Like pydantic-ai's ``tests/conftest.py``, the whole session refuses to open a socket to anything but loopback:
an accidental call to a real model provider fails loudly instead of hanging or leaking.
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest_plugins = ("tests.postgres",)
"""The PostgreSQL fixtures (``db_url``, ``postgres_url``, …) for every test directory."""

_real_connect = socket.socket.connect
_real_connect_ex = socket.socket.connect_ex
_real_getaddrinfo = socket.getaddrinfo


class NetworkAccessError(RuntimeError):
    """Raised when a test tries to reach a non-loopback host."""


def _is_loopback(host: Any) -> bool:
    if host in ("localhost", "", None):
        return True
    try:
        return ipaddress.ip_address(str(host).split("%")[0]).is_loopback
    except ValueError:
        return False


def _check(address: Any) -> None:
    if isinstance(address, tuple) and address and not _is_loopback(address[0]):
        raise NetworkAccessError(f"tests may only connect to loopback, not {address!r}")


def _guarded_connect(self: socket.socket, address: Any) -> None:
    _check(address)
    return _real_connect(self, address)


def _guarded_connect_ex(self: socket.socket, address: Any) -> int:
    _check(address)
    return _real_connect_ex(self, address)


def _guarded_getaddrinfo(host: Any, *args: Any, **kwargs: Any) -> Any:
    if isinstance(host, bytes):
        host = host.decode()
    if not _is_loopback(host):
        raise NetworkAccessError(f"tests may only resolve loopback hosts, not {host!r}")
    return _real_getaddrinfo(host, *args, **kwargs)


def pytest_sessionstart(session: pytest.Session) -> None:
    socket.socket.connect = _guarded_connect  # type: ignore[method-assign]
    socket.socket.connect_ex = _guarded_connect_ex  # type: ignore[method-assign]
    socket.getaddrinfo = _guarded_getaddrinfo


@pytest.fixture(scope="session")
def erp_db_url(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A seeded demo ERP in a SQLite file, shared read-only by the whole session."""
    path: Path = tmp_path_factory.mktemp("erp") / "erp.sqlite3"
    return f"sqlite:///{path}"


@pytest.fixture(scope="session")
def erp(erp_db_url: str) -> Iterator[Any]:
    """The seeded demo ERP (``shared.erp.database.Erp``). Treat as read-only."""
    from shared.erp.database import open_demo_erp

    handle = open_demo_erp(erp_db_url)
    yield handle
    handle.engine.dispose()


@pytest.fixture(scope="session")
def registry() -> Any:
    """The sales operation registry."""
    from shared.operations.sales import sales_registry

    return sales_registry()


@pytest.fixture
def memory_store(tmp_path: Path) -> Iterator[Any]:
    """A fresh conversation memory store in its own SQLite file."""
    from shared.memory.store import MemoryStore

    store = MemoryStore(f"sqlite:///{tmp_path / 'memory.sqlite3'}")
    yield store
    store.close()
