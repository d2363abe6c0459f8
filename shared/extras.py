"""Optional dependencies: which pip extra provides what, and one line naming the extra when one is missing.

Extras: ``server`` (fastapi, uvicorn), ``ollama``/``gemini``/``openai`` (LangChain providers), ``bench``
(typer, rich, yaml, jinja2, matplotlib and ``server``), ``postgres`` (psycopg 3), ``all``, ``dev``.
:func:`require` is the one way code imports an optional module.
"""

from __future__ import annotations

import importlib
import importlib.util
from types import ModuleType
from typing import Final

from shared.errors import ConfigurationError

DISTRIBUTION: Final = "erp-ai-harness"
"""The name pip installs the project under."""

EXTRA_MODULES: Final[dict[str, tuple[str, ...]]] = {
    "server": ("fastapi", "uvicorn"),
    "ollama": ("langchain_ollama",),
    "gemini": ("langchain_google_genai",),
    "openai": ("langchain_openai",),
    "bench": ("typer", "rich", "yaml", "jinja2", "matplotlib"),
    "postgres": ("psycopg",),
}
"""The top-level modules each extra provides (``pyproject.toml`` lists the packages)."""


def install_hint(extra: str) -> str:
    """The pip command that installs ``extra``: ``pip install 'erp-ai-harness[server]'``."""
    return f"pip install '{DISTRIBUTION}[{extra}]'"


def require(module: str, extra: str, feature: str) -> ModuleType:
    """Import ``module`` for ``feature``, or raise one line naming the ``extra`` that provides it."""
    try:
        return importlib.import_module(module)
    except ImportError:
        raise ConfigurationError(f"{feature} needs the {extra!r} extra: {install_hint(extra)}") from None


def require_extra(extra: str, feature: str) -> None:
    """Check that every module of ``extra`` (:data:`EXTRA_MODULES`) is installed, or raise the line
    :func:`require` raises; the modules are found, not imported, so the check costs no import time."""
    for module in EXTRA_MODULES[extra]:
        try:
            found = importlib.util.find_spec(module) is not None
        except (ImportError, ValueError):  # a parent package that fails, or a module without a spec
            found = False
        if not found:
            raise ConfigurationError(f"{feature} needs the {extra!r} extra: {install_hint(extra)}")
