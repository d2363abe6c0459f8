"""A fleet of stateless AI servers on loopback ports, for ``erp-ai loadtest``: start, kill, restart, stop.

Each server is its own process listening on ``127.0.0.1`` only. :func:`serve_command` runs ``erp-ai serve``
exactly as an operator would; :func:`forked_server` forks each server from a ``forkserver`` process that
has imported the AI server once, so a (re)start takes a fraction of a second (the tests use it).
:meth:`Fleet.kill` is ``SIGKILL``: the process dies mid-request, as in a crash, without a graceful shutdown;
:meth:`Fleet.restart` starts a new process on the same port, so the clients' URL list stays valid.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from types import TracebackType
from typing import Any, Protocol

import httpx

from benchmarks.modes import ModelOptions, set_environment

HOST = "127.0.0.1"
"""Every server of a fleet listens here, and only here."""
DEFAULT_STARTUP_TIMEOUT_S = 90.0
"""How long a server may take to answer ``/healthz`` after its start."""
_STOP_GRACE_S = 5.0


class FleetError(RuntimeError):
    """A server of the fleet did not start; the message carries the end of its log."""


ServeOptions = ModelOptions
"""The ``erp-ai serve`` options of the model behind every server of a fleet."""


class ServerProcess(Protocol):
    """A started server process, as :class:`subprocess.Popen` and :class:`multiprocessing.Process` are."""

    @property
    def pid(self) -> int | None: ...

    def kill(self) -> None: ...

    def terminate(self) -> None: ...


Launcher = Callable[[int, Path], ServerProcess]
"""Starts one server on ``127.0.0.1:port``, its output going to the log file at the given path."""


def serve_command(options: ServeOptions, workers: int = 1) -> Launcher:
    """A launcher running ``erp-ai serve --host 127.0.0.1 --port PORT`` with ``options`` in a new process."""

    def launch(port: int, log: Path) -> ServerProcess:
        command = [sys.executable, "-m", "benchmarks.cli", "serve", "--host", HOST, "--port", str(port)]
        command += ["--workers", str(workers), *options.serve_args()]
        with log.open("ab") as output:
            return subprocess.Popen(
                command, stdout=output, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL
            )

    return launch


def forked_server(options: ServeOptions) -> Launcher:
    """A launcher forking each server from a ``forkserver`` that has imported the AI server once."""
    context: Any = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(["planner_mode.server"])

    def launch(port: int, log: Path) -> ServerProcess:
        process = context.Process(
            target=_run_forked, args=(port, str(log), options.environment()), daemon=True
        )
        process.start()
        return process  # type: ignore[no-any-return]

    return launch


def _run_forked(port: int, log: str, environment: Mapping[str, str | None]) -> None:
    import uvicorn

    with open(log, "ab", buffering=0) as output:
        os.dup2(output.fileno(), 1)
        os.dup2(output.fileno(), 2)
    set_environment(environment)
    from benchmarks.served_app import served_app

    uvicorn.run(served_app(), host=HOST, port=port, log_level="warning", access_log=False)


def free_port() -> int:
    """A TCP port of ``127.0.0.1`` that nothing listens on now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind((HOST, 0))
        port: int = probe.getsockname()[1]
    return port


