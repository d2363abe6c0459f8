"""Invariants of the demo data: the article's figures, realism, determinism, idempotence."""

from __future__ import annotations

import hashlib
import json
import re
from datetime import date
from typing import Any

import pytest
from sqlalchemy import Engine, func, inspect, select
from sqlalchemy.orm import Session

from shared.erp import seed as seed_module
from shared.erp.database import DEMO_TODAY, Erp, make_engine, open_demo_erp
from shared.erp.models import (
    Customer,
    ErpBase,
    ErpSetting,
    ErpUser,
    Invoice,
    InvoiceLine,
    Product,
)
from shared.erp.seed import generate_rows, ruc_check_digit, seed_erp
from shared.errors import ConfigurationError
from shared.memory.store import MemoryStore, open_memory_store
from shared.memory.tables import MemoryBase
from shared.text import fold
from tests.postgres import run_processes


def sales_by_customer(erp: Erp, year: int, vendedor: str | None = None) -> list[tuple[str, int]]:
    """Non-cancelled sales of ``year`` per customer (of ``vendedor``'s customers, if given), largest first."""
    query = (
        select(Customer.name, func.sum(Invoice.total))
        .join(Invoice, Invoice.customer_id == Customer.id)
        .where(
            Invoice.status != "cancelled",
            Invoice.issue_date >= date(year, 1, 1),
            Invoice.issue_date <= date(year, 12, 31),
        )
        .group_by(Customer.name)
    )
    if vendedor is not None:
        query = query.where(Customer.vendedor == vendedor)
    with erp.session() as session:
        rows = session.execute(query).all()
    return sorted(((name, int(total)) for name, total in rows), key=lambda r: -r[1])


def _dump(engine: Engine) -> dict[str, list[tuple[Any, ...]]]:
    with engine.connect() as conn:
        return {
            table.name: [
                tuple(row) for row in conn.execute(select(table).order_by(*table.primary_key.columns))
            ]
            for table in ErpBase.metadata.sorted_tables
        }


# -- the article's figures -----------------------------------------------------------------------------------
def test_2025_sells_exactly_850_million_and_empresa_abc_is_its_best_customer_with_120_million(
    erp: Erp,
) -> None:
    ranking = sales_by_customer(erp, 2025)
    assert sum(total for _, total in ranking) == 850_000_000
    assert ranking[0] == ("Empresa ABC", 120_000_000)
    assert ranking[1][1] < 120_000_000


def test_every_year_has_a_single_best_customer_and_the_other_years_vary(erp: Erp) -> None:
    rankings = {year: sales_by_customer(erp, year) for year in (2023, 2024, 2025, 2026)}
    assert all(len(ranking) >= 30 and ranking[0][1] > ranking[1][1] for ranking in rankings.values())
    totals = {sum(t for _, t in rankings[year]) for year in (2023, 2024, 2026)}
    assert len(totals) == 3 and all(300_000_000 < t < 1_200_000_000 for t in totals)
    assert len({ranking[0][0] for ranking in rankings.values()}) > 1


# -- shape and realism ---------------------------------------------------------------------------------------
def test_row_counts_meet_the_minimums(erp: Erp) -> None:
    with erp.session() as session:
        counts = {
            model: session.scalar(select(func.count()).select_from(model)) for model in (Customer, Product)
        }
        invoices = session.scalar(select(func.count(Invoice.id)))
        lines = session.scalar(select(func.count(InvoiceLine.id)))
        categories = session.scalar(select(func.count(func.distinct(Product.category))))
    assert counts[Customer] >= 30
    assert counts[Product] >= 50
    assert invoices is not None and invoices >= 5000
    assert lines is not None and lines > invoices
    assert categories is not None and categories >= 5


def test_data_spans_2023_01_to_the_demo_today(erp: Erp) -> None:
    with erp.session() as session:
        first, last = session.execute(
            select(func.min(Invoice.issue_date), func.max(Invoice.issue_date))
        ).one()
        today = session.scalar(select(ErpSetting.value).where(ErpSetting.key == "today"))
    assert date(2023, 1, 1) <= first <= date(2023, 1, 15)
    assert date(2026, 11, 1) <= last <= date(2026, 11, 30)
    assert today == "2026-11-30"
    assert erp.today == DEMO_TODAY == date(2026, 11, 30)


