"""The deterministic demo data: a Paraguayan wholesale distributor, 2023-01-01 to 2026-11-30.

Non-cancelled sales of 2025 total ₲850.000.000 and the best customer of 2025 is Empresa ABC with
₲120.000.000; every year has one best customer; one fixed RNG seed, so fresh databases are identical. Exact
totals: each customer-year's last invoice has one line at a negotiated price that lands its target.
"""

from __future__ import annotations

import functools
import itertools
import random
from dataclasses import dataclass, field
from datetime import date, timedelta
from typing import Any, Final

from sqlalchemy import Connection, Engine, insert, inspect, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from shared.erp.demo_catalog import (
    CUSTOMERS,
    DEMO_TODAY,
    DEMO_USERS,
    FIRST_DAY,
    PRODUCTS,
    CustomerSpec,
    salesperson_of,
)
from shared.erp.models import Customer, ErpBase, ErpSetting, ErpUser, Invoice, InvoiceLine, Product
from shared.erp.storage import setup_transaction
from shared.errors import ConfigurationError
from shared.text import fold

RNG_SEED: Final = 20251130
SEED_VERSION: Final = "2"
"""Bump when the generated data changes; a database seeded by another version is refused."""

SALES_2025: Final = 850_000_000
BEST_CUSTOMER_2025: Final = "Empresa ABC"
BEST_CUSTOMER_2025_TOTAL: Final = 120_000_000

_YEAR_TOTALS: Final = {2023: 640_000_000, 2024: 742_000_000, 2025: SALES_2025, 2026: 806_000_000}
"""Approximate sales per year (2025 exact); 2026 runs to the demo's today, 2026-11-30."""
_PRICE_FACTOR: Final = {2023: 0.90, 2024: 0.95, 2025: 1.00, 2026: 1.04}
"""List prices below are 2025's; other years scale them (yearly inflation)."""
_MONTH_WEIGHT: Final = (0.80, 0.70, 0.95, 0.95, 1.00, 0.95, 1.00, 1.00, 0.95, 1.00, 1.10, 1.35)
_TIER_WEIGHT: Final = {"L": 3.0, "M": 1.2, "S": 0.5}
_TIER_QUANTITY: Final = {"L": (1, 5), "M": (1, 3), "S": (1, 2)}
_TAIL_MIN: Final = 100_000
_LINE_MIN: Final = 20_000
_CANCELLED_RATE: Final = 0.03


def ruc_check_digit(number: str) -> int:
    """Check digit of a Paraguayan RUC (SET's modulo-11 algorithm, weights 2..11 from the right)."""
    total = sum(int(digit) * (2 + i % 10) for i, digit in enumerate(reversed(number)))
    remainder = total % 11
    return 11 - remainder if remainder > 1 else 0


def _price(base: int, year: int) -> int:
    """List price of a product in ``year``, rounded to ₲500."""
    return round(base * _PRICE_FACTOR[year] / 500) * 500


@dataclass
class _DraftInvoice:
    customer_id: int
    issue_date: date
    status: str
    lines: list[tuple[int, int, int]] = field(default_factory=list)
    """(product_id, quantity, unit_price)."""

    @property
    def total(self) -> int:
        return sum(quantity * price for _, quantity, price in self.lines)


