"""Building the engine of each architecture from the same registry, ERP, memory store and model."""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal, get_args

from shared.engine import AssistantEngine
from shared.erp.database import Erp
from shared.errors import ConfigurationError
from shared.operations.registry import OperationRegistry

if TYPE_CHECKING:
    from langchain_core.language_models import BaseChatModel

    from shared.memory.store import MemoryStore

BenchMode = Literal["planner", "toolcalling", "toolcalling-full"]
"""``toolcalling`` sends a windowed context; ``toolcalling-full`` sends the whole history."""

ALL_MODES: tuple[BenchMode, ...] = get_args(BenchMode)


def parse_modes(text: str) -> list[BenchMode]:
    """``"planner,toolcalling"`` → ``["planner", "toolcalling"]``; unknown names raise ConfigurationError."""
    modes: list[BenchMode] = []
    for raw in text.split(","):
        name = raw.strip()
        if not name:
            continue
        if name not in ALL_MODES:
            raise ConfigurationError(f"Unknown mode {name!r}. Valid modes: {', '.join(ALL_MODES)}.")
        if name not in modes:
            modes.append(name)
    if not modes:
        raise ConfigurationError(f"No mode selected. Valid modes: {', '.join(ALL_MODES)}.")
    return modes


def produces_state(mode: str, *, structured: bool = False) -> bool:
    """Whether ``mode`` produces conversation state (so a scenario's ``state`` expectations are checked).

    Every mode does, structured or not: each records the state the ERP derives from the turn's executed
    operations (``anio``, ``cliente_actual``, ``producto_actual``, ``ultimas_operaciones``:
    :func:`shared.state.turn_state`), merged with the model's ``estado`` when it writes one (the planner's
    call 2, tool calling's structured answer). The scenarios' ``state`` expectations name those derived
    keys, so they hold in every mode. The arguments stay so that callers need not change if a mode without
    state is ever added.
    """
    return True


def build_engine(
    mode: str,
    *,
    registry: OperationRegistry,
    erp: Erp,
    store: MemoryStore,
    model: BaseChatModel,
    structured: bool = False,
    tool_call_recovery: bool = True,
) -> AssistantEngine:
    """The engine for ``mode``, over the given shared pieces.

    ``structured`` asks tool calling for a structured final answer (``respuesta``/``memoria``/``estado``);
    the planner always produces one. ``tool_call_recovery`` lets tool calling recover tool calls written as
    text (``ToolCallingEngine(recover_text_tool_calls=...)``).
    """
    if mode == "planner":
        from planner_mode import InProcessAIClient, PlannerAI, PlannerEngine

        return PlannerEngine(registry, erp, store, InProcessAIClient(PlannerAI(model)))
    if mode in ("toolcalling", "toolcalling-full"):
        from toolcalling_mode import ToolCallingEngine

        policy: Literal["windowed", "full_history"] = "windowed" if mode == "toolcalling" else "full_history"
        return ToolCallingEngine(
            registry,
            erp,
            store,
            model,
            policy=policy,
            structured=structured,
            recover_text_tool_calls=tool_call_recovery,
        )
    raise ConfigurationError(f"Unknown mode {mode!r}. Valid modes: {', '.join(ALL_MODES)}.")
