"""shared/erp/storage.py and open_erp's failures: every broken database or URL is one clear sentence."""

from __future__ import annotations

import builtins
import os
import sqlite3
import threading
import uuid
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import date
from pathlib import Path
from typing import Any

import psycopg
import pytest
from sqlalchemy import func, select, text
from sqlalchemy.exc import SQLAlchemyError

from shared.erp import database, storage
from shared.erp.database import open_demo_erp, open_erp
from shared.erp.models import Customer
from shared.erp.storage import is_memory_sqlite, make_engine, storage_error
from shared.errors import ConfigurationError, StorageError
from shared.memory.store import MemoryStore, MessageIn, TurnRecord, open_memory_store
from tests.postgres import PostgresServer

SQL_WORDS = ("SELECT", "INSERT", "UPDATE", "CREATE", "PRAGMA", "BEGIN", "[SQL", "parameters")


def assert_one_clear_line(error: BaseException, *expected: str) -> None:
    """One line, saying what is wrong (``expected``), no SQL, no traceback text."""
    message = str(error)
    assert "\n" not in message, message
    assert len(message) < 300, message
    assert not any(word in message for word in SQL_WORDS), message
    for part in expected:
        assert part in message, message


@pytest.fixture
def seeded_url(tmp_path: Path) -> str:
    url = f"sqlite:///{tmp_path / 'erp.sqlite3'}"
    open_demo_erp(url).engine.dispose()
    return url


# -- URLs and drivers: ConfigurationError --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("not a url", "is not a database URL"),
        ("nosuchdb://localhost/x", "Unknown database kind 'nosuchdb'"),
        ("mysql+nosuchdriver://localhost/x", "Unknown database kind"),
        ("postgresql://ana:s3cret@host:notaport/db", "'postgresql://ana:***@host:notaport/db' is not"),
    ],
)
def test_a_bad_url_is_a_configuration_error_that_never_echoes_a_password(url: str, expected: str) -> None:
    with pytest.raises(ConfigurationError) as caught:
        open_demo_erp(url)
    assert_one_clear_line(caught.value, expected, "sqlite:///")
    assert "s3cret" not in str(caught.value)


# -- files: StorageError -------------------------------------------------------------------------------------


OPENERS = {
    "the ERP": (open_demo_erp, "Cannot open the ERP database", "ERP_AI_DB_URL"),
    "the memory": (open_memory_store, "Cannot open the conversation memory", "ERP_AI_MEMORY_URL"),
}


@pytest.mark.parametrize(("opener", "action", "setting"), OPENERS.values(), ids=OPENERS.keys())
def test_a_missing_directory_is_named(
    tmp_path: Path, opener: Callable[[str], Any], action: str, setting: str
) -> None:
    missing = tmp_path / "no" / "such" / "dir"
    with pytest.raises(StorageError) as caught:
        opener(f"sqlite:///{missing / 'db.sqlite3'}")
    assert_one_clear_line(
        caught.value, f"{action}: the directory {missing} does not exist", "Create it", setting
    )
    assert isinstance(caught.value.__cause__, SQLAlchemyError)


def test_a_directory_instead_of_a_file_is_named(tmp_path: Path) -> None:
    with pytest.raises(StorageError) as caught:
        open_demo_erp(f"sqlite:///{tmp_path}")
    assert_one_clear_line(caught.value, "is a directory")


def test_a_corrupt_file_is_named(tmp_path: Path) -> None:
    corrupt = tmp_path / "erp.sqlite3"
    corrupt.write_bytes(bytes(range(256)) * 64)
    with pytest.raises(StorageError) as caught:
        open_demo_erp(f"sqlite:///{corrupt}")
    assert_one_clear_line(caught.value, str(corrupt), "not a SQLite database, or it is corrupt", "Move")


def test_a_read_only_database_that_needs_seeding_is_named(tmp_path: Path) -> None:
    path = tmp_path / "erp.sqlite3"
    sqlite3.connect(path).close()  # an empty database, opened read-only
    with pytest.raises(StorageError) as caught:
        open_demo_erp(f"sqlite:///file:{path}?mode=ro&uri=true")
    assert_one_clear_line(caught.value, f": {path} is read-only", "writable")


