"""Fixtures for the model-layer tests."""

from __future__ import annotations

import pytest
from langchain_core.tools import StructuredTool

from tests.benchmarks.stand_ins.offline.offline_prompts import sales_tools


@pytest.fixture
def tools() -> list[StructuredTool]:
    """Stand-ins for the registry's sales tools (same names and parameters, canned JSON results)."""
    return sales_tools()
