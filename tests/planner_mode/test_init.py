"""The public surface of ``planner_mode``: documented, and the answer schema is the shared one."""

from __future__ import annotations

import planner_mode


def test_every_public_name_is_documented() -> None:
    assert all(getattr(planner_mode, name).__doc__ for name in planner_mode.__all__)


def test_answer_is_the_shared_call_two_schema() -> None:
    from shared.answer import Answer

    assert planner_mode.Answer is Answer


def test_default_limits() -> None:
    assert planner_mode.PlannerLimits().max_operations == 8
