"""The sales operations of the demo ERP, declared once for both modes.

Each operation is a typed function registered with ``@_SALES.operation(requires=...)``: a Spanish snake_case
name (the article's ``ventas_anuales``, ``mejor_cliente``, …), a docstring that is the description the model
reads, parameters with Spanish descriptions (unknown keys and out-of-range values are refused), a typed
result, and the permissions it needs (``ventas:leer``; ``ventas:analisis`` for the category analysis;
``cobranzas:leer`` for receivables). "Sales" always means invoices that are not cancelled. Queries filter on
date ranges (not on extracted years) so they stay index-friendly and portable.

Row-level scope comes from the handler's context, never from a prompt: a caller with ``clientes:todos``
(``ctx.sees_all_customers``) sees every customer; anyone else sees only the invoices of the customers whose
``vendedor`` they are, in totals, months, rankings, products, categories and receivables alike. A customer
named outside that scope is :class:`~shared.errors.CustomerOutOfScopeError`; searches and suggestions never
list it (:mod:`shared.erp.customers`).

The statements are built once, at import, with bound parameters (``inicio``/``fin`` for the half-open date
range, ``vendedor`` for a salesperson, plus each operation's own), in two variants (:class:`_Scoped`): every
customer's invoices (the very statement the manager always ran) and one salesperson's. Building a SQLAlchemy
statement and its cache key costs more than running these queries on the demo database, and every turn of
both modes pays for it. Aggregations group by ids first and join the names afterwards, so the database groups
narrow integer keys rather than text columns.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import date
from typing import Annotated, Any, Final, cast

from pydantic import BaseModel, ConfigDict, Field
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

from shared.erp.customers import resolve_customer, search_customers
from shared.erp.models import SALE_STATUSES, Customer, Invoice, InvoiceLine, Product
from shared.errors import OPERATION_ERROR_TEXTS, DomainError
from shared.operations.registry import OperationRegistry
from shared.security import DEMO_POLICY, OperationContext, RolePolicy

MAX_PENDING_LISTED: Final = 20
MAX_CUSTOMERS_LISTED: Final = 20

_SALES: Final = OperationRegistry()
"""Every sales operation as declared, in catalog order; :func:`sales_registry` hands out copies."""


def sales_registry(policy: RolePolicy = DEMO_POLICY) -> OperationRegistry:
    """A fresh registry holding every sales operation, in catalog order, enforcing ``policy``."""
    return OperationRegistry(_SALES, policy=policy)


Anio = Annotated[int, Field(ge=2000, le=2100, description="Año calendario de las ventas, con cuatro cifras.")]
"""The ``anio`` parameter of every yearly operation."""


# -- scope and periods ---------------------------------------------------------------------------------------
_SALES_IN_PERIOD: Final = and_(
    Invoice.status.in_(SALE_STATUSES),
    Invoice.issue_date >= bindparam("inicio", type_=Date),
    Invoice.issue_date < bindparam("fin", type_=Date),
)
"""Non-cancelled invoices issued in the half-open range ``[inicio, fin)``; see :func:`_period`."""

_PENDING: Final = Invoice.status == "pending"
"""Invoices not yet paid."""

_OF_OWN_CUSTOMERS: Final = Invoice.customer_id.in_(
    select(Customer.id).where(Customer.vendedor == bindparam("vendedor"))
)
"""Invoices of the customers of the salesperson ``vendedor``."""


def _period(anio: int, mes: int | None = None) -> dict[str, Any]:
    """The ``inicio``/``fin`` parameters of :data:`_SALES_IN_PERIOD` for a year, or one month of it."""
    if mes is None:
        return {"inicio": date(anio, 1, 1), "fin": date(anio + 1, 1, 1)}
    end = date(anio + 1, 1, 1) if mes == 12 else date(anio, mes + 1, 1)
    return {"inicio": date(anio, mes, 1), "fin": end}


def _session(ctx: OperationContext) -> Session:
    """The demo ERP's backend: the SQLAlchemy session :meth:`OperationRegistry.execute` opened."""
    return cast(Session, ctx.backend)


def _vendedor(ctx: OperationContext) -> str | None:
    """Whose customers ``ctx``'s caller sees: ``None`` for every customer, else the caller's own."""
    return None if ctx.sees_all_customers else ctx.caller.user_id