def test_invoice_totals_equal_the_sum_of_their_lines(erp: Erp) -> None:
    with erp.session() as session:
        line_sums = (
            select(InvoiceLine.invoice_id, func.sum(InvoiceLine.amount).label("amount"))
            .group_by(InvoiceLine.invoice_id)
            .subquery()
        )
        mismatches = session.scalar(
            select(func.count())
            .select_from(Invoice)
            .outerjoin(line_sums, line_sums.c.invoice_id == Invoice.id)
            .where((line_sums.c.amount.is_(None)) | (line_sums.c.amount != Invoice.total))
        )
        bad_lines = session.scalar(
            select(func.count()).where(InvoiceLine.amount != InvoiceLine.quantity * InvoiceLine.unit_price)
        )
        non_positive = session.scalar(
            select(func.count()).where((InvoiceLine.quantity < 1) | (InvoiceLine.unit_price <= 0))
        )
        # Lines sell at the year's list price, or (the line that closes a customer's year) at a modest
        # discount; never above the current list price, never below half of it.
        off_price = session.scalar(
            select(func.count())
            .select_from(InvoiceLine)
            .join(Product, Product.id == InvoiceLine.product_id)
            .where(
                (InvoiceLine.unit_price > Product.unit_price)
                | (InvoiceLine.unit_price * 2 < Product.unit_price)
            )
        )
    assert (mismatches, bad_lines, non_positive, off_price) == (0, 0, 0, 0)


def test_every_status_occurs_and_recent_invoices_are_more_often_pending(erp: Erp) -> None:
    with erp.session() as session:
        statuses = dict(session.execute(select(Invoice.status, func.count()).group_by(Invoice.status)).all())
        recent_pending = session.scalar(
            select(func.count()).where(Invoice.status == "pending", Invoice.issue_date >= date(2026, 10, 1))
        )
    assert set(statuses) == {"paid", "pending", "cancelled"}
    assert statuses["paid"] > statuses["pending"] > 0
    assert recent_pending is not None and recent_pending > 20


def test_customers_are_paraguayan_businesses_with_valid_rucs(erp: Erp) -> None:
    with erp.session() as session:
        customers = list(session.scalars(select(Customer)))
    names = [c.name for c in customers]
    assert "Empresa ABC" in names and "Distribuidora Ñandutí S.A." in names
    assert len(set(names)) == len(names)
    assert len({c.ruc for c in customers}) == len(customers)
    assert {"Asunción", "Ciudad del Este", "Encarnación"} <= {c.city for c in customers}
    for customer in customers:
        match = re.fullmatch(r"(800\d{5})-(\d)", customer.ruc)
        assert match, customer.ruc
        assert int(match.group(2)) == ruc_check_digit(match.group(1))
        assert customer.name_folded == fold(customer.name)
    # "abc" designates Empresa ABC alone, so a partial match is unambiguous.
    assert [c.name for c in customers if "abc" in c.name_folded] == ["Empresa ABC"]


@pytest.mark.parametrize(("number", "digit"), [("80009735", 1), ("80000001", 3), ("80012345", 0)])
def test_ruc_check_digit_follows_the_modulo_11_rule(number: str, digit: int) -> None:
    # 80009735: 5*2 + 3*3 + 7*4 + 9*5 + 8*9 = 164, 164 % 11 = 10, 11 - 10 = 1.
    # 80000001: 1*2 + 8*9 = 74, 74 % 11 = 8 → 3.   80012345: 122 % 11 = 1 → 0.
    assert ruc_check_digit(number) == digit


# -- salespeople ---------------------------------------------------------------------------------------------
_FIGURES_OF_SEED_VERSION_1 = {
    Customer: "03934685a2fc3191ea9225f82705385ca86c78adcdb5c3de35e28514b968a212",
    Product: "68e8598dc0db38c7b581e5a0564f13e6b6fb98b3599a50bfac605a3bce48baf7",
    Invoice: "925e34eba08453c612d0ea095eea5de4077901d2a7bc467829dce308b33314d2",
    InvoiceLine: "f320a3edea9d41096759bce926d16ef4972d38bc6fdb1b967b9f691ee25b6809",
}
"""SHA-256 of each table's generated rows (JSON, sorted keys) as seed version 1 wrote them."""


def test_salespeople_changed_no_generated_row() -> None:
    # Seed version 2 only adds users and customers.vendedor: every other value, and so every figure a
    # scenario or the README pins, is byte for byte what version 1 generated (the RNG stream is untouched).
    rows = generate_rows()
    fingerprints = {}
    for model in _FIGURES_OF_SEED_VERSION_1:
        data = [{k: v for k, v in row.items() if k != "vendedor"} for row in rows[model]]
        encoded = json.dumps(data, sort_keys=True, default=str, ensure_ascii=False).encode()
        fingerprints[model] = hashlib.sha256(encoded).hexdigest()
    assert fingerprints == _FIGURES_OF_SEED_VERSION_1


