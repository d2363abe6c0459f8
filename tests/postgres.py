"""A real, throw-away PostgreSQL server for the test suite, and the ``db_url`` fixture over both backends.

The suite starts its own server (``initdb`` + ``pg_ctl``) in a temporary directory, on a unix socket there
only (no TCP port, so parallel runs never collide), with durability off, and stops it at the end of the
session; as root, the server programs run as the ``postgres`` user through ``runuser``. Each test gets a
fresh empty schema of the session's one database, as a URL whose ``search_path`` is that schema alone (a
millisecond, where ``CREATE DATABASE`` costs 0.1–1 s). The collation is ``C``, SQLite's byte order, so an
``ORDER BY`` on text means the same on both backends.

Without PostgreSQL the variants are skipped with a message naming ``scripts/ensure_postgres.sh`` and a
summary line (:func:`pytest_terminal_summary`); in CI (``CI`` set) or with ``ERP_AI_REQUIRE_POSTGRES=1``
they fail instead, so a machine without PostgreSQL can never pass by skipping them.

Fixtures (a pytest plugin: the root ``conftest.py`` registers it for the whole suite): ``postgres_server``,
``postgres_url`` (a fresh schema), ``db_url`` (a fresh database on each of :data:`BACKENDS`) and
``postgres_demo_erp_url`` (the seeded demo ERP, seeded once, read-only; :func:`demo_erp_url` picks the one of
a backend). :func:`fresh_url` serves fixtures of a wider scope;
:func:`run_processes` runs racing writers in separate processes.
"""

from __future__ import annotations

import atexit
import itertools
import multiprocessing
import os
import shutil
import subprocess
import tempfile
import threading
import traceback
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, Final

import pytest

BACKENDS: Final = ("sqlite", "postgresql")
"""The database backends every store, ERP and operations test runs on."""

REQUIRE_ENV: Final = "ERP_AI_REQUIRE_POSTGRES"
ENSURE_SCRIPT: Final = "scripts/ensure_postgres.sh"
_SUPERUSER: Final = "postgres"
_DATABASE: Final = "erp_ai_tests"
_START_TIMEOUT_SECONDS: Final = 60


class PostgresUnavailable(RuntimeError):
    """PostgreSQL cannot be started on this machine; the message says what to run."""


def postgres_required() -> bool:
    """Whether a missing PostgreSQL fails the tests (``CI``, ``ERP_AI_REQUIRE_POSTGRES=1``) or skips them."""
    return bool(os.environ.get("CI")) or os.environ.get(REQUIRE_ENV) == "1"


def find_bin_dir() -> Path | None:
    """Where ``initdb`` and ``pg_ctl`` are: Debian's newest ``/usr/lib/postgresql/*/bin``, else on PATH."""
    candidates = sorted(
        Path("/usr/lib/postgresql").glob("*/bin"),
        key=lambda path: int(path.parent.name) if path.parent.name.isdigit() else 0,
        reverse=True,
    )
    on_path = shutil.which("initdb")
    if on_path:
        candidates.append(Path(on_path).parent)
    for candidate in candidates:
        if (candidate / "initdb").is_file() and (candidate / "pg_ctl").is_file():
            return candidate
    return None


