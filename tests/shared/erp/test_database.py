"""Opening the ERP: the first open creates and seeds, later opens only read; the URL may come from the env."""

from __future__ import annotations

from datetime import date
from pathlib import Path

import pytest
from sqlalchemy import func, select, update

from shared.erp.database import DB_URL_ENV, default_db_url, open_erp, read_today
from shared.erp.models import ErpSetting, Invoice


def test_open_erp_seeds_a_new_database_once_and_reopens_it(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'erp.sqlite3'}"
    first = open_erp(url)
    with first.session() as session:
        invoices = session.scalar(select(func.count(Invoice.id)))
    first.engine.dispose()

    second = open_erp(url)
    try:
        with second.session() as session:
            assert session.scalar(select(func.count(Invoice.id))) == invoices
        assert second.today == date(2026, 11, 30)
    finally:
        second.engine.dispose()


def test_today_is_read_from_the_database(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'erp.sqlite3'}"
    open_erp(url).engine.dispose()
    erp = open_erp(url)
    try:
        with erp.session() as session:
            session.execute(update(ErpSetting).where(ErpSetting.key == "today").values(value="2027-01-15"))
        assert read_today(erp.engine) == date(2027, 1, 15)
    finally:
        erp.engine.dispose()


def test_open_erp_without_url_uses_the_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    url = f"sqlite:///{tmp_path / 'from-env.sqlite3'}"
    monkeypatch.setenv(DB_URL_ENV, url)
    assert default_db_url() == url
    erp = open_erp()
    try:
        assert str(erp.engine.url) == url
        assert (tmp_path / "from-env.sqlite3").exists()
    finally:
        erp.engine.dispose()


def test_default_url_is_a_sqlite_file_under_dot_erp_ai(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(DB_URL_ENV, raising=False)
    monkeypatch.chdir(tmp_path)
    assert default_db_url() == "sqlite:///.erp-ai/erp.sqlite3"
    assert (tmp_path / ".erp-ai").is_dir()
