"""The stateless AI server and what speaks to it: the app (:mod:`planner_mode.server.app`), its endpoints,
request limits and uvicorn protocol, the HTTP bodies both sides share (:mod:`planner_mode.server.wire`), and
the ERP side's client (:mod:`planner_mode.server.http_client`).

The app's names (``create_app``, ``app_from_env``, ``bind_warning``, …) load on first access, so the HTTP
client, the wire bodies and ``import planner_mode`` need no FastAPI (the ``server`` extra). Serve it with
``uvicorn --factory planner_mode.server:app_from_env``.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from planner_mode.server.app import (
        INLINE_PARSE_BYTES,
        SERVING_GC_THRESHOLD,
        BearerAuth,
        BodyReadTimeout,
        BodySizeLimit,
        RequestLog,
        app_from_env,
        bind_warning,
        create_app,
        serving_gc,
    )

__all__ = [
    "INLINE_PARSE_BYTES",
    "SERVING_GC_THRESHOLD",
    "BearerAuth",
    "BodyReadTimeout",
    "BodySizeLimit",
    "RequestLog",
    "app_from_env",
    "bind_warning",
    "create_app",
    "serving_gc",
]


def __getattr__(name: str) -> Any:
    if name in __all__:
        return getattr(importlib.import_module("planner_mode.server.app"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
