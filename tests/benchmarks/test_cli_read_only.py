"""Reading the ERP needs no write access: `erp-ai ops` on a database file (and directory) this process may not
write opens it read-only, without creating tables, switching to WAL, seeding or leaving a -wal/-shm file.

The tests run as any user, root included (root may write any file): they make ``os.access`` answer as it
would for a user without write permission on the copy, and check that the file is left byte for byte.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
from pathlib import Path

import pytest
from typer.testing import CliRunner

from benchmarks.cli import app
from shared.erp.database import open_demo_erp, open_erp

runner = CliRunner()


@pytest.fixture
def read_only_copy(erp_db_url: str, erp: object, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A consistent copy of the demo ERP (WAL mode, no -wal/-shm file) in a directory nobody may write."""
    directory = tmp_path / "ro"
    directory.mkdir()
    copy = directory / "erp.sqlite3"
    source, target = sqlite3.connect(erp_db_url.removeprefix("sqlite:///")), sqlite3.connect(copy)
    with source, target:
        source.backup(target)
    source.close()
    target.close()
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
    assert "ventas_anuales" in {spec["name"] for spec in json.loads(listed.stdout)}
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
    from shared.errors import ErpAiError

    connection = sqlite3.connect(read_only_copy)
    with connection:
        connection.execute("DELETE FROM erp_settings")
    connection.close()

    with pytest.raises(ErpAiError, match="read-only"):
        open_demo_erp(f"sqlite:///{read_only_copy}")
