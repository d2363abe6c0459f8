"""Opening the demo ERP: engine, sessions, default location, first-use seeding."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path

from sqlalchemy import Engine, select
from sqlalchemy.orm import Session, sessionmaker

from shared.erp.models import ErpSetting
from shared.erp.storage import BUSY_TIMEOUT_SECONDS, make_engine, storage_errors
from shared.errors import StorageError

__all__ = [
    "BUSY_TIMEOUT_SECONDS",
    "DB_URL_ENV",
    "DEMO_TODAY",
    "Erp",
    "default_db_url",
    "make_engine",
    "open_erp",
    "read_today",
]

DEMO_TODAY = date(2026, 11, 30)
"""The demo ERP's "today". The seed stores it in the database; code reads it from there."""

DEFAULT_DIR = Path(".erp-ai")
DB_URL_ENV = "ERP_AI_DB_URL"


def default_db_url() -> str:
    """``$ERP_AI_DB_URL`` or a SQLite file under ``./.erp-ai/`` (created on demand).

    Raises :class:`~shared.errors.StorageError` if that directory cannot be created.
    """
    url = os.environ.get(DB_URL_ENV)
    if url:
        return url
    try:
        DEFAULT_DIR.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise StorageError(
            f"Cannot create the directory {DEFAULT_DIR.absolute()} for the default database "
            f"({exc.strerror or exc}). Run from a writable directory, or set {DB_URL_ENV}."
        ) from exc
    return f"sqlite:///{DEFAULT_DIR / 'erp.sqlite3'}"


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

    Seeding is idempotent and race-free (:func:`~shared.erp.storage.setup_transaction`), so any number of
    processes may open the same fresh database at once; opening a seeded database only reads its ``today``.

    Raises :class:`~shared.errors.ConfigurationError` for a bad URL, a missing driver or a database seeded by
    another seed version, and :class:`~shared.errors.StorageError` (one line: what is wrong, what to do) when
    the database cannot be opened, created or read: read-only, corrupt, missing directory, locked, down.
    """
    # Imported here: the seed module reads DEMO_TODAY from this module.
    from shared.erp.seed import seed_erp

    engine = make_engine(url or default_db_url())
    try:
        with storage_errors(engine.url, "open the ERP database", DB_URL_ENV):
            seed_erp(engine)
            today = read_today(engine)
    except BaseException:  # e.g. a database seeded by another version: do not leak the connection pool
        engine.dispose()
        raise
    return Erp(engine=engine, today=today)