def test_salespeople_follow_the_territories() -> None:
    customers = generate_rows()[Customer]
    by_seller = {
        seller: {c["name"] for c in customers if c["vendedor"] == seller} for seller in ("ana", "bruno")
    }
    assert set(by_seller) == {c["vendedor"] for c in customers}  # the manager has no customers of their own
    assert len(by_seller["ana"]) >= 10 and len(by_seller["bruno"]) >= 10
    assert "Empresa ABC" in by_seller["ana"] and "Empresa ABC" not in by_seller["bruno"]
    assert "Importadora del Este S.A." in by_seller["bruno"]
    assert all(c["vendedor"] == "ana" for c in customers if c["city"] == "Asunción")
    assert all(c["vendedor"] == "bruno" for c in customers if c["city"] in {"Encarnación", "Ciudad del Este"})


# -- determinism and idempotence -----------------------------------------------------------------------------
def test_generation_is_pure() -> None:
    assert generate_rows() == generate_rows()


def test_two_fresh_seeds_hold_identical_rows(erp: Erp) -> None:
    fresh = make_engine("sqlite://")
    try:
        assert seed_erp(fresh) is True
        assert _dump(fresh) == _dump(erp.engine)
    finally:
        fresh.dispose()


def test_seeding_again_changes_nothing_even_after_losing_a_race(
    erp: Erp, monkeypatch: pytest.MonkeyPatch
) -> None:
    before = _dump(erp.engine)
    assert seed_erp(erp.engine) is False
    real = seed_module.seeded_version
    calls: list[int] = []

    def stale_first(session: Session) -> str | None:  # a concurrent seeder finished after the first look
        calls.append(1)
        return None if len(calls) == 1 else real(session)

    monkeypatch.setattr(seed_module, "seeded_version", stale_first)
    assert seed_erp(erp.engine) is False
    assert len(calls) == 2
    assert _dump(erp.engine) == before


def test_a_database_of_seed_version_1_is_refused_with_what_to_do(tmp_path: Any) -> None:
    # Version 1 had no users and no customers.vendedor; opening it must say what to delete, not fail on SQL.
    path = tmp_path / "old.sqlite3"
    engine = make_engine(f"sqlite:///{path}")
    try:
        with engine.begin() as conn:
            conn.exec_driver_sql(
                "CREATE TABLE customers (id INTEGER PRIMARY KEY, name VARCHAR(120), "
                "name_folded VARCHAR(120), ruc VARCHAR(16), city VARCHAR(80))"
            )
            conn.exec_driver_sql(
                "CREATE TABLE erp_settings (key VARCHAR(64) PRIMARY KEY, value VARCHAR(255))"
            )
            conn.exec_driver_sql("INSERT INTO erp_settings VALUES ('seed_version', '1')")
        with pytest.raises(ConfigurationError) as info:
            seed_erp(engine)
        message = str(info.value)
        assert "seed version '1'" in message and f"'{seed_module.SEED_VERSION}'" in message
        assert f"Delete the database file {path}" in message
        with engine.connect() as conn:  # the refused setup left nothing behind
            tables = {
                row[0] for row in conn.exec_driver_sql("SELECT name FROM sqlite_master WHERE type='table'")
            }
        assert tables == {"customers", "erp_settings"}
    finally:
        engine.dispose()


PROCESSES = 8


def _open_fresh(index: int, url: str, start: Any) -> bool:
    """Child: seed the demo and open the memory store, in an order that depends on ``index``, then open both
    as an application does; return whether this process seeded."""
    engine = make_engine(url)
    try:
        start.wait(timeout=60)
        if index % 2:
            open_memory_store(url).close()
            seeded = seed_erp(engine)
        else:
            seeded = seed_erp(engine)
            MemoryStore(engine).close()
        open_demo_erp(url).engine.dispose()
        return seeded
    finally:
        engine.dispose()


def test_processes_opening_one_empty_database_at_once_seed_it_exactly_once(db_url: str) -> None:
    seeded = run_processes(_open_fresh, [(db_url,)] * PROCESSES)

    assert sorted(seeded) == [False] * (PROCESSES - 1) + [True]
    expected = {model: len(rows) for model, rows in generate_rows().items()}
    erp = open_demo_erp(db_url)
    try:
        with erp.session() as session:
            for model in (ErpUser, Customer, Product, Invoice, InvoiceLine, ErpSetting):
                assert session.scalar(select(func.count()).select_from(model)) == expected[model], model
        assert set(MemoryBase.metadata.tables) <= set(inspect(erp.engine).get_table_names())
    finally:
        erp.engine.dispose()
