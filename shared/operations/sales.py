"""The sales operations of the demo ERP, declared once for both modes.

Each operation has a Spanish snake_case name (the article's ``ventas_anuales``, ``mejor_cliente``, …), a
description and parameter descriptions in Spanish (what the model reads), a parameter model that rejects
unknown keys and out-of-range values, and a typed result. "Sales" always means invoices that are not
cancelled. Queries filter on date ranges (not on extracted years) so they stay index-friendly and portable.

The statements are built once, at import, with bound parameters (``inicio``/``fin`` for the half-open date
range, plus each operation's own): building a SQLAlchemy statement and its cache key costs more than running
these queries on the demo database, and every turn of both modes pays for it. Aggregations group by ids first
and join the names afterwards, so the database groups narrow integer keys rather than text columns.
"""

from __future__ import annotations

from datetime import date
from typing import Any, Final

from pydantic import BaseModel, ConfigDict, Field
from sqlalchemy import ColumnElement, Date, and_, bindparam, extract, func, select
from sqlalchemy.orm import Session

from shared.erp.customers import resolve_customer, search_customers
from shared.erp.models import SALE_STATUSES, Customer, Invoice, InvoiceLine, Product
from shared.errors import DomainError
from shared.operations.registry import Operation, OperationRegistry

MAX_PENDING_LISTED: Final = 20
MAX_CUSTOMERS_LISTED: Final = 20

_ANIO = Field(ge=2000, le=2100, description="Año calendario de las ventas, por ejemplo 2025.")


_SALES_IN_PERIOD: Final = and_(
    Invoice.status.in_(SALE_STATUSES),
    Invoice.issue_date >= bindparam("inicio", type_=Date),
    Invoice.issue_date < bindparam("fin", type_=Date),
)
"""Non-cancelled invoices issued in the half-open range ``[inicio, fin)``; see :func:`_period`."""


def _period(anio: int, mes: int | None = None) -> dict[str, date]:
    """The ``inicio``/``fin`` parameters of :data:`_SALES_IN_PERIOD` for a year, or one month of it."""
    if mes is None:
        return {"inicio": date(anio, 1, 1), "fin": date(anio + 1, 1, 1)}
    end = date(anio + 1, 1, 1) if mes == 12 else date(anio, mes + 1, 1)
    return {"inicio": date(anio, mes, 1), "fin": end}


_SALES_TOTALS: Final = select(func.coalesce(func.sum(Invoice.total), 0), func.count(Invoice.id)).where(
    _SALES_IN_PERIOD
)
"""Amount and number of the sales of a period."""


def _drop_docstring(schema: dict[str, Any]) -> None:
    """Keep class docstrings (written for developers) out of the JSON schema the model reads."""
    schema.pop("description", None)


class _Params(BaseModel):
    """Base of parameter models: unknown keys are an error, not silently ignored."""

    model_config = ConfigDict(extra="forbid", json_schema_extra=_drop_docstring)


class _Result(BaseModel):
    """Base of result models: immutable, JSON-serialisable."""

    model_config = ConfigDict(frozen=True)


# -- ventas_anuales ------------------------------------------------------------------------------------------
class VentasAnualesParams(_Params):
    """Parameters of ``ventas_anuales``."""

    anio: int = _ANIO


class VentasAnualesResult(_Result):
    """Sales of one year."""

    anio: int
    total: int = Field(description="Ventas del año en guaraníes (facturas no anuladas).")
    facturas: int = Field(description="Cantidad de facturas no anuladas del año.")


def ventas_anuales(session: Session, params: VentasAnualesParams) -> VentasAnualesResult:
    row = session.execute(_SALES_TOTALS, _period(params.anio)).one()
    return VentasAnualesResult(anio=params.anio, total=int(row[0]), facturas=int(row[1]))


# -- mejor_cliente -------------------------------------------------------------------------------------------
class MejorClienteParams(_Params):
    """Parameters of ``mejor_cliente``."""

    anio: int = _ANIO


class MejorClienteResult(_Result):
    """The customer with the largest purchases in a year."""

    anio: int
    cliente: str = Field(description="Nombre del cliente con más compras en el año.")
    total: int = Field(description="Compras de ese cliente en el año, en guaraníes.")


_by_customer = (
    select(Invoice.customer_id, func.sum(Invoice.total).label("total"))
    .where(_SALES_IN_PERIOD)
    .group_by(Invoice.customer_id)
    .subquery("ventas_por_cliente")
)
_BEST_CUSTOMER: Final = (
    select(Customer.name, _by_customer.c.total)
    .join(_by_customer, _by_customer.c.customer_id == Customer.id)
    .order_by(_by_customer.c.total.desc(), Customer.name)
    .limit(1)
)
"""The customer with the largest sales of a period (ties: the first name in alphabetical order)."""


