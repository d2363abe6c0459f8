"""How the harness talks to its SQL databases: engines, first-use setup, and failures in one sentence.

:func:`make_engine` configures SQLite (WAL, busy timeout, foreign keys; in-memory shared across threads) and
libpq PostgreSQL (lock and connect timeouts). :func:`setup_transaction` serialises first-use setup across
processes. :func:`storage_errors` turns a database failure into a one-line :class:`StorageError` saying what
is wrong and what to do, without SQL.
"""

from __future__ import annotations

import re
import sqlite3
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Final
from urllib.parse import unquote

from sqlalchemy import Connection, Engine, create_engine, event, text
from sqlalchemy.engine import URL, make_url
from sqlalchemy.exc import ArgumentError, DBAPIError, NoSuchModuleError, OperationalError
from sqlalchemy.exc import TimeoutError as PoolTimeoutError
from sqlalchemy.pool import ConnectionPoolEntry, StaticPool

from shared.errors import ConfigurationError, StorageError

BUSY_TIMEOUT_SECONDS: Final = 30.0
"""How long a SQLite connection waits for another writer's lock before failing (``timeout`` and
``PRAGMA busy_timeout``); also how long a thread waits for the shared in-memory connection."""

CONNECT_TIMEOUT_SECONDS: Final = 10
"""How long connecting to a database server may take before it counts as unreachable (libpq drivers)."""

_SETUP_LOCK_KEY: Final = 0x45525041_49534554  # "ERPAISET"
"""PostgreSQL advisory lock that serialises :func:`setup_transaction` across processes."""

_DRIVER_PACKAGES: Final = {
    "psycopg2": "psycopg2-binary",
    "psycopg": "psycopg[binary]",
    "pymysql": "PyMySQL",
    "MySQLdb": "mysqlclient",
}
"""Import name of a database driver → the package that provides it, where the two differ."""
_DRIVER_EXTRAS: Final = {"psycopg": "postgres"}
"""Import name of a database driver → the extra of this project that installs it."""
_LIBPQ_DRIVERS: Final = frozenset({"psycopg", "psycopg2"})
"""PostgreSQL drivers built on libpq, which take ``connect_timeout`` and ``options``."""

_URL_EXAMPLES: Final = "sqlite:///path/to/erp.sqlite3 or postgresql+psycopg://user:password@host/dbname"


# -- engines -------------------------------------------------------------------------------------------------


def is_memory_sqlite(url: str | URL) -> bool:
    """Whether ``url`` names an in-memory SQLite database (``sqlite://``, ``sqlite:///:memory:``,
    ``sqlite:///file:name?mode=memory&uri=true``)."""
    parsed = make_url(url) if isinstance(url, str) else url
    if parsed.get_backend_name() != "sqlite":
        return False
    database = parsed.database or ""
    return database in ("", ":memory:") or parsed.query.get("mode") == "memory" or "mode=memory" in database


def make_engine(url: str | URL) -> Engine:
    """An engine for ``url``; SQLite gets WAL, a busy timeout and foreign keys."""
    try:
        parsed = make_url(url) if isinstance(url, str) else url
    except (ArgumentError, ValueError):  # ValueError: e.g. a port that is not a number
        raise ConfigurationError(
            f"{_mask_password(str(url))!r} is not a database URL; use e.g. {_URL_EXAMPLES}."
        ) from None
    try:
        if parsed.get_backend_name() == "postgresql" and parsed.get_driver_name() in _LIBPQ_DRIVERS:
            return create_engine(parsed, pool_pre_ping=True, connect_args=_libpq_settings(parsed))
        if parsed.get_backend_name() != "sqlite":
            return create_engine(parsed, pool_pre_ping=True)
        memory = is_memory_sqlite(parsed)
        engine = create_engine(
            parsed,
            connect_args={"check_same_thread": False, "timeout": BUSY_TIMEOUT_SECONDS},
            **({"poolclass": SharedConnectionPool} if memory else {}),
        )
    except NoSuchModuleError:
        raise ConfigurationError(
            f"Unknown database kind {parsed.drivername!r} in {_safe(parsed)}; use e.g. {_URL_EXAMPLES}."
        ) from None
    except ImportError as exc:
        module = (exc.name or "").split(".")[0] or parsed.drivername
        package = _DRIVER_PACKAGES.get(module, module)
        extra = _DRIVER_EXTRAS.get(module)
        install = f"`pip install {package}`"
        if extra is not None:
            from shared.extras import install_hint

            install = f"`{install_hint(extra)}` (or {install})"
        raise ConfigurationError(
            f"The database driver {module!r} for {_safe(parsed)} is not installed: "
            f"run {install}, or use a sqlite:/// URL."
        ) from None
    event.listen(engine, "connect", _sqlite_pragmas(wal=not memory))
    return engine


