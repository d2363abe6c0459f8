"""Which ERP a command opens: the demo by default, ``--db-url`` as it is, ``--demo`` to seed a new database.

The rule (``erp-ai ask --help``): without ``--db-url`` (or ``ERP_AI_DB_URL``) the ERP is the demo in
``./.erp-ai/erp.sqlite3``, created and seeded on first use; with one, the database is opened as it is and
nothing is created in it; ``--demo`` creates and seeds the demo there if the database is new. A database
that holds other tables is never seeded.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from typer.testing import CliRunner

from benchmarks.cli import app

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


def test_a_url_to_a_missing_database_is_refused_and_nothing_is_created(
    tmp_path: Path, no_db_env: dict[str, str | None]
) -> None:
    path = tmp_path / "nueva.sqlite3"
    result = runner.invoke(app, [*SALES_2025, "--db-url", f"sqlite:///{path}"], env=no_db_env)

    assert result.exit_code == 2
    message = " ".join(result.output.split())
    assert "does not exist" in message and "--demo" in message and "Traceback" not in result.output
    assert not path.exists()


def test_demo_seeds_a_new_database_at_the_url(tmp_path: Path, no_db_env: dict[str, str | None]) -> None:
    path = tmp_path / "nueva.sqlite3"
    result = runner.invoke(app, [*SALES_2025, "--db-url", f"sqlite:///{path}", "--demo"], env=no_db_env)

    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["total"] == 850_000_000
    again = runner.invoke(app, [*SALES_2025, "--db-url", f"sqlite:///{path}"], env=no_db_env)
    assert again.exit_code == 0, again.output  # now the demo: opened as it is
    assert json.loads(again.stdout)["total"] == 850_000_000


@pytest.mark.parametrize("demo", [[], ["--demo"]], ids=["as-is", "demo"])
def test_an_existing_database_of_yours_is_never_seeded(
    demo: list[str], tmp_path: Path, no_db_env: dict[str, str | None]
) -> None:
    path = tmp_path / "mia.sqlite3"
    url = own_database(path)
    result = runner.invoke(app, [*SALES_2025, "--db-url", url, *demo], env=no_db_env)

    assert result.exit_code == 2
    message = " ".join(result.output.split())
    assert "Traceback" not in result.output
    assert ("not the demo ERP" if demo else "has no ERP sales tables") in message
    assert tables(path) == ["pedidos"]


def test_the_rule_is_in_the_help() -> None:
    result = runner.invoke(app, ["ask", "--help"], env={"COLUMNS": "200"})

    text = " ".join(result.output.split())
    assert "opened as it is" in text and "--demo" in text and "seeded on first use" in text
