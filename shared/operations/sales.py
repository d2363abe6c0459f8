"""The sales operations of the demo ERP, declared once for both modes.

Each operation is a typed function registered with ``@_SALES.operation(requires=...)``: a Spanish snake_case
name (the article's ``ventas_anuales``, ``mejor_cliente``, …), a docstring that is the description the model
reads, parameters with Spanish descriptions (unknown keys and out-of-range values are refused), a typed
result, and the permissions it needs (``ventas:leer``; ``ventas:analisis`` for the category analysis;
``cobranzas:leer`` for receivables). "Sales" always means invoices that are not cancelled. Queries filter on
date ranges (not on extracted years) so they stay index-friendly and portable.

Row-level scope comes from the handler's context, never from a prompt: a caller with ``clientes:todos``
(``ctx.sees_all_customers``) sees every customer; anyone else sees only the invoices of the customers whose
``vendedor`` they are, in totals, months, rankings, products, categories and receivables alike, and those
results say so in ``alcance`` (an answer must not read as the company's). A customer named outside that scope
is :class:`~shared.errors.CustomerOutOfScopeError`; searches and suggestions never list it
(:mod:`shared.erp.customers`); a caller so scoped who is none of the ERP's users is
:class:`~shared.errors.UnknownCallerError`, never a salesperson without sales.

The statements are built once, at import, in :mod:`shared.operations.sales_queries`.
"""

from __future__ import annotations

from datetime import date
from typing import Annotated, Final

from pydantic import BaseModel, ConfigDict, Field

from shared.erp.customers import resolve_customer, search_customers
from shared.errors import OPERATION_ERROR_TEXTS, DomainError
from shared.operations.registry import OperationRegistry
from shared.operations.sales_queries import (
    BEST_CUSTOMER,
    CUSTOMER_PENDING_OLDEST,
    CUSTOMER_PENDING_TOTALS,
    CUSTOMER_SALES_TOTALS,
    MAX_PENDING_LISTED,
    PENDING_OLDEST,
    PENDING_TOTALS,
    SALES_BY_CATEGORY,
    SALES_BY_MONTH,
    SALES_TOTALS,
    TOP_PRODUCTS,
    period,
    scope_of,
    session_of,
    vendedor_of,
)
from shared.security import DEMO_POLICY, OperationContext, RolePolicy

MAX_CUSTOMERS_LISTED: Final = 20

_SALES: Final = OperationRegistry()
"""Every sales operation as declared, in catalog order; :func:`sales_registry` hands out copies."""


def sales_registry(policy: RolePolicy = DEMO_POLICY) -> OperationRegistry:
    """A fresh registry holding every sales operation, in catalog order, enforcing ``policy``."""
    return OperationRegistry(_SALES, policy=policy)


Anio = Annotated[int, Field(ge=2000, le=2100, description="Año calendario de las ventas, con cuatro cifras.")]
"""The ``anio`` parameter of every yearly operation."""


class _Result(BaseModel):
    """Base of result models: immutable, JSON-serialisable."""

    model_config = ConfigDict(frozen=True)


def _absent(value: object) -> bool:
    return value is None


class _ScopedResult(_Result):
    """A result computed over the customers the caller sees: ``alcance`` (first, left out for a caller who
    sees every customer) says whose they are, so an answer never reads as the company's."""

    alcance: str | None = Field(
        default=None,
        exclude_if=_absent,
        description="De qué clientes son las cifras cuando no son los de toda la empresa.",
    )


# -- ventas_anuales ------------------------------------------------------------------------------------------
class VentasAnualesResult(_ScopedResult):
    """Sales of one year."""

    anio: int
    total: int = Field(description="Ventas del año en guaraníes (facturas no anuladas).")
    facturas: int = Field(description="Cantidad de facturas no anuladas del año.")


@_SALES.operation(requires={"ventas:leer"})
def ventas_anuales(ctx: OperationContext, anio: Anio) -> VentasAnualesResult:
    """Total vendido (facturado) en un año, sin las facturas anuladas, y cantidad de facturas."""
    row = SALES_TOTALS.execute(ctx, period(anio)).one()
    return VentasAnualesResult(alcance=scope_of(ctx), anio=anio, total=int(row[0]), facturas=int(row[1]))