def mejor_cliente(session: Session, params: MejorClienteParams) -> MejorClienteResult:
    row = session.execute(_BEST_CUSTOMER, _period(params.anio)).first()
    if row is None:
        raise DomainError("mejor_cliente", f"There are no sales in {params.anio}, so no best customer.")
    return MejorClienteResult(anio=params.anio, cliente=row[0], total=int(row[1]))


# -- compras_cliente -----------------------------------------------------------------------------------------
class ComprasClienteParams(_Params):
    """Parameters of ``compras_cliente``."""

    cliente: str = Field(
        min_length=1,
        max_length=120,
        description=(
            "Nombre del cliente; no distingue mayúsculas ni acentos y acepta una parte única del nombre."
        ),
    )
    anio: int = _ANIO


class ComprasClienteResult(_Result):
    """Purchases of one customer in one year."""

    cliente: str = Field(description="Nombre canónico del cliente encontrado.")
    anio: int
    total: int = Field(description="Compras del cliente en el año, en guaraníes (facturas no anuladas).")
    facturas: int = Field(description="Cantidad de facturas no anuladas del cliente en el año.")


_CUSTOMER_SALES_TOTALS: Final = _SALES_TOTALS.where(Invoice.customer_id == bindparam("cliente_id"))
"""Amount and number of one customer's purchases in a period."""


def compras_cliente(session: Session, params: ComprasClienteParams) -> ComprasClienteResult:
    customer = resolve_customer(session, params.cliente, "compras_cliente")
    row = session.execute(_CUSTOMER_SALES_TOTALS, {**_period(params.anio), "cliente_id": customer.id}).one()
    return ComprasClienteResult(
        cliente=customer.name, anio=params.anio, total=int(row[0]), facturas=int(row[1])
    )


# -- ventas_mensuales ----------------------------------------------------------------------------------------
class VentasMensualesParams(_Params):
    """Parameters of ``ventas_mensuales``."""

    anio: int = _ANIO
    mes: int | None = Field(
        default=None, ge=1, le=12, description="Mes (1 a 12); si se omite, se devuelven los doce meses."
    )


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
_SALES_BY_MONTH: Final = select(_month, func.sum(Invoice.total)).where(_SALES_IN_PERIOD).group_by(_month)
"""Sales of a period per calendar month (months without sales are absent)."""


def ventas_mensuales(session: Session, params: VentasMensualesParams) -> VentasMensualesResult:
    rows = session.execute(_SALES_BY_MONTH, _period(params.anio, params.mes)).all()
    by_month = {int(m): int(total) for m, total in rows}
    months = [params.mes] if params.mes is not None else list(range(1, 13))
    meses = [VentaMes(mes=m, total=by_month.get(m, 0)) for m in months]
    return VentasMensualesResult(
        anio=params.anio, mes=params.mes, total=sum(m.total for m in meses), meses=meses
    )


# -- top_productos -------------------------------------------------------------------------------------------
class TopProductosParams(_Params):
    """Parameters of ``top_productos``."""

    anio: int = _ANIO
    limite: int = Field(default=5, ge=1, le=50, description="Cantidad de productos a devolver (1 a 50).")


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


_by_product = (
    select(
        InvoiceLine.product_id,
        func.sum(InvoiceLine.quantity).label("unidades"),
        func.sum(InvoiceLine.amount).label("total"),
    )
    .join(Invoice, Invoice.id == InvoiceLine.invoice_id)
    .where(_SALES_IN_PERIOD)
    .group_by(InvoiceLine.product_id)
    .subquery("ventas_por_producto")
)
_TOP_PRODUCTS: Final = (
    select(Product.sku, Product.name, Product.category, _by_product.c.unidades, _by_product.c.total)
    .join(_by_product, _by_product.c.product_id == Product.id)
    .order_by(_by_product.c.total.desc(), Product.sku)
    .limit(bindparam("limite"))
)
"""The ``limite`` products with the largest sales of a period (ties: by SKU)."""


def top_productos(session: Session, params: TopProductosParams) -> TopProductosResult:
    rows = session.execute(_TOP_PRODUCTS, {**_period(params.anio), "limite": params.limite})
    productos = [
        ProductoVendido(sku=sku, producto=name, categoria=category, unidades=int(units), total=int(total))
        for sku, name, category, units, total in rows
    ]
    return TopProductosResult(anio=params.anio, productos=productos)


# -- ventas_por_categoria ------------------------------------------------------------------------------------
class VentasPorCategoriaParams(_Params):
    """Parameters of ``ventas_por_categoria``."""

    anio: int = _ANIO


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


