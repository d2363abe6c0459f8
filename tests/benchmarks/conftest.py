"""Fixtures for the benchmark tests: the bench commands on a bare app, a tiny scenario suite on disk, a scorer
over the session ERP, and the demo ERP on each backend for the packaged suite's facts
(``test_default_suite.py``)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import typer

from benchmarks.scenario import Scenario, load_scenarios
from benchmarks.scoring.turn import TurnScorer
from shared.erp.database import Erp, open_demo_erp
from tests.benchmarks.bench_fakes import TINY_SUITE
from tests.postgres import BACKENDS, demo_erp_url


@pytest.fixture
def app() -> typer.Typer:
    """The ``erp-ai`` app, for its ``bench``, ``report``, ``reliability``, ``compare`` and ``loadtest``."""
    from benchmarks.cli.app import app as erp_ai

    return erp_ai


@pytest.fixture
def tiny_suite_path(tmp_path: Path) -> Path:
    path = tmp_path / "tiny.yaml"
    path.write_text(TINY_SUITE, encoding="utf-8")
    return path


@pytest.fixture
def tiny_suite(tiny_suite_path: Path) -> list[Scenario]:
    return load_scenarios([tiny_suite_path])


@pytest.fixture(scope="session")
def scorer(registry: Any, erp: Any) -> TurnScorer:
    return TurnScorer(registry, erp)


@pytest.fixture(scope="session", params=BACKENDS)
def demo_erp(request: pytest.FixtureRequest) -> Iterator[Erp]:
    """The seeded demo ERP (read-only) on SQLite and on PostgreSQL: the packaged suite's facts and expected
    calls must evaluate, to the article's figures, on both backends. The other benchmark tests keep the
    root ``erp`` (SQLite): they test the runner, the scoring and the CLI, not the database."""
    handle = open_demo_erp(demo_erp_url(request, request.param))
    yield handle
    handle.engine.dispose()


@pytest.fixture
def cli_env(erp_db_url: str, erp: object, tmp_path: Path) -> dict[str, str | None]:
    """The CLI's environment: the session's seeded ERP, a fresh memory database, no token, no log level."""
    return {
        "ERP_AI_DB_URL": erp_db_url,
        "ERP_AI_MEMORY_URL": f"sqlite:///{tmp_path / 'memory.sqlite3'}",
        "ERP_AI_SERVER_TOKEN": None,
        "ERP_AI_LOG_LEVEL": None,
    }