# -- mejor_cliente -------------------------------------------------------------------------------------------
class MejorClienteResult(_ScopedResult):
    """The customer with the largest purchases in a year."""

    anio: int
    cliente: str = Field(description="Nombre del cliente con más compras en el año.")
    total: int = Field(description="Compras de ese cliente en el año, en guaraníes.")


@_SALES.operation(requires={"ventas:leer"})
def mejor_cliente(ctx: OperationContext, anio: Anio) -> MejorClienteResult:
    """Cliente con el mayor total de compras en un año, con ese total."""
    # A salesperson's ranking holds only their customers: another's best customer is never named.
    row = BEST_CUSTOMER.execute(ctx, period(anio)).first()
    if row is None:
        raise DomainError("mejor_cliente", OPERATION_ERROR_TEXTS["no_sales"].format(anio=anio))
    return MejorClienteResult(alcance=scope_of(ctx), anio=anio, cliente=row[0], total=int(row[1]))


# -- compras_cliente -----------------------------------------------------------------------------------------
class ComprasClienteResult(_Result):
    """Purchases of one customer in one year."""

    cliente: str = Field(description="Nombre canónico del cliente encontrado.")
    anio: int
    total: int = Field(description="Compras del cliente en el año, en guaraníes (facturas no anuladas).")
    facturas: int = Field(description="Cantidad de facturas no anuladas del cliente en el año.")


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
    customer = resolve_customer(session_of(ctx), cliente, "compras_cliente", vendedor=vendedor_of(ctx))
    params = {**period(anio), "cliente_id": customer.id}
    row = session_of(ctx).execute(CUSTOMER_SALES_TOTALS, params).one()
    return ComprasClienteResult(cliente=customer.name, anio=anio, total=int(row[0]), facturas=int(row[1]))


# -- ventas_mensuales ----------------------------------------------------------------------------------------
class VentaMes(_Result):
    """Sales of one month."""

    mes: int
    total: int


class VentasMensualesResult(_ScopedResult):
    """Sales of a year month by month, or of one month."""

    anio: int
    mes: int | None
    total: int = Field(description="Ventas del mes pedido, o del año si no se pidió un mes.")
    meses: list[VentaMes] = Field(description="Ventas por mes: el mes pedido, o los doce meses del año.")


@_SALES.operation(requires={"ventas:leer"})
def ventas_mensuales(
    ctx: OperationContext,
    anio: Anio,
    mes: Annotated[
        int | None,
        Field(
            ge=1,
            le=12,
            description=(
                "Número del mes: 1 enero, 2 febrero, 3 marzo, 4 abril, 5 mayo, 6 junio, 7 julio, "
                "8 agosto, 9 septiembre, 10 octubre, 11 noviembre, 12 diciembre; si se omite, se "
                "devuelven los doce meses."
            ),
        ),
    ] = None,
) -> VentasMensualesResult:
    """Ventas de un año mes por mes, o de un solo mes si se indica."""
    rows = SALES_BY_MONTH.execute(ctx, period(anio, mes)).all()
    by_month = {int(m): int(total) for m, total in rows}
    months = [mes] if mes is not None else list(range(1, 13))
    meses = [VentaMes(mes=m, total=by_month.get(m, 0)) for m in months]
    total = sum(m.total for m in meses)
    return VentasMensualesResult(alcance=scope_of(ctx), anio=anio, mes=mes, total=total, meses=meses)


# -- top_productos -------------------------------------------------------------------------------------------
class ProductoVendido(_Result):
    """One product's sales in a year."""

    sku: str
    producto: str
    categoria: str
    unidades: int = Field(description="Unidades vendidas en el año.")
    total: int = Field(description="Monto vendido en el año, en guaraníes.")


class TopProductosResult(_ScopedResult):
    """Best-selling products of a year by amount."""

    anio: int
    productos: list[ProductoVendido] = Field(
        description="Los productos más vendidos por monto, de mayor a menor."
    )


