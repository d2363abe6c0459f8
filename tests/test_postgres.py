"""The suite's own PostgreSQL (``tests/postgres.py``): if missing, it skips locally and fails in CI."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests import postgres

ROOT = Path(__file__).resolve().parent.parent


def test_without_postgresql_the_server_says_to_run_the_ensure_script(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(postgres, "_server", None)
    monkeypatch.setattr(postgres, "find_bin_dir", lambda: None)

    with pytest.raises(postgres.PostgresUnavailable, match=r"not installed: run scripts/ensure_postgres\.sh"):
        postgres._acquire_server()


@pytest.mark.parametrize(
    ("environment", "required"),
    [({}, False), ({"CI": "true"}, True), ({"ERP_AI_REQUIRE_POSTGRES": "1"}, True), ({"CI": ""}, False)],
)
def test_a_missing_postgresql_fails_in_ci_and_skips_elsewhere(
    monkeypatch: pytest.MonkeyPatch, environment: dict[str, str], required: bool
) -> None:
    for name in ("CI", "ERP_AI_REQUIRE_POSTGRES"):
        monkeypatch.delenv(name, raising=False)
    for name, value in environment.items():
        monkeypatch.setenv(name, value)

    assert postgres.postgres_required() is required


def test_the_ensure_script_is_idempotent_where_postgresql_is_installed(
    postgres_server: postgres.PostgresServer,
) -> None:
    done = subprocess.run(
        ["bash", str(ROOT / "scripts" / "ensure_postgres.sh")], capture_output=True, text=True, check=False
    )
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")


def test_each_test_gets_an_empty_database_of_its_own(postgres_server: postgres.PostgresServer) -> None:
    from sqlalchemy import inspect

    from shared.erp.storage import make_engine

    first, second = postgres_server.create_schema(), postgres_server.create_schema()
    assert first != second
    engine = make_engine(postgres_server.url(first))
    try:
        with engine.begin() as connection:
            connection.exec_driver_sql("CREATE TABLE only_in_first (id INTEGER)")
        assert inspect(engine).get_table_names() == ["only_in_first"]
    finally:
        engine.dispose()
    other = make_engine(postgres_server.url(second))
    try:
        assert inspect(other).get_table_names() == []
    finally:
        other.dispose()
