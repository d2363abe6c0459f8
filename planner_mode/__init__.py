"""The article's two-call planner architecture as a library.

The ERP owns the state; each user turn costs at most two model calls: call 1 turns the question and the
conversation context into a :class:`Plan` of catalog operations, the ERP validates and executes it, and call 2
turns the results into an :class:`Answer` (``respuesta`` + ``memoria`` + ``estado``).

- :class:`PlannerEngine` — the ERP side: ``ask(conversation_id, message) -> TurnResult``.
- :class:`PlannerAI` — the stateless AI side (``analyze`` / ``respond``) around one or two chat models.
- :class:`InProcessAIClient`, :class:`HttpAIClient` — how the engine reaches the AI.
- :func:`create_app` — the AI side as a FastAPI server.
"""

from planner_mode.ai import PlannerAI
from planner_mode.client import AICallError, AIClient, HttpAIClient, InProcessAIClient
from planner_mode.engine import PlannerEngine, PlannerLimits
from planner_mode.plan import Answer, MemoryItem, OperationOutcome, Plan, PlannedOperation
from planner_mode.server import create_app
from planner_mode.wire import CallUsage

__all__ = [
    "AICallError",
    "AIClient",
    "Answer",
    "CallUsage",
    "HttpAIClient",
    "InProcessAIClient",
    "MemoryItem",
    "OperationOutcome",
    "Plan",
    "PlannedOperation",
    "PlannerAI",
    "PlannerEngine",
    "PlannerLimits",
    "create_app",
]
