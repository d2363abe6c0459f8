"""Optional dependencies: which pip extra provides what, and one line naming the extra when one is missing.

``pip install erp-ai-harness`` is the engine only (``planner_mode``, ``toolcalling_mode``, the shared core)
with LangChain, LangGraph, pydantic, SQLAlchemy and httpx. Everything else is an extra, imported only where
it is used, so an embedder never pays for (or breaks on) what it does not use:

- ``server``: ``fastapi``, ``uvicorn``; for :func:`planner_mode.create_app` and ``erp-ai serve``.
- ``ollama``, ``gemini``, ``openai``: ``langchain_ollama``, ``langchain_google_genai``, ``langchain_openai``;
  for :func:`shared.llm.factory.build_chat_model` with that provider.
- ``bench``: ``typer``, ``rich``, ``yaml`` and the ``server`` extra; for the ``erp-ai`` command (its
  ``--provider`` still needs that provider's extra, and ``erp-ai reliability`` the ``ollama`` one).
- ``postgres``: ``psycopg`` (3); for ``postgresql+psycopg://`` database URLs (SQLite needs nothing).
- ``all``: every extra above; ``dev``: the test and lint tools.

:func:`require` is the one way code imports an optional module: a missing one raises
:class:`~shared.errors.ConfigurationError` whose message is one line naming the extra to install.
"""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import Final

from shared.errors import ConfigurationError

__all__ = ["DISTRIBUTION", "EXTRA_MODULES", "install_hint", "require", "require_extra"]

DISTRIBUTION: Final = "erp-ai-harness"
"""The name pip installs the project under."""

EXTRA_MODULES: Final[dict[str, tuple[str, ...]]] = {
    "server": ("fastapi", "uvicorn"),
    "ollama": ("langchain_ollama",),
    "gemini": ("langchain_google_genai",),
    "openai": ("langchain_openai",),
    "bench": ("typer", "rich", "yaml"),
    "postgres": ("psycopg",),
}
"""The top-level modules each extra provides (``pyproject.toml`` lists the packages)."""


def install_hint(extra: str) -> str:
    """The pip command that installs ``extra``: ``pip install 'erp-ai-harness[server]'``."""
    return f"pip install '{DISTRIBUTION}[{extra}]'"


def require(module: str, extra: str, feature: str) -> ModuleType:
    """Import ``module`` for ``feature``, or raise one line naming the ``extra`` that provides it.

    Args:
        module: The module to import, e.g. ``"fastapi"`` or ``"langchain_ollama"``.
        extra: The pip extra that installs it, e.g. ``"server"``.
        feature: What needs it, as the subject of a sentence, e.g. ``"The AI server (create_app)"``.

    Raises:
        ConfigurationError: ``"<feature> needs the '<extra>' extra: pip install 'erp-ai-harness[<extra>]'"``
            when ``module`` (or a module it imports) cannot be imported.
    """
    try:
        return importlib.import_module(module)
    except ImportError:
        raise ConfigurationError(f"{feature} needs the {extra!r} extra: {install_hint(extra)}") from None


def require_extra(extra: str, feature: str) -> None:
    """Check that every module of ``extra`` (:data:`EXTRA_MODULES`) imports, like :func:`require` does."""
    for module in EXTRA_MODULES[extra]:
        require(module, extra, feature)