class PostgresServer:
    """One PostgreSQL server in its own temporary directory, reached through a unix socket there."""

    def __init__(self, bin_dir: Path) -> None:
        self.bin_dir = bin_dir
        self.root = Path(tempfile.mkdtemp(prefix="erp-ai-pg-"))
        self.data = self.root / "data"
        self.log = self.root / "server.log"
        self._as_postgres = os.geteuid() == 0
        self._names = itertools.count(1)
        self._names_lock = threading.Lock()

    # -- lifecycle ---------------------------------------------------------------------------------------

    def start(self) -> None:
        """``initdb``, ``pg_ctl start``, the session database; :class:`PostgresUnavailable` on failure."""
        if self._as_postgres:
            try:
                shutil.chown(self.root, user=_SUPERUSER, group=None)
            except LookupError:
                raise PostgresUnavailable(
                    f"the tests run as root and there is no {_SUPERUSER!r} user to run PostgreSQL: "
                    f"run {ENSURE_SCRIPT}"
                ) from None
        self._run(
            "initdb", "-D", str(self.data), "-U", _SUPERUSER, "--auth=trust",
            "-E", "UTF8", "--locale=C", "--no-sync",
        )  # fmt: skip
        options = " ".join(
            (
                f"-k {self.root}",
                "-c listen_addresses=''",
                "-F",
                "-c full_page_writes=off",
                "-c synchronous_commit=off",
                "-c max_connections=200",
            )
        )
        self._run(
            "pg_ctl", "start", "-w", "-t", str(_START_TIMEOUT_SECONDS),
            "-D", str(self.data), "-l", str(self.log), "-o", options,
        )  # fmt: skip
        self.admin(f'CREATE DATABASE "{_DATABASE}"', database="postgres")

    def stop(self) -> None:
        """Stop the server at once (its data is thrown away) and delete its directory."""
        try:
            if (self.data / "postmaster.pid").exists():
                self._run("pg_ctl", "stop", "-m", "immediate", "-w", "-D", str(self.data))
        finally:
            shutil.rmtree(self.root, ignore_errors=True)

    def _run(self, program: str, *args: str) -> None:
        command = [str(self.bin_dir / program), *args]
        if self._as_postgres:
            command = ["runuser", "-u", _SUPERUSER, "--", *command]
        done = subprocess.run(command, cwd=self.root, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            log = self.log.read_text(errors="replace")[-2000:] if self.log.exists() else ""
            raise PostgresUnavailable(
                f"{program} failed (exit {done.returncode}): {done.stderr.strip() or done.stdout.strip()}"
                + (f"\nserver log:\n{log}" if log else "")
            )

    # -- databases ---------------------------------------------------------------------------------------

    def url(self, schema: str) -> str:
        """The SQLAlchemy URL (psycopg 3, unix socket) of the session database with ``schema`` as its only
        ``search_path``."""
        return (
            f"postgresql+psycopg://{_SUPERUSER}@/{_DATABASE}?host={self.root}"
            f"&options=-csearch_path%3D{schema}"
        )

    def create_schema(self) -> str:
        """A new empty schema in the session database; returns its name."""
        with self._names_lock:
            name = f"test_{next(self._names)}"
        self.admin(f'CREATE SCHEMA "{name}"')
        return name

    def admin(self, statement: str, database: str = _DATABASE) -> None:
        """Run ``statement`` as the superuser, outside a transaction (``CREATE DATABASE``, ``GRANT``)."""
        import psycopg  # only the PostgreSQL variants need the driver

        with psycopg.connect(host=str(self.root), user=_SUPERUSER, dbname=database, autocommit=True) as conn:
            conn.execute(statement.encode())


_server: PostgresServer | None = None
"""The session's server, started on first use."""


def _acquire_server() -> PostgresServer:
    global _server
    if _server is None:
        bin_dir = find_bin_dir()
        if bin_dir is None:
            raise PostgresUnavailable(
                f"PostgreSQL server programs (initdb, pg_ctl) are not installed: run {ENSURE_SCRIPT} "
                "(as root it installs Debian's 'postgresql' package; otherwise it says what to install)"
            )
        server = PostgresServer(bin_dir)
        try:
            server.start()
        except BaseException:
            server.stop()
            raise
        atexit.register(server.stop)  # a session that dies before its teardown still stops the server
        _server = server
    return _server


_UNAVAILABLE: Final = "PostgreSQL unavailable: "
"""How the skip (or failure) of every PostgreSQL variant begins when the server cannot be started."""


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[PostgresServer]:
    """The session's PostgreSQL server (started on first use). Skips, or fails in CI, when unavailable."""
    global _server
    try:
        server = _acquire_server()
    except PostgresUnavailable as exc:
        message = f"{_UNAVAILABLE}{exc}"
        if postgres_required():
            pytest.fail(message, pytrace=False)
        pytest.skip(message)
    try:
        yield server
    finally:
        server.stop()
        _server = None


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """End a session that skipped PostgreSQL variants with a line saying how many, and why (an ``s``
    among the dots is easy to miss)."""
    reasons = [_skip_reason(report) for report in terminalreporter.stats.get("skipped", [])]
    unavailable = [reason for reason in reasons if reason.startswith(_UNAVAILABLE)]
    if not unavailable:
        return
    why = unavailable[0].removeprefix(_UNAVAILABLE)
    terminalreporter.write_sep("=", "PostgreSQL", yellow=True)
    terminalreporter.write_line(
        f"PostgreSQL variants did not run: {len(unavailable)} tests skipped ({why}). CI never skips them.",
        yellow=True,
    )


def _skip_reason(report: Any) -> str:
    """The reason of a skipped test's report (``"Skipped: "`` removed), or ``""``."""
    longrepr = getattr(report, "longrepr", None)
    text = str(longrepr[2]) if isinstance(longrepr, tuple) and len(longrepr) == 3 else ""
    return text.removeprefix("Skipped: ")


def fresh_url(request: pytest.FixtureRequest, backend: str, directory: Path) -> str:
    """A fresh, empty database on ``backend``: a SQLite file in ``directory``, or a new PostgreSQL schema
    (the session's server is started on first use, and skips or fails the test when unavailable)."""
    if backend == "sqlite":
        return f"sqlite:///{directory / 'db.sqlite3'}"
    server: PostgresServer = request.getfixturevalue("postgres_server")
    return server.url(server.create_schema())


@pytest.fixture
def postgres_url(postgres_server: PostgresServer) -> str:
    """A fresh, empty PostgreSQL database (a schema of its own) for one test."""
    return postgres_server.url(postgres_server.create_schema())


@pytest.fixture(params=BACKENDS)
def db_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A fresh, empty database on each backend: a SQLite file, then a PostgreSQL schema."""
    return fresh_url(request, request.param, tmp_path)


@pytest.fixture(scope="session")
def postgres_demo_erp_url(postgres_server: PostgresServer) -> str:
    """The seeded demo ERP in a schema of its own, seeded once per session. Treat as read-only."""
    from shared.erp.database import open_demo_erp

    url = postgres_server.url(postgres_server.create_schema())
    open_demo_erp(url).engine.dispose()
    return url


def demo_erp_url(request: pytest.FixtureRequest, backend: str) -> str:
    """The session's seeded demo ERP on ``backend`` (read-only): the root ``erp_db_url`` SQLite file, or
    :func:`postgres_demo_erp_url`."""
    name = "erp_db_url" if backend == "sqlite" else "postgres_demo_erp_url"
    url: str = request.getfixturevalue(name)
    return url


# -- racing processes ----------------------------------------------------------------------------------------

PROCESS_WAIT_SECONDS: Final = 120
"""Bound on a racing process's barrier wait and result (a hung test fails; never reached otherwise)."""


def run_processes(target: Callable[..., Any], args_per_process: list[tuple[Any, ...]]) -> list[Any]:
    """Run ``target(index, *args, barrier)`` (a module-level function that waits at ``barrier`` where the
    race should start) in one fresh ``forkserver`` process per ``args``; what each returned, in ``index``
    order. A process that raised fails the test with its traceback."""
    if "forkserver" in multiprocessing.get_all_start_methods():
        context: Any = multiprocessing.get_context("forkserver")
        context.set_forkserver_preload([target.__module__])
    else:  # pragma: no cover - Windows
        context = multiprocessing.get_context("spawn")
    barrier = context.Barrier(len(args_per_process))
    results = context.Queue()
    processes = [
        context.Process(target=_child, args=(target, index, args, barrier, results))
        for index, args in enumerate(args_per_process)
    ]
    for process in processes:
        process.start()
    reported = sorted(results.get(timeout=PROCESS_WAIT_SECONDS) for _ in processes)
    for process in processes:
        process.join(timeout=PROCESS_WAIT_SECONDS)
    failures = [value for _, ok, value in reported if not ok]
    assert failures == [], "\n".join(failures)
    assert [process.exitcode for process in processes] == [0] * len(processes)
    return [value for _, _, value in reported]


def _child(target: Callable[..., Any], index: int, args: tuple[Any, ...], barrier: Any, results: Any) -> None:
    """A racing process: ``(index, True, result)`` or ``(index, False, traceback)`` goes to ``results``."""
    try:
        results.put((index, True, target(index, *args, barrier)))
    except BaseException:
        results.put((index, False, traceback.format_exc()))
