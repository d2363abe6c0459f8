"""The public surface of ``planner_mode`` is small and pinned."""

from __future__ import annotations

import planner_mode


def test_public_names_are_pinned() -> None:
    assert sorted(planner_mode.__all__) == [
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
    assert all(getattr(planner_mode, name).__doc__ for name in planner_mode.__all__)


def test_answer_is_the_shared_call_two_schema() -> None:
    from shared.answer import Answer

    assert planner_mode.Answer is Answer


def test_default_limits() -> None:
    assert planner_mode.PlannerLimits().max_operations == 8