def test_a_read_only_seeded_erp_still_opens_for_reading(seeded_url: str) -> None:
    """The ERP itself only reads once seeded (the memory store, which writes, refuses read-only)."""
    path = seeded_url.removeprefix("sqlite:///")
    erp = open_erp(f"sqlite:///file:{path}?mode=ro&uri=true")
    try:
        with erp.session() as session:
            assert session.scalar(select(func.count(Customer.id))) == 40
    finally:
        erp.engine.dispose()


def test_an_unwritable_default_directory_is_a_storage_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    monkeypatch.delenv("ERP_AI_DB_URL", raising=False)
    monkeypatch.setattr(database, "DEFAULT_DIR", blocker / ".erp-ai")
    with pytest.raises(StorageError) as caught:
        database.default_db_url()
    assert_one_clear_line(caught.value, "Cannot create the directory", "ERP_AI_DB_URL")


@pytest.mark.skipif(os.name != "posix" or os.geteuid() == 0, reason="root writes read-only files")
def test_a_read_only_file_is_named(tmp_path: Path) -> None:  # pragma: no cover - not run as root
    path = tmp_path / "erp.sqlite3"
    sqlite3.connect(path).close()
    path.chmod(0o444)
    with pytest.raises(StorageError) as caught:
        open_demo_erp(f"sqlite:///{path}")
    assert_one_clear_line(caught.value, str(path))


def test_a_database_locked_past_the_busy_timeout_is_named(seeded_url: str, quick_busy_timeout: None) -> None:
    holder = sqlite3.connect(seeded_url.removeprefix("sqlite:///"), isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")  # another process's writer holding the write lock
    with pytest.raises(StorageError) as caught:
        open_demo_erp(seeded_url)
    holder.close()
    assert_one_clear_line(caught.value, "stayed locked by another process", "Try again")


def test_a_server_that_cannot_be_reached_is_a_storage_error() -> None:
    error = storage.storage_error(
        OSError('connection to server at "db" failed: Connection refused\n\tIs the server running?'),
        "postgresql+psycopg://ana:s3cret@db/erp",
        action="open the ERP database",
        setting="ERP_AI_DB_URL",
    )
    assert_one_clear_line(error, "Cannot open the ERP database", "Connection refused", "ana:***@db")
    assert "s3cret" not in str(error)


# -- in-memory SQLite ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "memory"),
    [
        ("sqlite://", True),
        ("sqlite:///:memory:", True),
        ("sqlite+pysqlite:///:memory:", True),
        ("sqlite:///file:erp?mode=memory&uri=true", True),
        ("sqlite:///erp.sqlite3", False),
        ("postgresql://localhost/erp", False),
    ],
)
def test_in_memory_sqlite_urls_are_recognised(url: str, memory: bool) -> None:
    assert is_memory_sqlite(url) is memory


def test_threads_take_turns_on_the_shared_in_memory_connection() -> None:
    """Each thread's transaction runs alone: none sees or commits another's half-done work."""
    engine = make_engine("sqlite://")
    try:
        with engine.begin() as connection:
            connection.execute(text("CREATE TABLE t (n INTEGER)"))

        def worker(n: int) -> None:
            for _ in range(20):
                with engine.begin() as connection:
                    connection.execute(text("INSERT INTO t VALUES (:n)"), {"n": n})
                    count = connection.scalar(text("SELECT count(*) FROM t WHERE n = :n"), {"n": n})
                    connection.execute(text("DELETE FROM t WHERE n = :n"), {"n": n})
                    assert count == 1

        with ThreadPoolExecutor(max_workers=6) as pool:
            list(pool.map(worker, range(6)))  # re-raises what a thread raised
    finally:
        engine.dispose()


