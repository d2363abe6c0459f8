"""Fixtures for the benchmark tests: a tiny scenario suite on disk and a scorer over the session ERP."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from benchmarks.scenario import Scenario, load_scenarios
from benchmarks.scoring.turn import TurnScorer
from tests.benchmarks.bench_fakes import TINY_SUITE


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
