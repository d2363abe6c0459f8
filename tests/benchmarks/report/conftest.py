"""Fixtures of the report tests."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks.results import RunMeta
from tests.benchmarks.report.sample_results import MODES, rows, write_results


@pytest.fixture
def results_path(tmp_path: Path) -> Path:
    return write_results(
        tmp_path / "results.jsonl", RunMeta(provider="offline", modes=MODES, scenarios=1, turns=12), rows()
    )