def test_a_thread_waiting_too_long_for_the_in_memory_connection_gets_a_storage_error(
    quick_busy_timeout: None,
) -> None:
    erp = open_demo_erp("sqlite://")
    try:
        with erp.engine.connect():  # this thread holds the only connection
            outcome: list[BaseException] = []

            def other() -> None:
                try:
                    with storage.storage_errors(erp.engine.url, "read the ERP", "ERP_AI_DB_URL"):
                        erp.engine.connect().close()
                except BaseException as error:
                    outcome.append(error)

            thread = threading.Thread(target=other)
            thread.start()
            thread.join()
        assert len(outcome) == 1 and isinstance(outcome[0], StorageError)
        assert_one_clear_line(outcome[0], "the in-memory database stayed locked")
        # Nested use in one thread shares the connection and never deadlocks.
        with erp.engine.connect(), erp.engine.connect() as nested:
            assert nested.scalar(text("SELECT 1")) == 1
    finally:
        erp.engine.dispose()


def test_switching_to_wal_waits_out_a_lock_that_sqlite_answers_at_once(tmp_path: Path) -> None:
    """SQLite answers "database is locked" at once, without its busy handler, when waiting could deadlock;
    a connection holding the database while another opens it must not fail the open (seen in CI: four
    processes opening one new database at once)."""
    path = tmp_path / "db.sqlite3"
    holder = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    holder.execute("CREATE TABLE t (x INTEGER)")
    holder.execute("BEGIN EXCLUSIVE")
    opener = sqlite3.connect(path, timeout=0)  # no busy handler: every lock conflict fails at once
    cursor = opener.cursor()
    with pytest.raises(sqlite3.OperationalError, match="locked"):
        cursor.execute("PRAGMA journal_mode=WAL")  # what the open did before it retried
    release = threading.Timer(0.2, lambda: holder.execute("COMMIT"))
    release.start()
    try:
        storage._switch_to_wal(cursor)
        assert cursor.execute("PRAGMA journal_mode").fetchone() == ("wal",)
    finally:
        release.join()
        opener.close()
        holder.close()


def test_a_server_that_is_not_running_cannot_be_reached() -> None:
    url = f"postgresql+psycopg://ana:s3cret@/erp?host=/nonexistent/erp-ai-socket-{uuid.uuid4().hex[:8]}"
    with pytest.raises(StorageError) as caught:
        MemoryStore(url)
    assert_one_clear_line(
        caught.value,
        "Cannot open the conversation memory",
        "cannot be reached",
        "Check that the database server is running and that ERP_AI_MEMORY_URL is right",
    )
    assert "s3cret" not in str(caught.value) and "ana:***@" in str(caught.value)


def test_a_database_that_does_not_exist_is_named_with_what_to_do(postgres_server: PostgresServer) -> None:
    url = postgres_server.url("public").replace("/erp_ai_tests?", "/no_such_erp?")
    with pytest.raises(StorageError) as caught:
        open_demo_erp(url)
    assert_one_clear_line(
        caught.value, "Cannot open the ERP database", "/no_such_erp", "does not exist", "createdb"
    )


def test_an_unknown_user_is_a_refused_login(postgres_server: PostgresServer) -> None:
    url = postgres_server.url("public").replace("postgres@", "nadie@")
    with pytest.raises(StorageError) as caught:
        MemoryStore(url)
    assert_one_clear_line(
        caught.value, "refused the login", 'role "nadie" does not exist', "Check the user and password in"
    )


def test_a_read_only_server_is_refused_when_the_store_opens(postgres_url: str) -> None:
    MemoryStore(postgres_url).close()  # the tables exist: only a write can tell
    read_only = postgres_url.replace("options=", "options=-cdefault_transaction_read_only%3Don%20")
    with pytest.raises(StorageError) as caught:
        MemoryStore(read_only)
    assert_one_clear_line(caught.value, "Cannot open the conversation memory", "is read-only")


