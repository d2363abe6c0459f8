"""The one engine factory: each architecture's engine from the same registry, ERP, memory store and model.

:class:`ModelOptions` is the model behind an engine or an AI server (the ``--provider`` … ``--timeout``
options of ``ask``, ``chat``, ``serve`` and ``loadtest``); :func:`build_engine` builds the engine of a mode
from a model or, for the planner, from an AI client (an AI server reached over HTTP).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field

from benchmarks.stand_ins.models import build_model
from planner_mode.plan_schema import PlanSchemaStyle
from shared.engine import AssistantEngine
from shared.erp.database import Erp
from shared.errors import ConfigurationError
from shared.grounding import GroundingPolicy
from shared.llm.factory import DEFAULT_MAX_TOKENS, DEFAULT_TIMEOUT_S
from shared.operations.registry import OperationRegistry

if TYPE_CHECKING:
    from langchain_core.language_models import BaseChatModel

    from shared.memory.store import MemoryStore

BenchMode = Literal["planner", "toolcalling", "toolcalling-full"]
"""``toolcalling`` sends a windowed context; ``toolcalling-full`` sends the whole history."""

ALL_MODES: tuple[BenchMode, ...] = get_args(BenchMode)


def _check_mode(name: str) -> None:
    if name not in ALL_MODES:
        raise ConfigurationError(f"Unknown mode {name!r}. Valid modes: {', '.join(ALL_MODES)}.")


def parse_modes(text: str) -> list[BenchMode]:
    """``"planner,toolcalling"`` → ``["planner", "toolcalling"]``; unknown names raise ConfigurationError."""
    modes: list[BenchMode] = []
    for name in filter(None, (raw.strip() for raw in text.split(","))):
        _check_mode(name)
        if name not in modes:
            modes.append(name)  # type: ignore[arg-type]
    if not modes:
        raise ConfigurationError(f"No mode selected. Valid modes: {', '.join(ALL_MODES)}.")
    return modes


class ModelOptions(BaseModel):
    """The model behind an engine or an AI server: provider, model names, base URL and per-call bounds."""

    model_config = ConfigDict(frozen=True)

    provider: str = Field(default="offline", description="Model provider (offline, ollama, gemini, openai).")
    model: str | None = Field(default=None, description="Model name; the provider's default if None.")
    plan_model: str | None = Field(default=None, description="Model of call 1 (default: model).")
    answer_model: str | None = Field(default=None, description="Model of call 2 (default: model).")
    base_url: str | None = Field(default=None, description="Provider base URL (Ollama host, …).")
    latency_profile: str | None = Field(default=None, description="Offline model only: simulated latency.")
    max_tokens: int = Field(default=DEFAULT_MAX_TOKENS, ge=1, description="Output cap of each model call.")
    timeout: float = Field(default=DEFAULT_TIMEOUT_S, gt=0, description="Timeout of each model request (s).")

    def chat_model(self, name: str | None = None) -> BaseChatModel:
        """The chat model ``name`` (default: :attr:`model`) of the provider, with these bounds."""
        return build_model(
            self.provider,
            model=name or self.model,
            base_url=self.base_url,
            latency_profile=self.latency_profile,
            max_tokens=self.max_tokens,
            timeout=self.timeout,
        )

    def environment(self) -> dict[str, str | None]:
        """The options as the variables :func:`planner_mode.server.app_from_env` reads (``None``: unset)."""
        return {
            "ERP_AI_PROVIDER": self.provider,
            "ERP_AI_MODEL": self.model,
            "ERP_AI_PLAN_MODEL": self.plan_model,
            "ERP_AI_ANSWER_MODEL": self.answer_model,
            "ERP_AI_BASE_URL": self.base_url,
            "ERP_AI_MAX_TOKENS": str(self.max_tokens),
            "ERP_AI_TIMEOUT": str(self.timeout),
        }

    def serve_args(self) -> list[str]:
        """The options as ``erp-ai serve`` arguments (which has no latency profile)."""
        names = ("provider", "model", "plan_model", "answer_model", "base_url", "max_tokens", "timeout")
        values = {f"--{name.replace('_', '-')}": getattr(self, name) for name in names}
        return [
            part for option, value in values.items() if value is not None for part in (option, str(value))
        ]


def set_environment(settings: Mapping[str, str | None]) -> None:
    """Set each variable of ``settings`` in this process's environment (``None`` unsets it)."""
    for key, value in settings.items():
        if value is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = value


def build_engine(
    mode: str,
    *,
    registry: OperationRegistry,
    erp: Erp,
    store: MemoryStore,
    model: BaseChatModel | None = None,
    answer_model: BaseChatModel | None = None,
    ai: Any = None,
    structured: bool = False,
    plan_schema: PlanSchemaStyle = "union",
    tool_call_recovery: bool = True,
    grounding: GroundingPolicy = "refuse",
) -> AssistantEngine:
    """The engine for ``mode``, over the given shared pieces.

    The planner reaches its model through ``ai`` (e.g. an :class:`~planner_mode.HttpAIClient` to AI
    servers) or, without one, in process: ``model`` for call 1 and ``answer_model`` (default: ``model``) for
    call 2, with ``plan_schema`` as call 1's constraint. ``structured`` asks tool calling for a structured
    final answer (``respuesta``/``memoria``/``estado``); ``tool_call_recovery`` lets it recover tool calls
    written as text. ``grounding`` is what both modes do with an answer stating figures the ERP did not
    return (:mod:`shared.grounding`).
    """
    _check_mode(mode)
    if mode == "planner":
        from planner_mode import InProcessAIClient, PlannerAI, PlannerEngine

        if ai is None:
            assert model is not None, "the planner needs a model or an AI client"
            ai = InProcessAIClient(PlannerAI(model, answer_model, plan_schema=plan_schema))
        return PlannerEngine(registry, erp, store, ai, grounding=grounding)
    from toolcalling_mode import ToolCallingEngine

    assert model is not None, "tool calling needs a model"
    return ToolCallingEngine(
        registry,
        erp,
        store,
        model,
        policy="windowed" if mode == "toolcalling" else "full_history",
        structured=structured,
        recover_text_tool_calls=tool_call_recovery,
        grounding=grounding,
    )