@dataclass(frozen=True)
class _Scoped:
    """One prebuilt statement in both scopes: every customer's invoices, or one salesperson's."""

    every: Executable
    own: Executable

    @classmethod
    def build(
        cls, statement: Callable[[ColumnElement[bool]], Executable], invoices: ColumnElement[bool]
    ) -> _Scoped:
        """``statement(invoices)``, and ``statement`` over the ``invoices`` of one salesperson's customers."""
        return cls(statement(invoices), statement(and_(invoices, _OF_OWN_CUSTOMERS)))

    def execute(self, ctx: OperationContext, params: Mapping[str, Any]) -> Result[*tuple[Any, ...]]:
        """Run the variant of ``ctx``'s scope with ``params`` (plus ``vendedor`` for a salesperson)."""
        vendedor = _vendedor(ctx)
        if vendedor is None:
            return _session(ctx).execute(self.every, params)
        return _session(ctx).execute(self.own, {**params, "vendedor": vendedor})


class _Result(BaseModel):
    """Base of result models: immutable, JSON-serialisable."""

    model_config = ConfigDict(frozen=True)


# -- ventas_anuales ------------------------------------------------------------------------------------------
class VentasAnualesResult(_Result):
    """Sales of one year."""

    anio: int
    total: int = Field(description="Ventas del año en guaraníes (facturas no anuladas).")
    facturas: int = Field(description="Cantidad de facturas no anuladas del año.")


def _totals(invoices: ColumnElement[bool]) -> Executable:
    return select(func.coalesce(func.sum(Invoice.total), 0), func.count(Invoice.id)).where(invoices)


_SALES_TOTALS: Final = _Scoped.build(_totals, _SALES_IN_PERIOD)
"""Amount and number of the sales of a period."""


@_SALES.operation(requires={"ventas:leer"})
def ventas_anuales(ctx: OperationContext, anio: Anio) -> VentasAnualesResult:
    """Total de ventas de un año (facturas no anuladas) y cantidad de facturas."""
    row = _SALES_TOTALS.execute(ctx, _period(anio)).one()
    return VentasAnualesResult(anio=anio, total=int(row[0]), facturas=int(row[1]))


# -- mejor_cliente -------------------------------------------------------------------------------------------
class MejorClienteResult(_Result):
    """The customer with the largest purchases in a year."""

    anio: int
    cliente: str = Field(description="Nombre del cliente con más compras en el año.")
    total: int = Field(description="Compras de ese cliente en el año, en guaraníes.")


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


_BEST_CUSTOMER: Final = _Scoped.build(_best_customer, _SALES_IN_PERIOD)
"""The customer with the largest sales of a period (ties: the first name in alphabetical order)."""


@_SALES.operation(requires={"ventas:leer"})
def mejor_cliente(ctx: OperationContext, anio: Anio) -> MejorClienteResult:
    """Cliente con el mayor total de compras en un año, con ese total."""
    # A salesperson's ranking holds only their customers: another's best customer is never named.
    row = _BEST_CUSTOMER.execute(ctx, _period(anio)).first()
    if row is None:
        raise DomainError("mejor_cliente", OPERATION_ERROR_TEXTS["no_sales"].format(anio=anio))
    return MejorClienteResult(anio=anio, cliente=row[0], total=int(row[1]))


# -- compras_cliente -----------------------------------------------------------------------------------------
class ComprasClienteResult(_Result):
    """Purchases of one customer in one year."""

    cliente: str = Field(description="Nombre canónico del cliente encontrado.")
    anio: int
    total: int = Field(description="Compras del cliente en el año, en guaraníes (facturas no anuladas).")
    facturas: int = Field(description="Cantidad de facturas no anuladas del cliente en el año.")


_CUSTOMER_SALES_TOTALS: Final = _totals(
    and_(_SALES_IN_PERIOD, Invoice.customer_id == bindparam("cliente_id"))
)
"""Amount and number of one customer's purchases in a period (a customer already resolved in scope)."""


@_SALES.operation(requires={"ventas:leer"})
def compras_cliente(
    ctx: OperationContext,
    cliente: Annotated[
        str,
        Field(
            min_length=1,
            max_length=120,
            description=(
                "Nombre del cliente; no distingue mayúsculas ni acentos y acepta una parte única del nombre."
            ),
        ),
    ],
    anio: Anio,
) -> ComprasClienteResult:
    """Total comprado por un cliente en un año y cantidad de facturas."""
    customer = resolve_customer(_session(ctx), cliente, "compras_cliente", vendedor=_vendedor(ctx))
    params = {**_period(anio), "cliente_id": customer.id}
    row = _session(ctx).execute(_CUSTOMER_SALES_TOTALS, params).one()
    return ComprasClienteResult(cliente=customer.name, anio=anio, total=int(row[0]), facturas=int(row[1]))


