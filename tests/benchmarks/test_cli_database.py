"""Which ERP a command opens: the demo by default, ``--db-url`` as it is, ``--demo`` to seed a new database;
and reading needs no write access.

The rule (``erp-ai ask --help``): without ``--db-url`` (or ``ERP_AI_DB_URL``) the ERP is the demo in
``./.erp-ai/erp.sqlite3``, created and seeded on first use; with one, the database is opened as it is and
nothing is created in it; ``--demo`` creates and seeds the demo there if the database is new. A database
that holds other tables is never seeded. A database file (and directory) the process may not write is opened
read-only, without creating tables, switching to WAL, seeding or leaving a -wal/-shm file; the tests run as
any user, root included, so they make ``os.access`` answer as it would for a user without write permission.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
from pathlib import Path

import pytest
from typer.testing import CliRunner

from benchmarks.cli.app import app
from shared.erp.database import open_demo_erp, open_erp
from shared.errors import ErpAiError
from tests.benchmarks.bench_fakes import copy_database

runner = CliRunner()

SALES_2025 = ["ops", "call", "ventas_anuales", '{"anio": 2025}']


@pytest.fixture
def no_db_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str | None]:
    """Run in an empty directory with no database settings in the environment."""
    monkeypatch.chdir(tmp_path)
    return {"ERP_AI_DB_URL": None, "ERP_AI_MEMORY_URL": None}


def tables(path: Path) -> list[str]:
    connection = sqlite3.connect(path)
    try:
        rows = connection.execute("SELECT name FROM sqlite_master WHERE type = 'table'").fetchall()
    finally:
        connection.close()
    return sorted(name for (name,) in rows)


def own_database(path: Path) -> str:
    connection = sqlite3.connect(path)
    with connection:
        connection.execute("CREATE TABLE pedidos (id INTEGER PRIMARY KEY, total INTEGER)")
    connection.close()
    return f"sqlite:///{path}"


def test_without_a_url_the_demo_is_created_in_dot_erp_ai_on_first_use(
    tmp_path: Path, no_db_env: dict[str, str | None]
) -> None:
    result = runner.invoke(app, SALES_2025, env=no_db_env)

    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["total"] == 850_000_000
    assert "invoices" in tables(tmp_path / ".erp-ai" / "erp.sqlite3")


def test_demo_seeds_a_new_database_at_the_url(tmp_path: Path, no_db_env: dict[str, str | None]) -> None:
    path = tmp_path / "nueva.sqlite3"
    result = runner.invoke(app, [*SALES_2025, "--db-url", f"sqlite:///{path}", "--demo"], env=no_db_env)

    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["total"] == 850_000_000
    again = runner.invoke(app, [*SALES_2025, "--db-url", f"sqlite:///{path}"], env=no_db_env)
    assert again.exit_code == 0, again.output  # now the demo: opened as it is
    assert json.loads(again.stdout)["total"] == 850_000_000


@pytest.mark.parametrize(
    ("own_tables", "demo", "says"),
    [
        (False, [], ["does not exist", "--demo"]),
        (True, [], ["has no ERP sales tables"]),
        (True, ["--demo"], ["not the demo ERP"]),
    ],
    ids=["missing", "yours-as-is", "yours-with-demo"],
)
def test_a_database_that_is_missing_or_yours_is_refused_and_never_created_or_seeded(
    own_tables: bool, demo: list[str], says: list[str], tmp_path: Path, no_db_env: dict[str, str | None]
) -> None:
    path = tmp_path / "mia.sqlite3"
    url = own_database(path) if own_tables else f"sqlite:///{path}"
    result = runner.invoke(app, [*SALES_2025, "--db-url", url, *demo], env=no_db_env)

    assert result.exit_code == 2
    message = " ".join(result.output.split())
    assert all(text in message for text in says) and "Traceback" not in result.output
    assert (tables(path) if own_tables else path.exists()) == (["pedidos"] if own_tables else False)


@pytest.fixture
def read_only_copy(erp_db_url: str, erp: object, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A consistent copy of the demo ERP (WAL mode, no -wal/-shm file) in a directory nobody may write."""
    directory = tmp_path / "ro"
    directory.mkdir()
    copy = directory / "erp.sqlite3"
    copy_database(erp_db_url, copy)
    assert not list(directory.glob("*-*"))
    real_access = os.access

    def access(path: str | os.PathLike[str], mode: int, **kwargs: object) -> bool:
        if mode & os.W_OK and Path(path).resolve() in (directory.resolve(), copy.resolve()):
            return False
        return real_access(path, mode, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "access", access)
    return copy


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_ops_list_and_call_read_a_database_they_may_not_write(read_only_copy: Path) -> None:
    before = digest(read_only_copy)
    url = f"sqlite:///{read_only_copy}"

    listed = runner.invoke(app, ["ops", "list", "--json", "--db-url", url])
    called = runner.invoke(app, ["ops", "call", "ventas_anuales", '{"anio": 2025}', "--db-url", url])

    assert listed.exit_code == 0, listed.output
    names = {spec["name"] for spec in json.loads(listed.stdout)}
    assert {"ventas_anuales", "mejor_cliente", "compras_cliente", "buscar_cliente"} <= names
    assert called.exit_code == 0, called.output
    assert json.loads(called.stdout)["total"] == 850_000_000
    assert digest(read_only_copy) == before
    assert sorted(p.name for p in read_only_copy.parent.iterdir()) == ["erp.sqlite3"]


def test_the_demo_opens_read_only_when_it_is_already_seeded(read_only_copy: Path) -> None:
    before = digest(read_only_copy)

    erp = open_demo_erp(f"sqlite:///{read_only_copy}")
    try:
        assert erp.today.isoformat() == "2026-11-30"  # the seed's stored today
        assert erp.engine.url.query.get("mode") == "ro"
    finally:
        erp.engine.dispose()
    assert digest(read_only_copy) == before


def test_a_writable_database_is_opened_as_it_is(erp_db_url: str, erp: object) -> None:
    handle = open_erp(erp_db_url)
    try:
        assert handle.engine.url.render_as_string() == erp_db_url
    finally:
        handle.engine.dispose()


def test_a_read_only_file_that_is_not_the_seeded_demo_is_refused_not_seeded(read_only_copy: Path) -> None:
    connection = sqlite3.connect(read_only_copy)
    with connection:
        connection.execute("DELETE FROM erp_settings")
    connection.close()

    with pytest.raises(ErpAiError, match="read-only"):
        open_demo_erp(f"sqlite:///{read_only_copy}")