class _Generator:
    """Builds every row in memory from one ``random.Random``; insertion is :func:`seed_erp`'s job."""

    def __init__(self) -> None:
        self.rng = random.Random(RNG_SEED)
        self.product_ids = list(range(1, len(PRODUCTS) + 1))
        self.base_price = {i: p[3] for i, p in enumerate(PRODUCTS, start=1)}
        self.category = {i: p[2] for i, p in enumerate(PRODUCTS, start=1)}
        self._cum_weights: dict[str, list[float]] = {}

    # -- rows ------------------------------------------------------------------------------------------------
    def customers(self) -> list[dict[str, Any]]:
        rows: list[dict[str, Any]] = []
        used: set[str] = set()
        for i, spec in enumerate(CUSTOMERS, start=1):
            number = f"800{self.rng.randrange(10_000, 99_999)}"
            while number in used:
                number = f"800{self.rng.randrange(10_000, 99_999)}"
            used.add(number)
            rows.append(
                {
                    "id": i,
                    "name": spec.name,
                    "name_folded": fold(spec.name),
                    "ruc": f"{number}-{ruc_check_digit(number)}",
                    "city": spec.city,
                    "vendedor": salesperson_of(spec.city),
                }
            )
        return rows

    def products(self) -> list[dict[str, Any]]:
        return [
            {"id": i, "sku": sku, "name": name, "category": category, "unit_price": _price(price, 2026)}
            for i, (sku, name, category, price) in enumerate(PRODUCTS, start=1)
        ]

    # -- targets ---------------------------------------------------------------------------------------------
    def _active_days(self, spec: CustomerSpec, year: int) -> tuple[date, date] | None:
        start = max(spec.start, date(year, 1, 1))
        end = min(spec.end, date(year, 12, 31), DEMO_TODAY)
        return (start, end) if start <= end else None

    def yearly_targets(self, year: int) -> dict[int, int]:
        """Sales target per customer id (multiples of ₲1.000, a single maximum)."""
        weights: dict[int, float] = {}
        for cid, spec in enumerate(CUSTOMERS, start=1):
            noise = self.rng.lognormvariate(0.0, 0.3)
            span = self._active_days(spec, year)
            if span is None:
                continue
            share = ((span[1] - span[0]).days + 1) / 365
            weights[cid] = _TIER_WEIGHT[spec.tier] * noise * share
        if year == 2025:
            best = next(i for i, s in enumerate(CUSTOMERS, start=1) if s.name == BEST_CUSTOMER_2025)
            targets = {best: BEST_CUSTOMER_2025_TOTAL}
            del weights[best]
            targets |= self._split(SALES_2025 - BEST_CUSTOMER_2025_TOTAL, weights)
            if max(v for k, v in targets.items() if k != best) >= BEST_CUSTOMER_2025_TOTAL:
                raise AssertionError("seed data: Empresa ABC must be the best customer of 2025")
            return targets
        total = round(_YEAR_TOTALS[year] * self.rng.uniform(0.98, 1.02), -6)
        targets = self._split(int(total), weights)
        ranked = sorted(targets, key=lambda k: targets[k], reverse=True)
        if targets[ranked[0]] == targets[ranked[1]]:
            targets[ranked[0]] += 1_000
            targets[ranked[1]] -= 1_000
        return targets

    @staticmethod
    def _split(total: int, weights: dict[int, float]) -> dict[int, int]:
        """Split ``total`` by ``weights`` into multiples of ₲1.000 that sum to it exactly."""
        scale = total / sum(weights.values())
        parts = {k: int(round(w * scale, -3)) for k, w in weights.items()}
        smallest = min(parts, key=lambda k: (parts[k], k))
        parts[smallest] += total - sum(parts.values())
        return parts

    # -- invoices --------------------------------------------------------------------------------------------
    def _date(self, start: date, end: date) -> date:
        span = (end - start).days
        while True:
            day = start + timedelta(days=self.rng.randint(0, span))
            if self.rng.random() * max(_MONTH_WEIGHT) <= _MONTH_WEIGHT[day.month - 1]:
                return day

    def _pick_product(self, spec: CustomerSpec) -> int:
        cumulative = self._cum_weights.get(spec.name)
        if cumulative is None:
            weights = [5.0 if self.category[p] in spec.preferred else 0.4 for p in self.product_ids]
            cumulative = self._cum_weights[spec.name] = list(itertools.accumulate(weights))
        return self.rng.choices(self.product_ids, cum_weights=cumulative)[0]

    def _random_lines(self, spec: CustomerSpec, year: int) -> list[tuple[int, int, int]]:
        count = self.rng.choices((1, 2, 3, 4, 5), (40, 30, 16, 9, 5))[0]
        low, high = _TIER_QUANTITY[spec.tier]
        lines: list[tuple[int, int, int]] = []
        used: set[int] = set()
        for _ in range(count):
            product = self._pick_product(spec)
            if product in used:
                continue
            used.add(product)
            lines.append((product, self.rng.randint(low, high), _price(self.base_price[product], year)))
        return lines

    def _closing_lines(self, spec: CustomerSpec, year: int, remaining: int) -> list[tuple[int, int, int]]:
        """Lines worth exactly ``remaining`` (>= _LINE_MIN): list-price lines, then one negotiated line."""
        prices = {p: _price(self.base_price[p], year) for p in self.product_ids}
        top = max(prices.values())
        lines: list[tuple[int, int, int]] = []
        while remaining > top:
            product = self._pick_product(spec)
            most = (remaining - _LINE_MIN) // prices[product]
            if most < 1 or any(product == line[0] for line in lines):
                continue
            quantity = min(self.rng.randint(*_TIER_QUANTITY[spec.tier]), most)
            lines.append((product, quantity, prices[product]))
            remaining -= quantity * prices[product]
        used = {line[0] for line in lines}
        fitting = sorted((price, p) for p, price in prices.items() if price >= remaining)
        product = next((p for _, p in fitting if p not in used), fitting[0][1])
        lines.append((product, 1, remaining))
        return lines

    def customer_year(self, cid: int, year: int, target: int) -> list[_DraftInvoice]:
        spec = CUSTOMERS[cid - 1]
        span = self._active_days(spec, year)
        if span is None or target < _TAIL_MIN:
            raise AssertionError(f"seed data: bad target {target} for customer {cid} in {year}")
        drafts: list[_DraftInvoice] = []
        reached = 0
        while True:
            lines = self._random_lines(spec, year)
            amount = sum(q * p for _, q, p in lines)
            if reached + amount > target - _TAIL_MIN:
                break
            drafts.append(_DraftInvoice(cid, self._date(*span), "paid", lines))
            reached += amount
        closing = self._closing_lines(spec, year, target - reached)
        drafts.append(_DraftInvoice(cid, self._date(*span), "paid", closing))
        return drafts

    def _status(self, day: date) -> str:
        age = (DEMO_TODAY - day).days
        chance = 0.6 if age <= 45 else 0.25 if age <= 120 else 0.01
        return "pending" if self.rng.random() < chance else "paid"

    def invoices(self) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        drafts: list[_DraftInvoice] = []
        for year in range(FIRST_DAY.year, DEMO_TODAY.year + 1):
            for cid, target in sorted(self.yearly_targets(year).items()):
                drafts.extend(self.customer_year(cid, year, target))
        for draft in drafts:
            draft.status = self._status(draft.issue_date)
        for _ in range(round(len(drafts) * _CANCELLED_RATE)):
            cid = self.rng.randint(1, len(CUSTOMERS))
            spec = CUSTOMERS[cid - 1]
            day = self._date(max(spec.start, FIRST_DAY), min(spec.end, DEMO_TODAY))
            drafts.append(_DraftInvoice(cid, day, "cancelled", self._random_lines(spec, day.year)))
        # Stable order: by date, then generation order (sorted() is stable), so numbers follow dates.
        drafts.sort(key=lambda d: d.issue_date)
        invoices: list[dict[str, Any]] = []
        lines: list[dict[str, Any]] = []
        for invoice_id, draft in enumerate(drafts, start=1):
            invoices.append(
                {
                    "id": invoice_id,
                    "number": f"001-001-{invoice_id:07d}",
                    "customer_id": draft.customer_id,
                    "issue_date": draft.issue_date,
                    "status": draft.status,
                    "total": draft.total,
                }
            )
            for product_id, quantity, unit_price in draft.lines:
                lines.append(
                    {
                        "id": len(lines) + 1,
                        "invoice_id": invoice_id,
                        "product_id": product_id,
                        "quantity": quantity,
                        "unit_price": unit_price,
                        "amount": quantity * unit_price,
                    }
                )
        return invoices, lines