# -- ventas_mensuales ----------------------------------------------------------------------------------------
class VentaMes(_Result):
    """Sales of one month."""

    mes: int
    total: int


class VentasMensualesResult(_Result):
    """Sales of a year month by month, or of one month."""

    anio: int
    mes: int | None
    total: int = Field(description="Ventas del mes pedido, o del año si no se pidió un mes.")
    meses: list[VentaMes] = Field(description="Ventas por mes: el mes pedido, o los doce meses del año.")


_month = extract("month", Invoice.issue_date)
_SALES_BY_MONTH: Final = _Scoped.build(
    lambda invoices: select(_month, func.sum(Invoice.total)).where(invoices).group_by(_month),
    _SALES_IN_PERIOD,
)
"""Sales of a period per calendar month (months without sales are absent)."""


@_SALES.operation(requires={"ventas:leer"})
def ventas_mensuales(
    ctx: OperationContext,
    anio: Anio,
    mes: Annotated[
        int | None, Field(ge=1, le=12, description="Mes (1 a 12); si se omite, se devuelven los doce meses.")
    ] = None,
) -> VentasMensualesResult:
    """Ventas de un año mes por mes, o de un solo mes si se indica."""
    rows = _SALES_BY_MONTH.execute(ctx, _period(anio, mes)).all()
    by_month = {int(m): int(total) for m, total in rows}
    months = [mes] if mes is not None else list(range(1, 13))
    meses = [VentaMes(mes=m, total=by_month.get(m, 0)) for m in months]
    return VentasMensualesResult(anio=anio, mes=mes, total=sum(m.total for m in meses), meses=meses)


# -- top_productos -------------------------------------------------------------------------------------------
class ProductoVendido(_Result):
    """One product's sales in a year."""

    sku: str
    producto: str
    categoria: str
    unidades: int = Field(description="Unidades vendidas en el año.")
    total: int = Field(description="Monto vendido en el año, en guaraníes.")


class TopProductosResult(_Result):
    """Best-selling products of a year by amount."""

    anio: int
    productos: list[ProductoVendido] = Field(
        description="Los productos más vendidos por monto, de mayor a menor."
    )


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


_TOP_PRODUCTS: Final = _Scoped.build(_top_products, _SALES_IN_PERIOD)
"""The ``limite`` products with the largest sales of a period (ties: by SKU)."""


@_SALES.operation(requires={"ventas:leer"})
def top_productos(
    ctx: OperationContext,
    anio: Anio,
    limite: Annotated[int, Field(ge=1, le=50, description="Cantidad de productos a devolver (1 a 50).")] = 5,
) -> TopProductosResult:
    """Productos más vendidos de un año por monto, con unidades y categoría."""
    rows = _TOP_PRODUCTS.execute(ctx, {**_period(anio), "limite": limite})
    productos = [
        ProductoVendido(sku=sku, producto=name, categoria=category, unidades=int(units), total=int(total))
        for sku, name, category, units, total in rows
    ]
    return TopProductosResult(anio=anio, productos=productos)


# -- ventas_por_categoria ------------------------------------------------------------------------------------
class VentaCategoria(_Result):
    """Sales of one product category."""

    categoria: str
    total: int


class VentasPorCategoriaResult(_Result):
    """Sales of a year by product category."""

    anio: int
    total: int = Field(description="Ventas del año en guaraníes (suma de las categorías).")
    categorias: list[VentaCategoria] = Field(
        description="Ventas por categoría de producto, de mayor a menor."
    )


def _sales_by_category(invoices: ColumnElement[bool]) -> Executable:
    by_product = _by_product(invoices)
    category_total = func.sum(by_product.c.total).label("total")
    return (
        select(Product.category, category_total)
        .join(by_product, by_product.c.product_id == Product.id)
        .group_by(Product.category)
        .order_by(category_total.desc(), Product.category)
    )


_SALES_BY_CATEGORY: Final = _Scoped.build(_sales_by_category, _SALES_IN_PERIOD)
"""Sales of a period per product category, largest first."""


