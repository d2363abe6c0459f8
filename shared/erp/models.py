"""The demo ERP's schema: users, customers, products, invoices, invoice lines and settings.

Dialect-neutral (bounded ``String``, ``CheckConstraint`` instead of enums) for SQLite and PostgreSQL; money is
integer guaraníes. The indexes match the sales queries (invoice date range, status, customer, ``vendedor``).
"""

from __future__ import annotations

from datetime import date
from typing import Final, Literal

from sqlalchemy import BigInteger, CheckConstraint, Date, ForeignKey, Index, Integer, String
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column, relationship

InvoiceStatus = Literal["paid", "pending", "cancelled"]
"""Lifecycle of an invoice. "Sales" are the invoices that are not ``cancelled``."""

INVOICE_STATUSES: Final[tuple[InvoiceStatus, ...]] = ("paid", "pending", "cancelled")
SALE_STATUSES: Final[tuple[InvoiceStatus, ...]] = ("paid", "pending")
"""Statuses that count as a sale."""


class ErpBase(DeclarativeBase):
    """Declarative base of the ERP tables (separate from the memory store's)."""


class ErpUser(ErpBase):
    """A person who uses the ERP: the manager, or a salesperson to whom customers are assigned."""

    __tablename__ = "erp_users"

    user_id: Mapped[str] = mapped_column(String(64), primary_key=True)
    name: Mapped[str] = mapped_column(String(120))
    role: Mapped[str] = mapped_column(String(32))


class Customer(ErpBase):
    """A customer of the demo company, assigned to one salesperson (``vendedor``)."""

    __tablename__ = "customers"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(120), unique=True)
    name_folded: Mapped[str] = mapped_column(String(120), index=True)
    """``shared.text.fold(name)``: lets any database match names case- and accent-insensitively."""
    ruc: Mapped[str] = mapped_column(String(16), unique=True)
    """Paraguayan tax id, ``80012345-6`` (number, dash, check digit)."""
    city: Mapped[str] = mapped_column(String(80))
    vendedor: Mapped[str] = mapped_column(ForeignKey("erp_users.user_id"), index=True)
    """``user_id`` of the salesperson in charge: a caller without ``clientes:todos`` sees only the invoices of
    the customers whose ``vendedor`` they are (row-level scope, :mod:`shared.operations.sales`)."""

    invoices: Mapped[list[Invoice]] = relationship(back_populates="customer")


class Product(ErpBase):
    """A product the company sells; ``unit_price`` is the current list price."""

    __tablename__ = "products"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    sku: Mapped[str] = mapped_column(String(32), unique=True)
    name: Mapped[str] = mapped_column(String(120))
    category: Mapped[str] = mapped_column(String(60), index=True)
    unit_price: Mapped[int] = mapped_column(BigInteger)


class Invoice(ErpBase):
    """A sales invoice. ``total`` equals the sum of its lines' amounts."""

    __tablename__ = "invoices"
    __table_args__ = (
        CheckConstraint("status IN ('paid', 'pending', 'cancelled')", name="ck_invoices_status"),
        Index("ix_invoices_date_status", "issue_date", "status"),
        Index("ix_invoices_customer_date", "customer_id", "issue_date"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    number: Mapped[str] = mapped_column(String(32), unique=True)
    """Paraguayan format: establishment, expedition point, sequence (``001-001-0000123``)."""
    customer_id: Mapped[int] = mapped_column(ForeignKey("customers.id"))
    issue_date: Mapped[date] = mapped_column(Date)
    status: Mapped[str] = mapped_column(String(16))
    """One of :data:`INVOICE_STATUSES`."""
    total: Mapped[int] = mapped_column(BigInteger)

    customer: Mapped[Customer] = relationship(back_populates="invoices")
    lines: Mapped[list[InvoiceLine]] = relationship(back_populates="invoice", order_by="InvoiceLine.id")


class InvoiceLine(ErpBase):
    """One line of an invoice: ``amount == quantity * unit_price`` (the price actually charged)."""

    __tablename__ = "invoice_lines"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    invoice_id: Mapped[int] = mapped_column(ForeignKey("invoices.id"), index=True)
    product_id: Mapped[int] = mapped_column(ForeignKey("products.id"), index=True)
    quantity: Mapped[int] = mapped_column(Integer)
    unit_price: Mapped[int] = mapped_column(BigInteger)
    amount: Mapped[int] = mapped_column(BigInteger)

    invoice: Mapped[Invoice] = relationship(back_populates="lines")
    product: Mapped[Product] = relationship()


class ErpSetting(ErpBase):
    """A key/value setting of the ERP, e.g. ``today`` (ISO date) and ``seed_version``."""

    __tablename__ = "erp_settings"

    key: Mapped[str] = mapped_column(String(64), primary_key=True)
    value: Mapped[str] = mapped_column(String(255))