def _libpq_settings(url: URL) -> dict[str, Any]:
    """Connect arguments for libpq: a connect timeout, and lock waits bounded like SQLite's busy timeout."""
    settings: dict[str, Any] = {}
    if "connect_timeout" not in url.query:
        settings["connect_timeout"] = CONNECT_TIMEOUT_SECONDS
    own = url.query.get("options")
    ours = f"-c lock_timeout={int(BUSY_TIMEOUT_SECONDS * 1000)}"
    settings["options"] = f"{ours} {own}" if isinstance(own, str) and own else ours
    return settings


def _sqlite_pragmas(*, wal: bool) -> Any:
    def on_connect(dbapi_connection: Any, _record: Any) -> None:
        cursor = dbapi_connection.cursor()
        try:
            # First, so that every statement below waits for another process's lock instead of failing.
            cursor.execute(f"PRAGMA busy_timeout={int(BUSY_TIMEOUT_SECONDS * 1000)}")
            if wal:
                _switch_to_wal(cursor)
                # WAL + NORMAL is the pairing SQLite recommends: commits stop waiting for fsync and the
                # database stays consistent; a power cut (not a crash) can lose only the last commits.
                cursor.execute("PRAGMA synchronous=NORMAL")
            cursor.execute("PRAGMA foreign_keys=ON")
        finally:
            cursor.close()

    return on_connect


def _switch_to_wal(cursor: Any) -> None:
    """``PRAGMA journal_mode=WAL``, retried while another process holds the database."""
    deadline = time.monotonic() + BUSY_TIMEOUT_SECONDS
    while True:
        try:
            cursor.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() >= deadline:
                raise
            time.sleep(0.02)


class SharedConnectionPool(StaticPool):
    """One connection for every thread, lent to one thread at a time: in-memory SQLite across threads."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._lent = threading.Condition()
        self._holder: int | None = None

    def _do_get(self) -> ConnectionPoolEntry:
        me = threading.get_ident()
        with self._lent:
            if self._holder not in (None, me):
                free = self._lent.wait_for(lambda: self._holder is None, timeout=BUSY_TIMEOUT_SECONDS)
                if not free:
                    raise PoolTimeoutError(
                        f"the shared in-memory database stayed busy for more than {BUSY_TIMEOUT_SECONDS:g} s"
                    )
            self._holder = me
        try:
            return super()._do_get()
        except BaseException:
            self._give_back()
            raise

    def _do_return_conn(self, record: ConnectionPoolEntry) -> None:
        super()._do_return_conn(record)
        self._give_back()

    def _give_back(self) -> None:
        with self._lent:
            self._holder = None
            self._lent.notify()


# -- first-use setup -----------------------------------------------------------------------------------------


@contextmanager
def setup_transaction(engine: Engine) -> Iterator[Connection]:
    """A transaction holding the database's write lock from its first statement, committed on success."""
    with engine.connect() as connection:
        dialect = connection.dialect.name
        if dialect == "sqlite":
            # Python's sqlite3 (legacy transaction control) does not begin before DDL: begin explicitly.
            connection.exec_driver_sql("BEGIN IMMEDIATE")
        elif dialect == "postgresql":
            connection.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": _SETUP_LOCK_KEY})
        yield connection
        connection.commit()


# -- failures ------------------------------------------------------------------------------------------------

# SQLite primary result codes (https://www.sqlite.org/rescode.html).
_SQLITE_PERM, _SQLITE_BUSY, _SQLITE_LOCKED, _SQLITE_READONLY = 3, 5, 6, 8
_SQLITE_IOERR, _SQLITE_CORRUPT, _SQLITE_FULL, _SQLITE_CANTOPEN, _SQLITE_NOTADB = 10, 11, 13, 14, 26


