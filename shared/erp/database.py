"""Opening the demo ERP: engine, sessions, default location, first-use seeding."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path

from sqlalchemy import Engine, create_engine, event, select
from sqlalchemy.orm import Session, sessionmaker

from shared.erp.models import ErpSetting

DEMO_TODAY = date(2026, 11, 30)
"""The demo ERP's "today". The seed stores it in the database; code reads it from there."""

DEFAULT_DIR = Path(".erp-ai")
DB_URL_ENV = "ERP_AI_DB_URL"


def default_db_url() -> str:
    """``$ERP_AI_DB_URL`` or a SQLite file under ``./.erp-ai/`` (created on demand)."""
    url = os.environ.get(DB_URL_ENV)
    if url:
        return url
    DEFAULT_DIR.mkdir(parents=True, exist_ok=True)
    return f"sqlite:///{DEFAULT_DIR / 'erp.sqlite3'}"


def make_engine(url: str) -> Engine:
    """Create an engine; SQLite gets WAL, a busy timeout and foreign keys, other dialects stay untouched."""
    if url.startswith("sqlite"):
        engine = create_engine(url, connect_args={"check_same_thread": False, "timeout": 30})

        @event.listens_for(engine, "connect")
        def _sqlite_pragmas(dbapi_connection, _record):  # type: ignore[no-untyped-def]
            cursor = dbapi_connection.cursor()
            if ":memory:" not in url and url not in ("sqlite://", "sqlite:///"):
                cursor.execute("PRAGMA journal_mode=WAL")
                # WAL + NORMAL is the pairing SQLite recommends: commits stop waiting for fsync and the
                # database stays consistent; a power cut (not a crash) can lose only the last commits.
                cursor.execute("PRAGMA synchronous=NORMAL")
            cursor.execute("PRAGMA busy_timeout=30000")
            cursor.execute("PRAGMA foreign_keys=ON")
            cursor.close()

        return engine
    return create_engine(url, pool_pre_ping=True)


@dataclass
class Erp:
    """A handle on an ERP database: the engine, a session factory and the ERP's today."""

    engine: Engine
    today: date = DEMO_TODAY
    _sessions: sessionmaker[Session] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self._sessions = sessionmaker(self.engine, expire_on_commit=False)

    @contextmanager
    def session(self) -> Iterator[Session]:
        """A session that commits on success and rolls back on error."""
        with self._sessions.begin() as session:
            yield session


def read_today(engine: Engine) -> date:
    """The ERP's "today" as stored by the seed (``erp_settings.today``); :data:`DEMO_TODAY` if absent."""
    with Session(engine) as session:
        value = session.scalar(select(ErpSetting.value).where(ErpSetting.key == "today"))
    return date.fromisoformat(value) if value else DEMO_TODAY


def open_erp(url: str | None = None) -> Erp:
    """Open the ERP at ``url`` (default :func:`default_db_url`), creating and seeding it on first use.

    Seeding is idempotent, so opening an existing database only reads its ``today``.
    """
    # Imported here: the seed module reads DEMO_TODAY from this module.
    from shared.erp.seed import seed_erp

    engine = make_engine(url or default_db_url())
    try:
        seed_erp(engine)
        today = read_today(engine)
    except BaseException:  # e.g. a database seeded by another version: do not leak the connection pool
        engine.dispose()
        raise
    return Erp(engine=engine, today=today)
