"""Opening an ERP database: :func:`open_erp` opens one as it is, :func:`open_demo_erp` creates the demo.

:func:`open_erp` never creates anything and its ``today`` is the real date (unless it is the demo).
:func:`open_demo_erp` seeds on first use (race-free across processes) and its ``today`` is the seeded
:data:`DEMO_TODAY`. A SQLite file this process may not write is opened read-only by both.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import date
from pathlib import Path
from urllib.parse import quote

from sqlalchemy import Engine, inspect, select
from sqlalchemy.engine import URL
from sqlalchemy.orm import Session, sessionmaker

from shared.erp.demo_catalog import DEMO_TODAY
from shared.erp.models import ErpBase, ErpSetting
from shared.erp.storage import (
    BUSY_TIMEOUT_SECONDS,
    is_memory_sqlite,
    make_engine,
    sqlite_file,
    storage_errors,
)
from shared.errors import StorageError

__all__ = [
    "BUSY_TIMEOUT_SECONDS",
    "DB_URL_ENV",
    "DEMO_TODAY",
    "Erp",
    "default_db_url",
    "make_engine",
    "missing_erp_tables",
    "open_demo_erp",
    "open_erp",
    "read_only_sqlite_url",
    "read_today",
]

DEFAULT_DIR = Path(".erp-ai")
DB_URL_ENV = "ERP_AI_DB_URL"


def default_db_url() -> str:
    """``$ERP_AI_DB_URL`` or a SQLite file under ``./.erp-ai/`` (created on demand)."""
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


class Erp:
    """A handle on an ERP database: the engine, a session factory and the ERP's today."""

    def __init__(self, engine: Engine, today: date | None = None) -> None:
        self.engine = engine
        self.fixed_today = today
        """The fixed date :attr:`today` returns, or ``None`` for the real date."""
        self._sessions = sessionmaker(engine, expire_on_commit=False)

    def __repr__(self) -> str:
        return f"Erp(engine={self.engine!r}, today={self.fixed_today!r})"

    @property
    def today(self) -> date:
        """The date operations and conversations treat as today ("este año", "el mes pasado")."""
        return self.fixed_today if self.fixed_today is not None else date.today()

    @contextmanager
    def session(self) -> Iterator[Session]:
        """A session that commits on success and rolls back on error."""
        with self._sessions.begin() as session:
            yield session


def read_today(engine: Engine) -> date | None:
    """The "today" the demo seed stored (``erp_settings.today``); ``None`` if the database is not the demo."""
    with engine.connect() as connection:
        if not inspect(connection).has_table(ErpSetting.__tablename__):
            return None
        value = connection.scalar(select(ErpSetting.value).where(ErpSetting.key == "today"))
    return date.fromisoformat(value) if value else None


def missing_erp_tables(erp: Erp) -> list[str]:
    """The tables of the ERP schema (:mod:`shared.erp.models`) that ``erp``'s database lacks, sorted."""
    with storage_errors(erp.engine.url, "read the ERP database", DB_URL_ENV):
        present = set(inspect(erp.engine).get_table_names())
    return sorted(set(ErpBase.metadata.tables) - present)


def open_erp(url: str | None = None) -> Erp:
    """Open the existing ERP database at ``url`` (default :func:`default_db_url`) as it is."""
    return _open(url, lambda engine, read_only: _require_existing_sqlite_file(engine.url), None)


def open_demo_erp(url: str | None = None) -> Erp:
    """Open the demo ERP at ``url`` (default :func:`default_db_url`), creating and seeding it on first use."""
    # Imported on use: the seed (the demo's invoices) is only read when a demo ERP is opened.
    from shared.erp.seed import seed_erp

    def seed(engine: Engine, read_only: bool) -> None:
        if read_only:
            _require_seeded(engine)
        else:
            seed_erp(engine)

    return _open(url, seed, DEMO_TODAY)


def _open(url: str | None, setup: Callable[[Engine, bool], None], default_today: date | None) -> Erp:
    """An :class:`Erp` on ``url`` (read-only when it is a SQLite file this process may not write), after
    ``setup(engine, read_only)``; its today is the stored one, else ``default_today``. Failures of the
    database become :class:`StorageError`; the engine is disposed on any failure."""
    engine = make_engine(url or default_db_url())
    try:
        read_only = read_only_sqlite_url(engine.url)
        if read_only is not None:
            engine.dispose()
            engine = make_engine(read_only)
        with storage_errors(engine.url, "open the ERP database", DB_URL_ENV):
            setup(engine, read_only is not None)
            today = read_today(engine)
    except BaseException:  # e.g. a database seeded by another version: do not leak the connection pool
        engine.dispose()
        raise
    return Erp(engine=engine, today=today or default_today)


def read_only_sqlite_url(url: URL) -> URL | None:
    """``url`` opened read-only, when it names an existing SQLite file this process may not write (the file
    or its directory); ``None`` otherwise."""
    if url.get_backend_name() != "sqlite" or is_memory_sqlite(url):
        return None
    database = url.database or ""
    if database.startswith("file:") or url.query.get("uri"):
        return None
    path = Path(database).absolute()
    if not path.is_file() or (os.access(path, os.W_OK) and os.access(path.parent, os.W_OK)):
        return None
    query = {"mode": "ro", "uri": "true"}
    if not any(path.with_name(path.name + suffix).exists() for suffix in ("-wal", "-shm", "-journal")):
        query["immutable"] = "1"
    return url.set(database=f"file:{quote(str(path))}", query=query)


def _require_seeded(engine: Engine) -> None:
    """Refuse a read-only database that is not the seeded demo: it cannot be seeded."""
    from shared.erp.seed import SEED_VERSION, seeded_version

    with engine.connect() as connection:
        seeded = inspect(connection).has_table(ErpSetting.__tablename__) and seeded_version(connection)
    if seeded != SEED_VERSION:
        path = sqlite_file(engine.url)
        state = f"seeded by seed version {seeded!r}" if seeded else "not the seeded demo ERP"
        raise StorageError(
            f"Cannot open the demo ERP: {path} is read-only and {state}, so it cannot be seeded. Make the "
            f"file and its directory writable, or set {DB_URL_ENV} to another database."
        )


def _require_existing_sqlite_file(url: URL) -> None:
    """Refuse a SQLite file that does not exist: connecting would create it, empty."""
    if url.get_backend_name() != "sqlite" or is_memory_sqlite(url):
        return
    path = sqlite_file(url)
    if not path.exists():
        raise StorageError(
            f"Cannot open the ERP database: {path} does not exist. Set {DB_URL_ENV} to an existing ERP "
            "database, or create the demo ERP there with open_demo_erp() (erp-ai ... --demo)."
        )