@contextmanager
def storage_errors(url: str | URL, action: str, setting: str) -> Iterator[None]:
    """Turn a database failure inside the block into one :func:`storage_error` (the original chained)."""
    try:
        yield
    except (DBAPIError, PoolTimeoutError) as exc:
        raise storage_error(exc, url, action=action, setting=setting) from exc


def storage_error(error: BaseException, url: str | URL, *, action: str, setting: str) -> StorageError:
    """A one-line :class:`StorageError`: what is wrong with the database at ``url``, and what to do."""
    parsed = make_url(url) if isinstance(url, str) else url
    original = getattr(error, "orig", None) or error
    reason = _first_line(str(original)) or type(original).__name__
    sqlite = parsed.get_backend_name() == "sqlite"
    path = None if not sqlite or is_memory_sqlite(parsed) else sqlite_file(parsed)
    subject = str(path) if path is not None else ("the in-memory database" if sqlite else _server_url(parsed))
    elsewhere = f"or set {setting} to another database"
    code = getattr(original, "sqlite_errorcode", None)
    primary = code & 0xFF if isinstance(code, int) else _code_from_text(reason)

    if isinstance(error, PoolTimeoutError) or primary in (_SQLITE_BUSY, _SQLITE_LOCKED):
        problem, advice = _locked(subject)
    elif primary in (_SQLITE_READONLY, _SQLITE_PERM):
        problem = f"{subject} is read-only"
        advice = f"Make the file and its directory writable, {elsewhere}"
    elif primary in (_SQLITE_NOTADB, _SQLITE_CORRUPT):
        problem = f"{subject} is not a SQLite database, or it is corrupt"
        advice = f"Move the file away so that a fresh database is created, {elsewhere}"
    elif primary == _SQLITE_CANTOPEN and path is not None and not path.parent.is_dir():
        problem = f"the directory {path.parent} does not exist"
        advice = f"Create it, {elsewhere}"
    elif primary == _SQLITE_CANTOPEN and path is not None and path.is_dir():
        problem = f"{subject} is a directory, not a database file"
        advice = f"Give the path of a file, {elsewhere}"
    elif primary == _SQLITE_CANTOPEN:
        problem = f"{subject} cannot be opened ({reason})"
        advice = f"Check the permissions of the file and of its directory, {elsewhere}"
    elif primary in (_SQLITE_IOERR, _SQLITE_FULL):
        problem = f"a disk error happened on {subject} ({reason})"
        advice = "Check the free space and the disk, then try again"
    elif sqlite:
        problem = f"{subject} failed ({reason})"
        advice = f"Check the file, {elsewhere}"
    else:
        problem, advice = _server_problem(error, original, subject, reason, setting)
    return StorageError(f"Cannot {action}: {problem}. {advice}.")


def _locked(subject: str) -> tuple[str, str]:
    return (
        f"{subject} stayed locked by another process for more than {BUSY_TIMEOUT_SECONDS:g} s",
        "Try again when the other process is done",
    )


# SQLSTATE codes and classes (https://www.postgresql.org/docs/current/errcodes-appendix.html).
_PG_LOCKED = frozenset({"55P03", "57014"})  # lock_not_available (lock_timeout), query_canceled
_PG_READ_ONLY = frozenset({"25006"})  # read_only_sql_transaction: a standby, default_transaction_read_only
_PG_NO_DATABASE = "3D000"  # invalid_catalog_name
_PG_UNREACHABLE = frozenset({"57P01", "57P02", "57P03"})  # server shut down / crashed / starting up


