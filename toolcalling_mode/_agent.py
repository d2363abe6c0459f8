"""The caller's compiled agent: one :func:`langchain.agents.create_agent` graph per caller, cached.

The graph is the registry's LangChain tools bound to the ERP in the caller's scope, the turn middleware (the
turn's system prompt, timed tool records, the output cap), text tool-call recovery, the model-call limit and
the structured answer's format. What changes per turn travels in the runtime context (:class:`TurnContext`).
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Any, Literal

from langchain.agents import create_agent
from langchain.agents.middleware import ModelCallLimitMiddleware
from langchain.agents.structured_output import ProviderStrategy, ToolStrategy
from langchain_core.language_models import BaseChatModel

from shared.answer import Answer
from shared.errors import ConfigurationError
from shared.security import Caller
from toolcalling_mode._middleware import TurnContext, TurnMiddleware, count_recovered
from toolcalling_mode.limits import ToolCallingLimits
from toolcalling_mode.text_tool_calls import TextToolCallRecovery

if TYPE_CHECKING:
    from shared.erp.database import Erp
    from shared.operations.registry import OperationRegistry

StructuredStrategy = Literal["auto", "provider", "tool"]

AGENT_CACHE_SIZE = 256
"""Compiled agents kept, one per recent caller (their tools are bound to the caller's scope)."""


class Agents:
    """Each caller's compiled agent: only their permitted tools, each running in their data scope.

    Compiled on the caller's first turn (none up front: there is no default caller) and kept for the most
    recent callers (:data:`AGENT_CACHE_SIZE`), since compiling costs a few milliseconds; the cache is shared
    by threads (two first turns of one caller at once may both compile). A compilation error raises out of
    that first turn.
    """

    def __init__(
        self,
        registry: OperationRegistry,
        erp: Erp,
        model: BaseChatModel,
        *,
        name: str,
        limits: ToolCallingLimits,
        max_tokens: int | None,
        structured_strategy: StructuredStrategy | None,
        answer_tools: frozenset[str],
        recover_text_tool_calls: bool,
    ) -> None:
        """``structured_strategy``: ``None`` for a prose answer; ``answer_tools``: the structured answer's
        own tool names (never recovered from text)."""
        _check_tool_calling(model)
        self._registry = registry
        self._erp = erp
        self._model = model
        self._name = name
        self._limits = limits
        self._max_tokens = max_tokens
        self._response_format = _response_format(structured_strategy)
        self._answer_tools = answer_tools
        self._recover = recover_text_tool_calls
        self._compiled = functools.lru_cache(maxsize=AGENT_CACHE_SIZE)(self._compile)

    def for_caller(self, caller: Caller) -> Any:
        """The compiled agent of ``caller`` (see the class)."""
        return self._compiled(caller.user_id, caller.roles)  # what the tools depend on (not the name)

    def _compile(self, user_id: str, roles: frozenset[str]) -> Any:
        caller = Caller(user_id=user_id, roles=roles)
        middleware: list[Any] = [
            TurnMiddleware(self._registry, self._max_tokens),
            ModelCallLimitMiddleware(run_limit=self._limits.model_calls, exit_behavior="end"),
        ]
        if self._recover:
            recovery = TextToolCallRecovery(excluded=self._answer_tools, on_recovered=count_recovered)
            middleware.insert(1, recovery)  # inside TurnMiddleware: the output cap is checked on the reply
        return create_agent(
            self._model,
            tools=self._registry.langchain_tools(self._erp, caller=caller),
            middleware=middleware,
            response_format=self._response_format,
            context_schema=TurnContext,
            name=self._name,
        )


def answer_tool_names(structured: bool) -> frozenset[str]:
    """The tool names of the structured answer under ``ToolStrategy`` (none for a prose answer)."""
    return frozenset(spec.name for spec in ToolStrategy(Answer).schema_specs) if structured else frozenset()


def _check_tool_calling(model: BaseChatModel) -> None:
    """Refuse a chat model that cannot bind tools, before any turn: it would otherwise fail every turn, as
    an unexplained provider failure (``BaseChatModel.bind_tools`` raises a bare ``NotImplementedError``).

    Cheap, so checked at construction. Anything that is not a ``BaseChatModel`` (a configurable model, a
    binding) is left to its first turn.
    """
    if isinstance(model, BaseChatModel) and type(model).bind_tools is BaseChatModel.bind_tools:
        raise ConfigurationError(
            f"{type(model).__name__} does not support tool calling (it does not implement bind_tools). "
            "Tool-calling mode needs a chat model that does (the offline model, ChatOpenAI, ChatOllama, "
            "ChatGoogleGenerativeAI); planner mode needs none."
        )


def _response_format(strategy: StructuredStrategy | None) -> Any:
    if strategy == "provider":
        return ProviderStrategy(Answer)
    if strategy == "tool":
        return ToolStrategy(Answer)
    # AutoStrategy: ProviderStrategy if the model's profile supports it, else ToolStrategy
    return Answer if strategy == "auto" else None
