"""The statements of the sales operations (:mod:`shared.operations.sales`), built once, at import.

Each has bound parameters (``inicio``/``fin`` for the half-open date range, ``vendedor`` for a salesperson,
plus each operation's own) and, where the caller's scope matters, two variants (:class:`Scoped`): every
customer's invoices (the very statement the manager always ran) and one salesperson's. Building a SQLAlchemy
statement and its cache key costs more than running these queries on the demo database, and every turn of
both modes pays for it. Aggregations group by ids first and join the names afterwards, so the database groups
narrow integer keys rather than text columns.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import date
from typing import Any, Final, cast

from sqlalchemy import (
    ColumnElement,
    Date,
    Executable,
    Result,
    Subquery,
    and_,
    bindparam,
    extract,
    func,
    select,
)
from sqlalchemy.orm import Session

from shared.erp.models import SALE_STATUSES, Customer, ErpUser, Invoice, InvoiceLine, Product
from shared.errors import UnknownCallerError
from shared.security import OperationContext

MAX_PENDING_LISTED: Final = 20

# -- scope and periods ---------------------------------------------------------------------------------------
SALES_IN_PERIOD: Final = and_(
    Invoice.status.in_(SALE_STATUSES),
    Invoice.issue_date >= bindparam("inicio", type_=Date),
    Invoice.issue_date < bindparam("fin", type_=Date),
)
"""Non-cancelled invoices issued in the half-open range ``[inicio, fin)``; see :func:`period`."""

PENDING: Final = Invoice.status == "pending"
"""Invoices not yet paid."""

OF_OWN_CUSTOMERS: Final = Invoice.customer_id.in_(
    select(Customer.id).where(Customer.vendedor == bindparam("vendedor"))
)
"""Invoices of the customers of the salesperson ``vendedor``."""


def period(anio: int, mes: int | None = None) -> dict[str, Any]:
    """The ``inicio``/``fin`` parameters of :data:`SALES_IN_PERIOD` for a year, or one month of it."""
    if mes is None:
        return {"inicio": date(anio, 1, 1), "fin": date(anio + 1, 1, 1)}
    end = date(anio + 1, 1, 1) if mes == 12 else date(anio, mes + 1, 1)
    return {"inicio": date(anio, mes, 1), "fin": end}


def session_of(ctx: OperationContext) -> Session:
    """The demo ERP's backend: the SQLAlchemy session :meth:`OperationRegistry.execute` opened."""
    return cast(Session, ctx.backend)


OWN_CUSTOMERS_SCOPE: Final = "solo sus clientes asignados, no los de toda la empresa"
"""The ``alcance`` of a result computed over a salesperson's own customers (what the answer must say)."""


def vendedor_of(ctx: OperationContext) -> str | None:
    """Whose customers ``ctx``'s caller sees: ``None`` for every customer, else the caller's own.

    Raises:
        UnknownCallerError: the caller sees only their own customers and is none of the ERP's users (a
            mistyped id would otherwise read as a salesperson without sales).
    """
    if ctx.sees_all_customers:
        return None
    user_id = ctx.caller.user_id
    if session_of(ctx).get(ErpUser, user_id) is None:
        raise UnknownCallerError(ctx.operation, user_id)
    return user_id


def scope_of(ctx: OperationContext) -> str | None:
    """The ``alcance`` of a result computed over the customers ``ctx``'s caller sees: ``None`` for every
    customer, else :data:`OWN_CUSTOMERS_SCOPE`."""
    return None if ctx.sees_all_customers else OWN_CUSTOMERS_SCOPE


@dataclass(frozen=True)
class Scoped:
    """One prebuilt statement in both scopes: every customer's invoices, or one salesperson's."""

    every: Executable
    own: Executable

    @classmethod
    def build(
        cls, statement: Callable[[ColumnElement[bool]], Executable], invoices: ColumnElement[bool]
    ) -> Scoped:
        """``statement(invoices)``, and ``statement`` over the ``invoices`` of one salesperson's customers."""
        return cls(statement(invoices), statement(and_(invoices, OF_OWN_CUSTOMERS)))

    def execute(self, ctx: OperationContext, params: Mapping[str, Any]) -> Result[*tuple[Any, ...]]:
        """Run the variant of ``ctx``'s scope with ``params`` (plus ``vendedor`` for a salesperson)."""
        vendedor = vendedor_of(ctx)
        if vendedor is None:
            return session_of(ctx).execute(self.every, params)
        return session_of(ctx).execute(self.own, {**params, "vendedor": vendedor})


