"""Fixtures of the report tests."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks.results import ResultsWriter, RunMeta
from tests.benchmarks.report.sample_results import MODES, rows


@pytest.fixture
def results_path(tmp_path: Path) -> Path:
    writer = ResultsWriter(tmp_path / "results.jsonl")
    writer.write(RunMeta(provider="offline", modes=MODES, scenarios=1, turns=12))
    for record in rows():
        writer.write(record)
    return writer.path
