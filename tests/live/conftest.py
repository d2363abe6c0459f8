"""Live tests against a real OpenAI-compatible model server (llama.cpp's ``llama-server``, vLLM, Ollama's
``/v1``): opt in with ``ERP_AI_LIVE_URL`` (its base URL, ending in ``/v1``) and ``ERP_AI_LIVE_MODEL``.

Without both they are skipped with that reason (CI skips them). They check what only a real server shows:
usage in streams, its prefix cache, tool calls written as text, plans under its grammar, its keep-alive.
Every test is marked ``live`` and has a long timeout (a 2-core CPU model needs minutes for a cold prompt).
"""

from __future__ import annotations

import os
from typing import Any

import pytest
from langchain_core.language_models import BaseChatModel

LIVE_URL = os.environ.get("ERP_AI_LIVE_URL")
LIVE_MODEL = os.environ.get("ERP_AI_LIVE_MODEL")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if "tests/live/" not in item.nodeid.replace("\\", "/"):
            continue
        item.add_marker(pytest.mark.live)
        item.add_marker(pytest.mark.timeout(1800))
        if not (LIVE_URL and LIVE_MODEL):
            item.add_marker(
                pytest.mark.skip(
                    reason="live test: set ERP_AI_LIVE_URL and ERP_AI_LIVE_MODEL to a real server"
                )
            )


@pytest.fixture(scope="session")
def live_model() -> BaseChatModel:
    """The real server's model, built as the benchmark builds it."""
    from shared.llm.factory import build_chat_model

    assert LIVE_URL and LIVE_MODEL
    return build_chat_model(
        "openai", model=LIVE_MODEL, base_url=LIVE_URL, api_key="live", max_tokens=512, timeout=900
    )


@pytest.fixture
def live_engines(erp: Any, registry: Any, memory_store: Any, live_model: BaseChatModel) -> dict[str, Any]:
    """Both modes over the real model, the demo ERP and a fresh memory store."""
    from planner_mode import InProcessAIClient, PlannerAI, PlannerEngine
    from toolcalling_mode import ToolCallingEngine

    return {
        "planner": PlannerEngine(registry, erp, memory_store, InProcessAIClient(PlannerAI(live_model))),
        "toolcalling": ToolCallingEngine(registry, erp, memory_store, live_model),
    }
