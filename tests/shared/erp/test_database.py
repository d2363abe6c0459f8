"""Opening the ERP: ``open_erp`` opens a database as it is, ``open_demo_erp`` creates and seeds the demo."""

from __future__ import annotations

import sqlite3
from datetime import date
from pathlib import Path

import pytest
from sqlalchemy import func, inspect, select, text, update

from shared.erp.database import (
    DB_URL_ENV,
    DEMO_TODAY,
    Erp,
    default_db_url,
    make_engine,
    missing_erp_tables,
    open_demo_erp,
    open_erp,
    read_today,
)
from shared.erp.models import ErpSetting, Invoice
from shared.errors import ConfigurationError, StorageError


def table_names(path: Path) -> list[str]:
    with sqlite3.connect(path) as connection:
        rows = connection.execute("SELECT name FROM sqlite_master WHERE type = 'table'").fetchall()
    connection.close()
    return sorted(name for (name,) in rows)


def own_database(path: Path) -> str:
    """An embedder's database: its own table, nothing of the demo."""
    with sqlite3.connect(path) as connection:
        connection.execute("CREATE TABLE pedidos (id INTEGER PRIMARY KEY, total INTEGER)")
        connection.execute("INSERT INTO pedidos VALUES (1, 500)")
    connection.close()
    return f"sqlite:///{path}"


# -- open_demo_erp -------------------------------------------------------------------------------------------


def test_open_demo_erp_seeds_a_new_database_once_and_keeps_its_stored_date(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'erp.sqlite3'}"
    first = open_demo_erp(url)
    with first.session() as session:
        invoices = session.scalar(select(func.count(Invoice.id)))
    assert first.today == DEMO_TODAY == date(2026, 11, 30)
    first.engine.dispose()
    as_is = open_erp(url)
    try:
        assert as_is.today == DEMO_TODAY
        with as_is.session() as session:
            session.execute(update(ErpSetting).where(ErpSetting.key == "today").values(value="2027-01-15"))
        assert read_today(as_is.engine) == date(2027, 1, 15)
    finally:
        as_is.engine.dispose()
    reopened = open_demo_erp(url)
    try:
        with reopened.session() as session:
            assert session.scalar(select(func.count(Invoice.id))) == invoices
        assert reopened.today == date(2027, 1, 15)
    finally:
        reopened.engine.dispose()


def test_open_demo_erp_refuses_a_database_that_is_not_the_demo_and_leaves_it_alone(tmp_path: Path) -> None:
    path = tmp_path / "mine.sqlite3"
    url = own_database(path)
    with pytest.raises(ConfigurationError, match=r"not the demo ERP.*pedidos"):
        open_demo_erp(url)
    assert table_names(path) == ["pedidos"]


def test_open_demo_erp_without_url_uses_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    url = f"sqlite:///{tmp_path / 'from-env.sqlite3'}"
    monkeypatch.setenv(DB_URL_ENV, url)
    assert default_db_url() == url
    erp = open_demo_erp()
    try:
        assert str(erp.engine.url) == url
        assert (tmp_path / "from-env.sqlite3").exists()
    finally:
        erp.engine.dispose()


# -- open_erp ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("in_memory", [False, True], ids=["empty file", "in memory"])
def test_open_erp_on_an_empty_database_creates_no_table(tmp_path: Path, in_memory: bool) -> None:
    path = tmp_path / "empty.sqlite3"
    sqlite3.connect(path).close()
    erp = open_erp("sqlite://" if in_memory else f"sqlite:///{path}")
    try:
        assert erp.today == date.today()
        assert inspect(erp.engine).get_table_names() == []
    finally:
        erp.engine.dispose()
    assert table_names(path) == []


def test_open_erp_on_an_own_database_writes_nothing_and_today_is_the_real_date(tmp_path: Path) -> None:
    path = tmp_path / "mine.sqlite3"
    erp = open_erp(own_database(path))
    demo = open_demo_erp("sqlite://")
    try:
        assert erp.today == date.today()
        assert erp.fixed_today is None and read_today(erp.engine) is None  # not the demo: no stored today
        with erp.session() as session:
            assert session.scalar(text("SELECT total FROM pedidos")) == 500
        assert missing_erp_tables(erp) == sorted(
            ["customers", "erp_settings", "erp_users", "invoice_lines", "invoices", "products"]
        )
        assert missing_erp_tables(demo) == []
    finally:
        erp.engine.dispose()
        demo.engine.dispose()
    assert table_names(path) == ["pedidos"]


def test_open_erp_never_creates_a_missing_database_file(tmp_path: Path) -> None:
    missing = tmp_path / "nowhere.sqlite3"
    with pytest.raises(StorageError) as caught:
        open_erp(f"sqlite:///{missing}")
    message = str(caught.value)
    assert "\n" not in message
    assert str(missing) in message and "does not exist" in message and "open_demo_erp" in message
    assert not missing.exists()


# -- Erp -----------------------------------------------------------------------------------------------------


def test_an_erp_without_a_fixed_date_reads_the_real_date_on_every_access(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import shared.erp.database as database

    engine = make_engine("sqlite://")
    erp = Erp(engine)
    days = iter([date(2031, 3, 9), date(2031, 3, 10)])

    class Clock(date):
        @classmethod
        def today(cls) -> date:
            return next(days)

    monkeypatch.setattr(database, "date", Clock)
    assert (erp.today, erp.today) == (date(2031, 3, 9), date(2031, 3, 10))  # a server runs past midnight
    assert Erp(engine, today=date(2026, 1, 2)).today == date(2026, 1, 2)
    engine.dispose()


def test_default_url_is_a_sqlite_file_under_dot_erp_ai(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(DB_URL_ENV, raising=False)
    monkeypatch.chdir(tmp_path)
    assert default_db_url() == "sqlite:///.erp-ai/erp.sqlite3"
    assert (tmp_path / ".erp-ai").is_dir()
