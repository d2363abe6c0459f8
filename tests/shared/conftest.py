"""Fixtures of the ``shared`` tests: the seeded demo ERP on each backend, and quick lock timeouts."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from shared.erp import storage
from shared.erp.database import Erp, open_demo_erp
from tests.postgres import BACKENDS, demo_erp_url


@pytest.fixture(scope="session", params=BACKENDS)
def erp(request: pytest.FixtureRequest) -> Iterator[Erp]:
    """The seeded demo ERP (read-only), on SQLite and on PostgreSQL: overrides the root ``erp``, so the seed's
    invariants and every operation are checked on both backends (``test_two_fresh_seeds_hold_identical_rows``:
    PostgreSQL's rows equal a fresh SQLite seed's)."""
    handle = open_demo_erp(demo_erp_url(request, request.param))
    yield handle
    handle.engine.dispose()


@pytest.fixture
def quick_busy_timeout(monkeypatch: pytest.MonkeyPatch) -> None:
    """Engines made from now on give up on a lock after 0.2 s instead of 30 s."""
    monkeypatch.setattr(storage, "BUSY_TIMEOUT_SECONDS", 0.2)
