"""ERP tests taking ``erp`` or ``db_url`` run on SQLite and on a real PostgreSQL (:mod:`tests.postgres`)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from shared.erp.database import Erp, open_demo_erp
from tests.postgres import (
    BACKENDS,
    db_url,
    demo_erp_url,
    postgres_demo_erp_url,
    postgres_server,
    postgres_url,
)

__all__ = ["db_url", "erp", "postgres_demo_erp_url", "postgres_server", "postgres_url"]


@pytest.fixture(scope="session", params=BACKENDS)
def erp(request: pytest.FixtureRequest) -> Iterator[Erp]:
    """The seeded demo ERP (read-only), on SQLite and on PostgreSQL: overrides the root ``erp``, so the seed's
    invariants (and ``test_two_fresh_seeds_hold_identical_rows``: PostgreSQL's rows equal a fresh SQLite
    seed's) are checked on both backends."""
    handle = open_demo_erp(demo_erp_url(request, request.param))
    yield handle
    handle.engine.dispose()
