"""One parent LangChain run per turn, so tracing handlers see a turn's model calls under it.

The run ends with the turn's answer and failure kind as outputs; without a config it still exists, for
globally configured handlers.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

from langchain_core.callbacks import (
    AsyncCallbackManager,
    AsyncCallbackManagerForChainRun,
    BaseCallbackHandler,
)
from langchain_core.runnables import RunnableConfig


@dataclass
class TurnRun:
    """The turn's parent run; :meth:`child_config` is the config of each model call inside it."""

    manager: AsyncCallbackManagerForChainRun
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


@asynccontextmanager
async def aturn_run(
    config: RunnableConfig | None, *, mode: str, inputs: dict[str, Any]
) -> AsyncIterator[TurnRun]:
    """Open the turn's parent run."""
    config = config or {}
    callbacks = config.get("callbacks")
    if isinstance(callbacks, Sequence) and not isinstance(callbacks, list):
        callbacks = list(callbacks)
    manager = AsyncCallbackManager.configure(
        inheritable_callbacks=callbacks,
        inheritable_tags=list(config.get("tags") or []),
        inheritable_metadata={"erp_ai_mode": mode, **dict(config.get("metadata") or {})},
    )
    name = config.get("run_name") or f"{mode} turn"
    chain = await manager.on_chain_start(None, inputs, name=name, run_type="chain")
    run = TurnRun(chain, outputs={})
    try:
        yield run
    except BaseException as exc:
        await chain.on_chain_error(exc)
        raise
    await chain.on_chain_end(run.outputs)