@_SALES.operation(requires={"ventas:leer"})
def top_productos(
    ctx: OperationContext,
    anio: Anio,
    limite: Annotated[int, Field(ge=1, le=50, description="Cantidad de productos a devolver (1 a 50).")] = 5,
) -> TopProductosResult:
    """Productos más vendidos de un año por monto, con unidades y categoría."""
    rows = TOP_PRODUCTS.execute(ctx, {**period(anio), "limite": limite})
    productos = [
        ProductoVendido(sku=sku, producto=name, categoria=category, unidades=int(units), total=int(total))
        for sku, name, category, units, total in rows
    ]
    return TopProductosResult(alcance=scope_of(ctx), anio=anio, productos=productos)


# -- ventas_por_categoria ------------------------------------------------------------------------------------
class VentaCategoria(_Result):
    """Sales of one product category."""

    categoria: str
    total: int


class VentasPorCategoriaResult(_ScopedResult):
    """Sales of a year by product category."""

    anio: int
    total: int = Field(description="Ventas del año en guaraníes (suma de las categorías).")
    categorias: list[VentaCategoria] = Field(
        description="Ventas por categoría de producto, de mayor a menor."
    )


@_SALES.operation(requires={"ventas:analisis"})
def ventas_por_categoria(ctx: OperationContext, anio: Anio) -> VentasPorCategoriaResult:
    """Ventas de un año agrupadas por categoría de producto."""
    rows = SALES_BY_CATEGORY.execute(ctx, period(anio))
    categorias = [VentaCategoria(categoria=c, total=int(t)) for c, t in rows]
    total = sum(c.total for c in categorias)
    return VentasPorCategoriaResult(alcance=scope_of(ctx), anio=anio, total=total, categorias=categorias)


# -- facturas_pendientes -------------------------------------------------------------------------------------
class FacturaPendiente(_Result):
    """One unpaid invoice."""

    numero: str
    cliente: str
    fecha: date
    total: int


class FacturasPendientesResult(_ScopedResult):
    """Unpaid invoices: count and amount over all, the oldest listed."""

    cliente: str | None = Field(description="Nombre canónico del cliente filtrado, o null si son todos.")
    cantidad: int = Field(description="Cantidad total de facturas pendientes de cobro.")
    total: int = Field(description="Monto total pendiente de cobro, en guaraníes.")
    facturas: list[FacturaPendiente] = Field(
        description=f"Las facturas pendientes más antiguas primero (como máximo {MAX_PENDING_LISTED})."
    )
    listado: str | None = Field(
        default=None,
        exclude_if=_absent,
        description="Cuáles facturas se listan, cuando no son todas las pendientes.",
    )


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
    session = session_of(ctx)
    scope = None
    if cliente is None:
        name, scope = None, scope_of(ctx)
        count, total = PENDING_TOTALS.execute(ctx, {}).one()
        rows = PENDING_OLDEST.execute(ctx, {})
    else:
        customer = resolve_customer(session, cliente, "facturas_pendientes", vendedor=vendedor_of(ctx))
        name = customer.name
        count, total = session.execute(CUSTOMER_PENDING_TOTALS, {"cliente_id": customer.id}).one()
        rows = session.execute(CUSTOMER_PENDING_OLDEST, {"cliente_id": customer.id})
    facturas = [
        FacturaPendiente(numero=number, cliente=customer_name, fecha=issued, total=int(amount))
        for number, customer_name, issued, amount in rows
    ]
    listed = f"las {len(facturas)} más antiguas de {int(count)}" if len(facturas) < count else None
    return FacturasPendientesResult(
        alcance=scope, cliente=name, cantidad=int(count), total=int(total), facturas=facturas, listado=listed
    )


# -- buscar_cliente ------------------------------------------------------------------------------------------
class ClienteEncontrado(_Result):
    """A customer found by ``buscar_cliente``."""

    nombre: str
    ruc: str
    ciudad: str


class BuscarClienteResult(_ScopedResult):
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
    customers = search_customers(session_of(ctx), texto, MAX_CUSTOMERS_LISTED, vendedor=vendedor_of(ctx))
    found = [ClienteEncontrado(nombre=c.name, ruc=c.ruc, ciudad=c.city) for c in customers]
    return BuscarClienteResult(alcance=scope_of(ctx), texto=texto, clientes=found)
