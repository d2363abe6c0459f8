"""The public face of ``shared.erp``."""

import shared.erp


def test_public_names_are_pinned() -> None:
    assert sorted(shared.erp.__all__) == [
        "Customer",
        "DEMO_TODAY",
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
    assert all(hasattr(shared.erp, name) for name in shared.erp.__all__)
