"""One parent LangChain run per turn, so tracing handlers see a turn's model calls under it.

Both engines accept a LangChain :class:`~langchain_core.runnables.RunnableConfig` per turn (``callbacks``,
``tags``, ``metadata``, ``run_name``). :func:`turn_run` / :func:`aturn_run` open one chain run named after the
turn (``run_name``, default ``"<mode> turn"``) with those handlers, tags and metadata; every model call of the
turn is made with :meth:`TurnRun.child_config`, so LangSmith, OpenTelemetry or any ``BaseCallbackHandler``
sees call 1 and call 2 (or the agent's calls) as children of that run. The run ends with the turn's answer and
failure kind as outputs; it ends in error only when the engine raises (``ConversationAccessDenied``).

Without a config the run still exists (handlers configured globally, e.g. ``LANGSMITH_TRACING``, see it) and
costs a few microseconds.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator, Sequence
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass
from typing import Any

from langchain_core.callbacks import (
    AsyncCallbackManager,
    AsyncCallbackManagerForChainRun,
    BaseCallbackHandler,
    CallbackManager,
    CallbackManagerForChainRun,
)
from langchain_core.runnables import RunnableConfig

__all__ = ["TurnRun", "aturn_run", "turn_run"]


@dataclass
class TurnRun:
    """The turn's parent run; :meth:`child_config` is the config of each model call inside it."""

    manager: CallbackManagerForChainRun | AsyncCallbackManagerForChainRun
    outputs: dict[str, Any]
    """What the run reports when it ends; engines set ``answer`` and ``failure``."""

    def child_config(self, *handlers: BaseCallbackHandler, **extra: Any) -> RunnableConfig:
        """A config whose callbacks are the turn's children plus ``handlers`` (e.g. a usage tracker)."""
        child = self.manager.get_child()
        for handler in handlers:
            child.add_handler(handler, inherit=True)
        config: RunnableConfig = {"callbacks": child}
        config.update(extra)  # type: ignore[typeddict-item]
        return config


def _configure_args(
    config: RunnableConfig | None, mode: str, inputs: dict[str, Any]
) -> tuple[dict[str, Any], str]:
    config = config or {}
    callbacks = config.get("callbacks")
    if isinstance(callbacks, Sequence) and not isinstance(callbacks, list):
        callbacks = list(callbacks)
    metadata = {"erp_ai_mode": mode, **dict(config.get("metadata") or {})}
    return (
        {
            "inheritable_callbacks": callbacks,
            "inheritable_tags": list(config.get("tags") or []),
            "inheritable_metadata": metadata,
        },
        config.get("run_name") or f"{mode} turn",
    )


@contextmanager
def turn_run(config: RunnableConfig | None, *, mode: str, inputs: dict[str, Any]) -> Iterator[TurnRun]:
    """Open the turn's parent run (synchronous engines)."""
    kwargs, name = _configure_args(config, mode, inputs)
    manager = CallbackManager.configure(**kwargs)
    run = TurnRun(manager.on_chain_start(None, inputs, name=name, run_type="chain"), outputs={})
    try:
        yield run
    except BaseException as exc:
        run.manager.on_chain_error(exc)
        raise
    run.manager.on_chain_end(run.outputs)


@asynccontextmanager
async def aturn_run(
    config: RunnableConfig | None, *, mode: str, inputs: dict[str, Any]
) -> AsyncIterator[TurnRun]:
    """Open the turn's parent run (asynchronous engines)."""
    kwargs, name = _configure_args(config, mode, inputs)
    manager = AsyncCallbackManager.configure(**kwargs)
    chain = await manager.on_chain_start(None, inputs, name=name, run_type="chain")
    run = TurnRun(chain, outputs={})
    try:
        yield run
    except BaseException as exc:
        await chain.on_chain_error(exc)
        raise
    await chain.on_chain_end(run.outputs)
