"""The article's two-call planner architecture as a library.

The ERP owns the state; each user turn costs at most two model calls: call 1 turns the question and the
conversation context into a :class:`Plan` of catalog operations, the ERP validates and executes it, and call 2
turns the results into an :class:`Answer` (``respuesta`` + ``memoria`` + ``estado``).

- :class:`PlannerEngine` — the ERP side: ``ask(conversation_id, message, caller) -> TurnResult``
  (``aask``, ``astream``).
- :class:`PlannerAI` — the stateless AI side (``plan`` / ``answer``) around one or two chat models.
- :class:`InProcessAIClient`, :class:`HttpAIClient` — how the engine reaches the AI.
- :func:`create_app` — the AI side as a FastAPI server (the ``server`` extra:
  ``pip install 'erp-ai-harness[server]'``). It is loaded on first access, so ``import planner_mode`` imports
  no FastAPI and an engine-only install works without it.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from planner_mode.ai import PlannerAI
from planner_mode.client import AICallError, AIClient, AnswerReply, InProcessAIClient, PlanReply
from planner_mode.engine import PlannerEngine, PlannerLimits
from planner_mode.plan import Answer, MemoryItem, OperationOutcome, Plan, PlannedOperation
from planner_mode.server.http_client import AIServerUnauthorized, HttpAIClient
from shared.llm.usage import CallUsage

if TYPE_CHECKING:
    from planner_mode.server import create_app

__all__ = [
    "AICallError",
    "AIClient",
    "AIServerUnauthorized",
    "Answer",
    "AnswerReply",
    "CallUsage",
    "HttpAIClient",
    "InProcessAIClient",
    "MemoryItem",
    "OperationOutcome",
    "Plan",
    "PlanReply",
    "PlannedOperation",
    "PlannerAI",
    "PlannerEngine",
    "PlannerLimits",
    "create_app",
]


def __getattr__(name: str) -> Any:
    """Load :func:`create_app` on first access; a missing ``server`` extra is one line naming it."""
    if name == "create_app":
        from shared.extras import require

        require("fastapi", "server", "The AI server (planner_mode.create_app)")
        from planner_mode.server import create_app

        globals()["create_app"] = create_app  # later accesses skip this hook
        return create_app
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})


# A library logs; the application decides where to (no "last resort" printing of warnings to stderr).
logging.getLogger("planner_mode").addHandler(logging.NullHandler())