class Fleet:
    """``count`` AI servers started by ``launcher``, each on its own loopback port, logging to a file each in
    ``log_dir`` (by default a temporary directory, removed by :meth:`stop`). Not thread-safe."""

    def __init__(
        self,
        launcher: Launcher,
        count: int,
        *,
        startup_timeout: float = DEFAULT_STARTUP_TIMEOUT_S,
        log_dir: Path | None = None,
    ) -> None:
        if count < 1:
            raise ValueError("a fleet needs at least one server")
        self.launcher = launcher
        self.startup_timeout = startup_timeout
        self._own_logs = log_dir is None
        self.log_dir = Path(tempfile.mkdtemp(prefix="erp-ai-fleet-")) if log_dir is None else log_dir
        self.ports = [free_port() for _ in range(count)]
        self._processes: list[ServerProcess | None] = [None] * count

    @property
    def urls(self) -> list[str]:
        return [f"http://{HOST}:{port}" for port in self.ports]

    def log_path(self, index: int) -> Path:
        return self.log_dir / f"server-{index}.log"

    def start(self) -> Fleet:
        """Launch every server and wait until all answer (:class:`FleetError`, the fleet stopped, if not)."""
        try:
            for index in range(len(self.ports)):
                self._launch(index)
            with ThreadPoolExecutor(max_workers=len(self.ports)) as pool:
                list(pool.map(self.wait_healthy, range(len(self.ports))))
        except BaseException:
            self.stop()
            raise
        return self

    def kill(self, index: int) -> None:
        """``SIGKILL`` server ``index`` and its workers (which share its socket and would go on answering)."""
        process = self._processes[index]
        if process is None:
            return
        workers = descendants(process.pid) if process.pid is not None else []
        process.kill()
        for pid in workers:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        _reap(process)
        self._processes[index] = None

    def restart(self, index: int) -> None:
        """Start server ``index`` again on its port, after :meth:`kill`."""
        if self._processes[index] is not None:
            raise RuntimeError(f"server {index} is running: kill it before restarting it")
        self._launch(index)

    def pid(self, index: int) -> int | None:
        process = self._processes[index]
        return None if process is None else process.pid

    def running(self, index: int) -> bool:
        process = self._processes[index]
        return process is not None and _exit_code(process) is None

    def wait_healthy(self, index: int) -> float:
        """Wait until server ``index`` answers ``/healthz``; :class:`FleetError` with the end of its log if
        the process exits or ``startup_timeout`` passes first. Returns the seconds waited."""
        started = time.monotonic()
        url = f"{self.urls[index]}/healthz"
        with httpx.Client(timeout=1.0) as http:
            while True:
                if not self.running(index):
                    raise FleetError(
                        f"AI server {index} ({self.urls[index]}) exited: {self._log_tail(index)}"
                    )
                with contextlib.suppress(httpx.HTTPError):
                    if http.get(url).status_code == 200:
                        return time.monotonic() - started
                if time.monotonic() - started > self.startup_timeout:
                    raise FleetError(
                        f"AI server {index} ({self.urls[index]}) did not answer within "
                        f"{self.startup_timeout:.0f} s: {self._log_tail(index)}"
                    )
                time.sleep(0.05)

    def stop(self) -> None:
        """``SIGTERM`` every server (``SIGKILL`` after a grace period); remove temporary logs."""
        running = [process for process in self._processes if process is not None]
        for process in running:
            with contextlib.suppress(OSError):
                process.terminate()
        deadline = time.monotonic() + _STOP_GRACE_S
        for process in running:
            if not _reap(process, max(0.0, deadline - time.monotonic())):
                with contextlib.suppress(OSError):
                    process.kill()
                _reap(process)
        self._processes = [None] * len(self.ports)
        if self._own_logs:
            for path in self.log_dir.glob("*.log"):
                path.unlink(missing_ok=True)
            with contextlib.suppress(OSError):
                self.log_dir.rmdir()

    def _launch(self, index: int) -> None:
        self._processes[index] = self.launcher(self.ports[index], self.log_path(index))

    def _log_tail(self, index: int) -> str:
        path = self.log_path(index)
        text = path.read_text(encoding="utf-8", errors="replace") if path.exists() else ""
        return text.strip()[-1500:] or "(no output)"

    def __enter__(self) -> Fleet:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()


def descendants(pid: int) -> list[int]:
    """The process ids of ``pid``'s descendants (Linux ``/proc``; empty elsewhere)."""
    found: list[int] = []
    pending = [pid]
    while pending:
        current = pending.pop()
        try:
            tasks = os.listdir(f"/proc/{current}/task")
        except OSError:
            continue
        for task in tasks:
            try:
                with open(f"/proc/{current}/task/{task}/children", encoding="ascii") as children:
                    kids = [int(child) for child in children.read().split()]
            except (OSError, ValueError):
                continue
            found.extend(kids)
            pending.extend(kids)
    return found


def _exit_code(process: ServerProcess) -> int | None:
    if isinstance(process, subprocess.Popen):
        return process.poll()
    code: int | None = getattr(process, "exitcode", None)
    return code


def _reap(process: ServerProcess, timeout: float = 10.0) -> bool:
    if isinstance(process, subprocess.Popen):
        try:
            process.wait(timeout)
        except subprocess.TimeoutExpired:
            return False
        return True
    join = getattr(process, "join", None)
    if join is not None:
        join(timeout)
    return _exit_code(process) is not None
