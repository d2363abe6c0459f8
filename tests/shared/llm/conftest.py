"""Fixtures for the model-layer tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from langchain_core.language_models import BaseChatModel
from langchain_core.tools import StructuredTool

from benchmarks.stand_ins.emulators import create_emulator
from tests.benchmarks.stand_ins.offline.offline_prompts import sales_tools
from tests.shared.llm.provider_fakes import network_model


@pytest.fixture
def tools() -> list[StructuredTool]:
    """Stand-ins for the registry's sales tools (same names and parameters, canned JSON results)."""
    return sales_tools()


@pytest.fixture(scope="module", params=["ollama", "gemini", "openai"])
def provider_model(request: pytest.FixtureRequest) -> Iterator[BaseChatModel]:
    """Each provider's real client, against the benchmark's emulator of that provider."""
    with create_emulator(request.param) as server:
        yield network_model(request.param, server.base_url)
