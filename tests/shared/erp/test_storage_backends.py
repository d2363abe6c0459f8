"""A PostgreSQL database that fails says so in one line, like SQLite does (``shared/erp/storage.py``)."""

from __future__ import annotations

import builtins
import uuid
from collections.abc import Iterator
from datetime import date

import psycopg
import pytest
from sqlalchemy import text

from shared.erp import storage
from shared.erp.database import open_demo_erp
from shared.erp.storage import make_engine, storage_error
from shared.errors import ConfigurationError, StorageError
from shared.memory.store import MemoryStore, MessageIn, TurnRecord
from tests.postgres import PostgresServer
from tests.shared.erp.test_storage import assert_one_clear_line

RUNNING = "Check that the database server is running and that ERP_AI_MEMORY_URL is right"


def with_query(url: str, **params: str) -> str:
    """``url`` with more query parameters (``options`` values are appended to the URL's own)."""
    for key, value in params.items():
        url = f"{url}&{key}={value}"
    return url


@pytest.fixture
def server(postgres_server: PostgresServer) -> PostgresServer:
    return postgres_server


def test_a_server_that_is_not_running_cannot_be_reached() -> None:
    url = f"postgresql+psycopg://ana:s3cret@/erp?host=/nonexistent/erp-ai-socket-{uuid.uuid4().hex[:8]}"
    with pytest.raises(StorageError) as caught:
        MemoryStore(url)
    assert_one_clear_line(caught.value, "Cannot open the conversation memory", "cannot be reached", RUNNING)
    assert "s3cret" not in str(caught.value) and "ana:***@" in str(caught.value)


def test_a_database_that_does_not_exist_is_named_with_what_to_do(server: PostgresServer) -> None:
    url = server.url("public").replace("/erp_ai_tests?", "/no_such_erp?")
    with pytest.raises(StorageError) as caught:
        open_demo_erp(url)
    assert_one_clear_line(
        caught.value, "Cannot open the ERP database", "/no_such_erp", "does not exist", "createdb"
    )


def test_an_unknown_user_is_a_refused_login(server: PostgresServer) -> None:
    url = server.url("public").replace("postgres@", "nadie@")
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
    server: PostgresServer, postgres_url: str
) -> None:
    role, schema = f"lector_{uuid.uuid4().hex[:8]}", postgres_url.rsplit("%3D", 1)[1]
    server.admin(f'CREATE ROLE "{role}" LOGIN')
    server.admin(f'GRANT USAGE ON SCHEMA "{schema}" TO "{role}"')  # may look, may not create
    with pytest.raises(StorageError) as caught:
        MemoryStore(postgres_url.replace("postgres@", f"{role}@"))
    assert_one_clear_line(caught.value, "refuses this user", "permission denied", "Grant the user")


@pytest.fixture
def quick_lock_timeout(monkeypatch: pytest.MonkeyPatch) -> None:
    """Engines made from now on give up on a lock after 0.3 s instead of 30 s."""
    monkeypatch.setattr(storage, "BUSY_TIMEOUT_SECONDS", 0.3)


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
    quick_lock_timeout: None, locked_conversation: str
) -> None:
    with MemoryStore(locked_conversation) as store:
        with pytest.raises(StorageError) as caught:
            store.record_turn("c1", TurnRecord(messages=[MessageIn(role="user", content="perdido")]))
        assert_one_clear_line(caught.value, "Cannot write the conversation memory", "stayed locked", "0.3 s")
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
