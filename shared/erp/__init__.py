"""The ERP: a database handle (:func:`open_erp` for yours, :func:`open_demo_erp` for the demo), the demo's
schema and deterministic seed (its users: :mod:`shared.erp.users`)."""

from shared.erp.database import DEMO_TODAY, Erp, default_db_url, make_engine, open_demo_erp, open_erp
from shared.erp.models import Customer, ErpBase, ErpSetting, ErpUser, Invoice, InvoiceLine, Product
from shared.erp.seed import seed_erp

__all__ = [
    "DEMO_TODAY",
    "Customer",
    "Erp",
    "ErpBase",
    "ErpSetting",
    "ErpUser",
    "Invoice",
    "InvoiceLine",
    "Product",
    "default_db_url",
    "make_engine",
    "open_demo_erp",
    "open_erp",
    "seed_erp",
]