@_SALES.operation(requires={"ventas:analisis"})
def ventas_por_categoria(ctx: OperationContext, anio: Anio) -> VentasPorCategoriaResult:
    """Ventas de un año agrupadas por categoría de producto."""
    rows = _SALES_BY_CATEGORY.execute(ctx, _period(anio))
    categorias = [VentaCategoria(categoria=c, total=int(t)) for c, t in rows]
    return VentasPorCategoriaResult(anio=anio, total=sum(c.total for c in categorias), categorias=categorias)


# -- facturas_pendientes -------------------------------------------------------------------------------------
class FacturaPendiente(_Result):
    """One unpaid invoice."""

    numero: str
    cliente: str
    fecha: date
    total: int


class FacturasPendientesResult(_Result):
    """Unpaid invoices: count and amount over all, the oldest listed."""

    cliente: str | None = Field(description="Nombre canónico del cliente filtrado, o null si son todos.")
    cantidad: int = Field(description="Cantidad total de facturas pendientes de cobro.")
    total: int = Field(description="Monto total pendiente de cobro, en guaraníes.")
    facturas: list[FacturaPendiente] = Field(
        description=f"Las facturas pendientes más antiguas primero (como máximo {MAX_PENDING_LISTED})."
    )


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


_PENDING_TOTALS: Final = _Scoped.build(_pending_totals, _PENDING)
"""Number and amount of every pending invoice (of the caller's scope)."""
_PENDING_OLDEST: Final = _Scoped.build(_pending_oldest, _PENDING)
"""The oldest pending invoices (of the caller's scope), at most :data:`MAX_PENDING_LISTED`."""
_OF_CUSTOMER: Final = and_(_PENDING, Invoice.customer_id == bindparam("cliente_id"))
_CUSTOMER_PENDING_TOTALS: Final = _pending_totals(_OF_CUSTOMER)
_CUSTOMER_PENDING_OLDEST: Final = _pending_oldest(_OF_CUSTOMER)
"""The same for one customer (already resolved in the caller's scope)."""


@_SALES.operation(requires={"cobranzas:leer"})
def facturas_pendientes(
    ctx: OperationContext,
    cliente: Annotated[
        str | None,
        Field(
            min_length=1,
            max_length=120,
            description="Nombre del cliente (opcional); si se omite, se consideran todos los clientes.",
        ),
    ] = None,
) -> FacturasPendientesResult:
    """Facturas pendientes de cobro, de todos o de un cliente: cantidad, monto y las más antiguas."""
    session = _session(ctx)
    if cliente is None:
        name = None
        count, total = _PENDING_TOTALS.execute(ctx, {}).one()
        rows = _PENDING_OLDEST.execute(ctx, {})
    else:
        customer = resolve_customer(session, cliente, "facturas_pendientes", vendedor=_vendedor(ctx))
        name = customer.name
        count, total = session.execute(_CUSTOMER_PENDING_TOTALS, {"cliente_id": customer.id}).one()
        rows = session.execute(_CUSTOMER_PENDING_OLDEST, {"cliente_id": customer.id})
    facturas = [
        FacturaPendiente(numero=number, cliente=customer_name, fecha=issued, total=int(amount))
        for number, customer_name, issued, amount in rows
    ]
    return FacturasPendientesResult(cliente=name, cantidad=int(count), total=int(total), facturas=facturas)


# -- buscar_cliente ------------------------------------------------------------------------------------------
class ClienteEncontrado(_Result):
    """A customer found by ``buscar_cliente``."""

    nombre: str
    ruc: str
    ciudad: str


class BuscarClienteResult(_Result):
    """Customers matching a search text."""

    texto: str
    clientes: list[ClienteEncontrado] = Field(
        description=f"Clientes que coinciden o los más parecidos (máximo {MAX_CUSTOMERS_LISTED})."
    )


@_SALES.operation(requires={"ventas:leer"})
def buscar_cliente(
    ctx: OperationContext,
    texto: Annotated[
        str,
        Field(
            min_length=1,
            max_length=120,
            description="Parte del nombre del cliente (sin mayúsculas ni acentos) o el comienzo de su RUC.",
        ),
    ],
) -> BuscarClienteResult:
    """Busca clientes por parte del nombre o del RUC; devuelve nombre, RUC y ciudad."""
    # A salesperson searches, and is offered similar names from, their own customers only.
    customers = search_customers(_session(ctx), texto, MAX_CUSTOMERS_LISTED, vendedor=_vendedor(ctx))
    return BuscarClienteResult(
        texto=texto,
        clientes=[ClienteEncontrado(nombre=c.name, ruc=c.ruc, ciudad=c.city) for c in customers],
    )