def _server_problem(
    error: BaseException, original: BaseException, subject: str, reason: str, setting: str
) -> tuple[str, str]:
    """``(problem, advice)`` for a database server's failure, classified by SQLSTATE (psycopg 3 and 2)."""
    code = getattr(original, "sqlstate", None) or getattr(original, "pgcode", None)
    code = code if isinstance(code, str) else ""
    if not code:  # refused while connecting: libpq reports the server's reason as text only
        reason = _connect_reason(reason)
        code = _sqlstate_from_text(reason)
    check = f"Check that the database server is running and that {setting} is right"
    if code in _PG_LOCKED:
        return _locked(subject)
    if code.startswith("40"):  # serialization_failure, deadlock_detected: another transaction won
        return f"{subject} refused a write that conflicted with a concurrent one ({reason})", "Try again"
    if code in _PG_READ_ONLY:
        return f"{subject} is read-only", f"Point {setting} at a writable server (the primary)"
    if code == "42501":  # insufficient_privilege
        return (
            f"{subject} refuses this user ({reason})",
            f"Grant the user of {setting} the rights it needs, or set {setting} to another database",
        )
    if code.startswith("28"):  # invalid_authorization_specification, invalid_password
        return f"{subject} refused the login ({reason})", f"Check the user and password in {setting}"
    if code == _PG_NO_DATABASE:
        return f"{subject} does not exist", f"Create it on the server (createdb), or set {setting} to another"
    if code.startswith("53"):  # disk_full, out_of_memory, too_many_connections
        return f"the server of {subject} is out of resources ({reason})", "Free some, then try again"
    if code.startswith("XX"):  # data_corrupted, index_corrupted, internal_error
        return f"{subject} failed inside the server ({reason})", "Ask its administrator to check the server"
    connect_failed = not code and isinstance(error, (OperationalError, OSError))  # libpq never connected
    if code.startswith("08") or code in _PG_UNREACHABLE or connect_failed:
        return f"{subject} cannot be reached ({reason})", check
    return f"{subject} failed ({reason})", check


_PG_CONNECT_TEXTS: Final = (
    ('database "', "3D000"),  # …database "erp" does not exist
    ('role "', "28000"),  # …role "ana" does not exist
    ("authentication failed", "28P01"),
    ("pg_hba.conf", "28000"),
    ("too many clients", "53300"),
    ("starting up", "57P03"),
    ("shutting down", "57P03"),
)
"""Text of a connection refused by the server → its SQLSTATE (libpq gives none before the session starts)."""


def _connect_reason(reason: str) -> str:
    """libpq's ``connection to server on socket "…" failed: FATAL:  <reason>`` → ``<reason>``."""
    tail = reason.rsplit("failed: ", 1)[-1]
    return " ".join(tail.removeprefix("FATAL:").split()) or reason


def _sqlstate_from_text(reason: str) -> str:
    return next((code for needle, code in _PG_CONNECT_TEXTS if needle in reason), "")


def sqlite_file(url: URL) -> Path:
    """The file of a SQLite URL, also in URI form (``sqlite:///file:/path/erp.sqlite3?mode=ro&uri=true``)."""
    database = url.database or ""
    if database.startswith("file:"):
        database = unquote(database.removeprefix("file:").split("?", 1)[0])
    return Path(database)


_SQLITE_TEXTS: Final = (
    ("locked", _SQLITE_BUSY),
    ("readonly", _SQLITE_READONLY),
    ("read-only", _SQLITE_READONLY),
    ("not a database", _SQLITE_NOTADB),
    ("malformed", _SQLITE_CORRUPT),
    ("unable to open", _SQLITE_CANTOPEN),
    ("disk i/o", _SQLITE_IOERR),
    ("disk is full", _SQLITE_FULL),
)
"""Text of a SQLite message → its result code (drivers that do not expose ``sqlite_errorcode``)."""


def _code_from_text(reason: str) -> int | None:
    return next((code for needle, code in _SQLITE_TEXTS if needle in reason.lower()), None)


def _first_line(message: str) -> str:
    line = next(iter(message.strip().splitlines()), "").strip()
    return line if len(line) <= 200 else line[:199] + "…"


def _safe(url: URL) -> str:
    """The URL without its password."""
    return url.render_as_string(hide_password=True)


def _server_url(url: URL) -> str:
    """A server database's URL for a message: no password, and of the query only ``host`` (a socket)."""
    return _safe(url.set(query={key: value for key, value in url.query.items() if key == "host"}))


def _mask_password(raw: str) -> str:
    """A raw (unparsable) URL with anything that looks like ``user:password@`` masked."""
    return re.sub(r"(//[^:/@]*:)[^@]*@", r"\1***@", raw)
