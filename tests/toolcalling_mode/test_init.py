"""The package's public face stays small."""

from __future__ import annotations

from shared.engine import AssistantEngine
from toolcalling_mode import ToolCallingLimits


def test_default_limits_let_the_model_call_limit_fire_before_the_recursion_limit() -> None:
    limits = ToolCallingLimits()

    assert limits.model_calls == 6
    assert limits.recursion_limit >= 4 * limits.model_calls + 2


def test_the_engine_satisfies_the_assistant_engine_protocol(make_engine: object) -> None:
    engine, _ = make_engine(lambda messages, info: "Hola.")  # type: ignore[operator]

    assert isinstance(engine, AssistantEngine)