def test_a_user_without_rights_on_the_schema_is_told_to_get_them(
    postgres_server: PostgresServer, postgres_url: str
) -> None:
    role, schema = f"lector_{uuid.uuid4().hex[:8]}", postgres_url.rsplit("%3D", 1)[1]
    postgres_server.admin(f'CREATE ROLE "{role}" LOGIN')
    postgres_server.admin(f'GRANT USAGE ON SCHEMA "{schema}" TO "{role}"')  # may look, may not create
    with pytest.raises(StorageError) as caught:
        MemoryStore(postgres_url.replace("postgres@", f"{role}@"))
    assert_one_clear_line(caught.value, "refuses this user", "permission denied", "Grant the user")


@pytest.fixture
def locked_conversation(postgres_url: str) -> Iterator[str]:
    """Conversation ``c1``, its lock row held by another connection (a turn that does not finish)."""
    with MemoryStore(postgres_url) as store:
        store.record_turn("c1", TurnRecord(messages=[MessageIn(role="user", content="hola")]))
    engine = make_engine(postgres_url)
    with engine.connect() as holder:
        holder.execute(text("SELECT 1 FROM conversation_state WHERE conversation_id = 'c1' FOR UPDATE"))
        yield postgres_url
        holder.rollback()
    engine.dispose()


def test_a_turn_waiting_past_the_lock_timeout_is_a_storage_error_and_writes_nothing(
    quick_busy_timeout: None, locked_conversation: str
) -> None:
    with MemoryStore(locked_conversation) as store:
        with pytest.raises(StorageError) as caught:
            store.record_turn("c1", TurnRecord(messages=[MessageIn(role="user", content="perdido")]))
        assert_one_clear_line(caught.value, "Cannot write the conversation memory", "stayed locked", "0.2 s")
        assert [m.content for m in store.history("c1")] == ["hola"]  # reads never wait for the lock
        assert store.build_context("c1", date(2026, 11, 30)).version == 1


def test_the_lock_timeout_joins_the_urls_own_options(postgres_url: str) -> None:
    engine = make_engine(postgres_url)  # the URL sets search_path in its options
    try:
        with engine.connect() as connection:
            assert connection.scalar(text("SHOW lock_timeout")) == "30s"
            assert connection.scalar(text("SHOW search_path")) == postgres_url.rsplit("%3D", 1)[1]
    finally:
        engine.dispose()


def test_a_missing_psycopg_says_what_to_install_and_hides_the_password(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    real_import = builtins.__import__

    def no_psycopg(name: str, *args: object, **kwargs: object) -> object:
        if name.split(".")[0] == "psycopg":
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return real_import(name, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(builtins, "__import__", no_psycopg)
    with pytest.raises(ConfigurationError) as caught:
        make_engine("postgresql+psycopg://ana:s3cret@db.example/erp")
    assert_one_clear_line(
        caught.value, "'psycopg'", "pip install 'erp-ai-harness[postgres]'", "psycopg[binary]", "ana:***@"
    )
    assert "s3cret" not in str(caught.value)


@pytest.mark.parametrize(
    ("sqlstate", "expected"),
    [
        ("40P01", "conflicted with a concurrent one"),  # deadlock_detected
        ("40001", "conflicted with a concurrent one"),  # serialization_failure
        ("57014", "stayed locked"),  # query_canceled (statement_timeout)
        ("53100", "out of resources"),  # disk_full
        ("53300", "out of resources"),  # too_many_connections
        ("XX001", "failed inside the server"),  # data_corrupted
        ("57P01", "cannot be reached"),  # admin_shutdown
        ("08006", "cannot be reached"),  # connection_failure
        ("22001", "failed ("),  # string_data_right_truncation: anything else
    ],
)
def test_server_failures_are_classified_by_sqlstate(sqlstate: str, expected: str) -> None:
    class ServerError(psycopg.Error):
        pass

    error = ServerError("what the server said\nDETAIL: more")
    error.sqlstate = sqlstate  # type: ignore[misc]
    message = storage_error(error, "postgresql+psycopg://ana:s3cret@db/erp", action="open it", setting="URL")
    assert_one_clear_line(message, "Cannot open it: ", "postgresql+psycopg://ana:***@db/erp", expected)
    assert "DETAIL" not in str(message)