def generate_rows() -> dict[type[ErpBase], list[dict[str, Any]]]:
    """Every row of the demo ERP, per table, in insertion order (pure: same output on every call)."""
    generator = _Generator()
    customers = generator.customers()
    products = generator.products()
    invoices, lines = generator.invoices()
    settings = [
        {"key": "today", "value": DEMO_TODAY.isoformat()},
        {"key": "seed_version", "value": SEED_VERSION},
    ]
    users = [{"user_id": u.user_id, "name": u.name, "role": u.role} for u in DEMO_USERS]
    return {
        ErpUser: users,
        Customer: customers,
        Product: products,
        Invoice: invoices,
        InvoiceLine: lines,
        ErpSetting: settings,
    }


_demo_rows = functools.cache(generate_rows)
"""The rows :func:`seed_erp` inserts, generated once per process (never mutated: inserts only read them)."""


def _database_name(engine: Engine) -> str:
    """How to name the database to delete: the SQLite file, else the URL without its password."""
    url = engine.url
    if url.get_backend_name() == "sqlite" and url.database and url.database != ":memory:":
        return f"the database file {url.database}"
    return f"the database {url.render_as_string(hide_password=True)}"


def seeded_version(session: Session | Connection) -> str | None:
    """The ``seed_version`` stored in the database, or ``None`` if it was never seeded."""
    return session.scalar(select(ErpSetting.value).where(ErpSetting.key == "seed_version"))


def _refuse_other_databases(connection: Connection, engine: Engine) -> None:
    """Raise if the database holds a table that is neither the demo ERP's nor the conversation memory's."""
    # Imported here: shared.memory's store imports shared.erp.database, which imports this module lazily.
    from shared.memory.tables import MemoryBase

    ours = set(ErpBase.metadata.tables) | set(MemoryBase.metadata.tables)
    others = sorted(set(inspect(connection).get_table_names()) - ours)
    if others:
        shown = ", ".join(others[:5]) + (", …" if len(others) > 5 else "")
        name = _database_name(engine)
        raise ConfigurationError(
            f"{name[0].upper()}{name[1:]} is not the demo ERP (it holds the tables {shown}): the demo is "
            "only created in a new database. Give the demo its own database URL."
        )


def seed_erp(engine: Engine) -> bool:
    """Create the ERP tables and load the demo data unless already there. Returns whether it seeded."""
    try:
        with setup_transaction(engine) as connection:
            _refuse_other_databases(connection, engine)
            ErpBase.metadata.create_all(connection)
            version = seeded_version(connection)
            if version == SEED_VERSION:
                return False
            if version is not None:
                raise ConfigurationError(
                    f"The ERP database was seeded by seed version {version!r}, this code has "
                    f"{SEED_VERSION!r}. Delete {_database_name(engine)} (or point ERP_AI_DB_URL elsewhere) "
                    "so that it is created and seeded again."
                )
            for model, batch in _demo_rows().items():
                connection.execute(insert(model), batch)
    except IntegrityError:
        with engine.connect() as connection:
            if seeded_version(connection) != SEED_VERSION:
                raise
        return False
    return True