def _totals(invoices: ColumnElement[bool]) -> Executable:
    return select(func.coalesce(func.sum(Invoice.total), 0), func.count(Invoice.id)).where(invoices)


SALES_TOTALS: Final = Scoped.build(_totals, SALES_IN_PERIOD)
"""Amount and number of the sales of a period."""


def _best_customer(invoices: ColumnElement[bool]) -> Executable:
    by_customer = (
        select(Invoice.customer_id, func.sum(Invoice.total).label("total"))
        .where(invoices)
        .group_by(Invoice.customer_id)
        .subquery("ventas_por_cliente")
    )
    return (
        select(Customer.name, by_customer.c.total)
        .join(by_customer, by_customer.c.customer_id == Customer.id)
        .order_by(by_customer.c.total.desc(), Customer.name)
        .limit(1)
    )


BEST_CUSTOMER: Final = Scoped.build(_best_customer, SALES_IN_PERIOD)
"""The customer with the largest sales of a period (ties: the first name in alphabetical order)."""


CUSTOMER_SALES_TOTALS: Final = _totals(and_(SALES_IN_PERIOD, Invoice.customer_id == bindparam("cliente_id")))
"""Amount and number of one customer's purchases in a period (a customer already resolved in scope)."""


_month = extract("month", Invoice.issue_date)
SALES_BY_MONTH: Final = Scoped.build(
    lambda invoices: select(_month, func.sum(Invoice.total)).where(invoices).group_by(_month), SALES_IN_PERIOD
)
"""Sales of a period per calendar month (months without sales are absent)."""


def _by_product(invoices: ColumnElement[bool]) -> Subquery:
    """Units and amount sold per product id, over the lines of ``invoices``."""
    return (
        select(
            InvoiceLine.product_id,
            func.sum(InvoiceLine.quantity).label("unidades"),
            func.sum(InvoiceLine.amount).label("total"),
        )
        .join(Invoice, Invoice.id == InvoiceLine.invoice_id)
        .where(invoices)
        .group_by(InvoiceLine.product_id)
        .subquery("ventas_por_producto")
    )


def _top_products(invoices: ColumnElement[bool]) -> Executable:
    by_product = _by_product(invoices)
    return (
        select(Product.sku, Product.name, Product.category, by_product.c.unidades, by_product.c.total)
        .join(by_product, by_product.c.product_id == Product.id)
        .order_by(by_product.c.total.desc(), Product.sku)
        .limit(bindparam("limite"))
    )


TOP_PRODUCTS: Final = Scoped.build(_top_products, SALES_IN_PERIOD)
"""The ``limite`` products with the largest sales of a period (ties: by SKU)."""


def _sales_by_category(invoices: ColumnElement[bool]) -> Executable:
    by_product = _by_product(invoices)
    category_total = func.sum(by_product.c.total).label("total")
    return (
        select(Product.category, category_total)
        .join(by_product, by_product.c.product_id == Product.id)
        .group_by(Product.category)
        .order_by(category_total.desc(), Product.category)
    )


SALES_BY_CATEGORY: Final = Scoped.build(_sales_by_category, SALES_IN_PERIOD)
"""Sales of a period per product category, largest first."""


def _pending_totals(invoices: ColumnElement[bool]) -> Executable:
    return select(func.count(Invoice.id), func.coalesce(func.sum(Invoice.total), 0)).where(invoices)


def _pending_oldest(invoices: ColumnElement[bool]) -> Executable:
    return (
        select(Invoice.number, Customer.name, Invoice.issue_date, Invoice.total)
        .join(Customer, Customer.id == Invoice.customer_id)
        .where(invoices)
        .order_by(Invoice.issue_date, Invoice.number)
        .limit(MAX_PENDING_LISTED)
    )


PENDING_TOTALS: Final = Scoped.build(_pending_totals, PENDING)
"""Number and amount of every pending invoice (of the caller's scope)."""
PENDING_OLDEST: Final = Scoped.build(_pending_oldest, PENDING)
"""The oldest pending invoices (of the caller's scope), at most :data:`MAX_PENDING_LISTED`."""
_OF_CUSTOMER: Final = and_(PENDING, Invoice.customer_id == bindparam("cliente_id"))
CUSTOMER_PENDING_TOTALS: Final = _pending_totals(_OF_CUSTOMER)
CUSTOMER_PENDING_OLDEST: Final = _pending_oldest(_OF_CUSTOMER)
"""The same for one customer (already resolved in the caller's scope)."""
