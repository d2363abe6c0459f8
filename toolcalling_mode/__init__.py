"""The same sales assistant as a native LangChain tool-calling agent, over the same operations and memory.

``ToolCallingEngine(registry, erp, store, model, policy="windowed"|"full_history", structured=False)`` returns
the same :class:`shared.turn.TurnResult` as planner mode, so the benchmark compares like with like.
"""

import logging

from toolcalling_mode.engine import ContextPolicy, ToolCallingEngine
from toolcalling_mode.limits import ToolCallingLimits

__all__ = ["ContextPolicy", "ToolCallingEngine", "ToolCallingLimits"]

# A library logs; the application decides where to (no "last resort" printing of warnings to stderr).
logging.getLogger("toolcalling_mode").addHandler(logging.NullHandler())