_category_total = func.sum(_by_product.c.total).label("total")
_SALES_BY_CATEGORY: Final = (
    select(Product.category, _category_total)
    .join(_by_product, _by_product.c.product_id == Product.id)
    .group_by(Product.category)
    .order_by(_category_total.desc(), Product.category)
)
"""Sales of a period per product category, largest first."""


def ventas_por_categoria(session: Session, params: VentasPorCategoriaParams) -> VentasPorCategoriaResult:
    rows = session.execute(_SALES_BY_CATEGORY, _period(params.anio))
    categorias = [VentaCategoria(categoria=c, total=int(t)) for c, t in rows]
    return VentasPorCategoriaResult(
        anio=params.anio, total=sum(c.total for c in categorias), categorias=categorias
    )


# -- facturas_pendientes -------------------------------------------------------------------------------------
class FacturasPendientesParams(_Params):
    """Parameters of ``facturas_pendientes``."""

    cliente: str | None = Field(
        default=None,
        min_length=1,
        max_length=120,
        description="Nombre del cliente (opcional); si se omite, se consideran todos los clientes.",
    )


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


def facturas_pendientes(session: Session, params: FacturasPendientesParams) -> FacturasPendientesResult:
    conditions: list[ColumnElement[bool]] = [Invoice.status == "pending"]
    name: str | None = None
    if params.cliente is not None:
        customer = resolve_customer(session, params.cliente, "facturas_pendientes")
        conditions.append(Invoice.customer_id == customer.id)
        name = customer.name
    count, total = session.execute(
        select(func.count(Invoice.id), func.coalesce(func.sum(Invoice.total), 0)).where(*conditions)
    ).one()
    rows = session.execute(
        select(Invoice.number, Customer.name, Invoice.issue_date, Invoice.total)
        .join(Customer, Customer.id == Invoice.customer_id)
        .where(*conditions)
        .order_by(Invoice.issue_date, Invoice.number)
        .limit(MAX_PENDING_LISTED)
    )
    facturas = [
        FacturaPendiente(numero=number, cliente=customer_name, fecha=issued, total=int(amount))
        for number, customer_name, issued, amount in rows
    ]
    return FacturasPendientesResult(cliente=name, cantidad=int(count), total=int(total), facturas=facturas)


# -- buscar_cliente ------------------------------------------------------------------------------------------
class BuscarClienteParams(_Params):
    """Parameters of ``buscar_cliente``."""

    texto: str = Field(
        min_length=1,
        max_length=120,
        description="Parte del nombre del cliente (sin mayúsculas ni acentos) o el comienzo de su RUC.",
    )


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


def buscar_cliente(session: Session, params: BuscarClienteParams) -> BuscarClienteResult:
    customers = search_customers(session, params.texto, MAX_CUSTOMERS_LISTED)
    return BuscarClienteResult(
        texto=params.texto,
        clientes=[ClienteEncontrado(nombre=c.name, ruc=c.ruc, ciudad=c.city) for c in customers],
    )


# -- the registry --------------------------------------------------------------------------------------------
def sales_registry() -> OperationRegistry:
    """A fresh registry holding every sales operation, in catalog order."""
    return OperationRegistry(
        [
            Operation(
                "ventas_anuales",
                "Total de ventas de un año (facturas no anuladas) y cantidad de facturas.",
                VentasAnualesParams,
                VentasAnualesResult,
                ventas_anuales,
            ),
            Operation(
                "mejor_cliente",
                "Cliente con el mayor total de compras en un año, con ese total.",
                MejorClienteParams,
                MejorClienteResult,
                mejor_cliente,
            ),
            Operation(
                "compras_cliente",
                "Total comprado por un cliente en un año y cantidad de facturas.",
                ComprasClienteParams,
                ComprasClienteResult,
                compras_cliente,
            ),
            Operation(
                "ventas_mensuales",
                "Ventas de un año mes por mes, o de un solo mes si se indica.",
                VentasMensualesParams,
                VentasMensualesResult,
                ventas_mensuales,
            ),
            Operation(
                "top_productos",
                "Productos más vendidos de un año por monto, con unidades y categoría.",
                TopProductosParams,
                TopProductosResult,
                top_productos,
            ),
            Operation(
                "ventas_por_categoria",
                "Ventas de un año agrupadas por categoría de producto.",
                VentasPorCategoriaParams,
                VentasPorCategoriaResult,
                ventas_por_categoria,
            ),
            Operation(
                "facturas_pendientes",
                "Facturas pendientes de cobro, de todos o de un cliente: cantidad, monto y las más antiguas.",
                FacturasPendientesParams,
                FacturasPendientesResult,
                facturas_pendientes,
            ),
            Operation(
                "buscar_cliente",
                "Busca clientes por parte del nombre o del RUC; devuelve nombre, RUC y ciudad.",
                BuscarClienteParams,
                BuscarClienteResult,
                buscar_cliente,
            ),
        ]
    )
